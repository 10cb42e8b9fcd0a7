"""A small git repository with a history, built for the tests of memories that know the code (and bench/).

`build(root)` makes four commits (times fixed: COMMIT_TIMES) and one uncommitted change:
1. config/app.yaml (session_ttl 90, pool_size 20, log_level info, request_timeout 30), lib/render.py
   (render_page, TranscriptRenderer.render), lib/tokens.py (ReviewTokenStore, TTL_SECONDS 90),
   lib/legacy_export.py (export_csv), lib/money.py (format_money), docs/notes.md;
2. session_ttl 90 -> 120;
3. render_page renamed render_view; format_money moved to lib/format.py;
4. lib/legacy_export.py deleted; docs/notes.md renamed docs/guide.md;
then, uncommitted: log_level info -> debug, request_timeout 30 -> "30s" (the same value written another way).

MEMORIES are what sessions at commit 1 learned; STALE names those the code no longer bears out at the end, with the
reason the check must give; every other memory is current.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

COMMIT_TIMES = [1_700_000_000, 1_700_086_400, 1_700_172_800, 1_700_259_200]   # one a day
EARLY = COMMIT_TIMES[0] + 3600          # when the memories were captured: after commit 1, before commit 2

FILES_1 = {
    "config/app.yaml": "# the app's settings\nsession_ttl: 90\npool_size: 20\nlog_level: info\nrequest_timeout: 30\n",
    "lib/render.py": ("def render_page(request, session_cwd):\n    return escape(request.body)\n\n\n"
                      "class TranscriptRenderer:\n    def render(self, session_cwd):\n        return session_cwd\n"),
    "lib/tokens.py": "class ReviewTokenStore:\n    TTL_SECONDS = 90\n\n    def put(self, token):\n        pass\n",
    "lib/legacy_export.py": "def export_csv(rows):\n    return '\\ufeff' + ','.join(rows)\n",
    "lib/money.py": "def format_money(amount):\n    return round(amount, 2)\n",
    "docs/notes.md": "# Notes\n\nHow the app is deployed.\n",
}

MEMORIES = {
    "ttl": ("config", "`session_ttl` is 90 in config/app.yaml, so an idle session lasts a minute and a half."),
    "pool": ("config", "The pool_size setting is 20 connections per worker."),
    "render": ("learnings", "render_page() in lib/render.py takes session_cwd and escapes the request body."),
    "export": ("learnings", "lib/legacy_export.py's export_csv writes UTF-8 with a byte order mark."),
    "tokens": ("patterns", "ReviewTokenStore keeps review tokens in memory; TTL_SECONDS is 90."),
    "renderer": ("learnings", "`TranscriptRenderer.render` takes the session's cwd as `session_cwd`."),
    "docs": ("context", "How the app is deployed is written down in docs/notes.md."),
    "pgbouncer": ("decisions", "We decided to use PgBouncer in transaction mode for connection pooling."),
    "log": ("config", "`log_level` is info in config/app.yaml; debug logs are too noisy for production."),
    "money": ("patterns", "format_money() rounds amounts to two decimals before they are shown."),
    "timeout": ("config", "`request_timeout` is 30 seconds in config/app.yaml."),
}

STALE = {
    "ttl": "`session_ttl` is 120 in config/app.yaml, the memory says 90",
    "render": "`render_page` no longer appears in lib/render.py",
    "export": "lib/legacy_export.py was deleted",
    "docs": "docs/notes.md was renamed to docs/guide.md",
    "log": "`log_level` is debug in config/app.yaml, the memory says info",
}


def git(root: Path, *args: str, when: int | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_NOSYSTEM="1", HOME=str(root))
    if when is not None:
        env.update(GIT_AUTHOR_DATE=f"@{when} +0000", GIT_COMMITTER_DATE=f"@{when} +0000")
    return subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True,
                          text=True).stdout


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def init(root: Path) -> None:
    """Commit 1 only."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    write(root, FILES_1)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one", when=COMMIT_TIMES[0])


def advance(root: Path) -> None:
    """Commits 2 to 4 and the uncommitted change."""
    app = root / "config/app.yaml"
    app.write_text(app.read_text().replace("session_ttl: 90", "session_ttl: 120"))
    git(root, "commit", "-q", "-am", "two", when=COMMIT_TIMES[1])
    render = root / "lib/render.py"
    render.write_text(render.read_text().replace("render_page", "render_view"))
    (root / "lib/money.py").unlink()
    write(root, {"lib/format.py": FILES_1["lib/money.py"]})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "three", when=COMMIT_TIMES[2])
    git(root, "rm", "-q", "lib/legacy_export.py")
    git(root, "mv", "docs/notes.md", "docs/guide.md")
    git(root, "commit", "-q", "-m", "four", when=COMMIT_TIMES[3])
    app.write_text(app.read_text().replace("log_level: info", "log_level: debug")
                   .replace("request_timeout: 30", 'request_timeout: "30s"'))


def build(root: Path) -> None:
    init(root)
    advance(root)
