"""`import-history`: past sessions through the hooks' capture, each into its project's domain (also for a folder
that no longer exists), resumable with the hooks' own offsets, bad files skipped with a reason."""
from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from subcog_store.capture.history import Importer, projects_dir, sniff, walk
from subcog_store.scope import domain_for, domain_for_recorded
from subcog_store.store import Store
from helpers import clean_environ, cli_command

ROOT = Path(__file__).resolve().parents[1]
FACTS = ["We decided to use PgBouncer in transaction mode for Postgres connection pooling because the app opens "
         "a new connection per request.",
         "Learned that the ORM keeps a session open for the whole request even when the handler only reads, which "
         "holds a connection idle in transaction.",
         "We decided that database migrations run in a separate deploy step with Alembic and never at application "
         "start, because two pods raced on the same migration."]
LATER = ("We decided to set the statement timeout of the checkout database user to 2 seconds, so a slow query "
         "fails fast instead of holding a pooled connection.")


def record(kind: str, text: str, cwd: str | None, session: str) -> dict:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    r = {"parentUuid": None, "isSidechain": False, "userType": "external", "sessionId": session, "type": kind,
         "message": {"role": kind, "content": content}, "uuid": str(uuid.uuid4()),
         "timestamp": "2026-11-20T09:00:00Z"}
    if cwd is not None:
        r["cwd"] = cwd
    return r


def transcript(path: Path, cwd: str | None, texts: list[str], session: str | None = None) -> str:
    """A transcript of `texts` said by the assistant, each after a user prompt; returns its session id."""
    session = session or (path.stem if len(path.stem) == 36 else str(uuid.uuid4()))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        for text in texts:
            f.write(json.dumps(record("user", "What did we settle?", cwd, session)) + "\n")
            f.write(json.dumps(record("assistant", text, cwd, session)) + "\n")
    return session


@pytest.fixture(autouse=True)
def text_tier(monkeypatch) -> None:
    """The text tier stands in for the model (these tests are about files, offsets and domains)."""
    monkeypatch.setenv("SUBCOG_DEDUP_SEMANTIC_ENABLED", "false")
    monkeypatch.setenv("SUBCOG_WORKER_ENABLED", "false")
    monkeypatch.delenv("SUBCOG_HOOK_DOMAIN", raising=False)


def memories(db: Path) -> list[tuple[str, str, str]]:
    with Store(db, environ={}) as store:
        return sorted(store.con.execute("select domain, source, content from memories where status = 'active'"))


def test_each_session_lands_in_its_projects_domain_and_a_second_run_reads_nothing(tmp_path: Path) -> None:
    live = tmp_path / "work" / "shop"
    (live / ".git").mkdir(parents=True)
    (live / "src").mkdir()
    gone = tmp_path / "work" / "old-app"
    projects = tmp_path / "projects"
    one = transcript(projects / "-work-shop" / f"{uuid.uuid4()}.jsonl", str(live / "src"), FACTS[:2])
    transcript(projects / "-work-old-app" / f"{uuid.uuid4()}.jsonl", str(gone), FACTS[2:])
    db = tmp_path / "m.db"

    dry = Importer(db, projects, dry_run=True).run()
    assert {p.domain: (p.sessions, p.captured) for p in dry.projects.values()} == {
        domain_for(live, {}): (1, 2), domain_for_recorded(str(gone), {}): (1, 1)}
    assert not db.exists()

    report = Importer(db, projects).run()
    got = memories(db)
    assert [(d, s) for d, s, _ in got] == sorted([(domain_for(live, {}), "import-history")] * 2 +
                                                  [(domain_for_recorded(str(gone), {}), "import-history")])
    assert {c for _, _, c in got} == set(FACTS)
    assert report.projects[domain_for_recorded(str(gone), {})].folder_exists is False
    assert domain_for_recorded(str(gone), {}).startswith("old-app-")

    again = Importer(db, projects).run()
    assert again.sessions == 0 and again.up_to_date == 2 and memories(db) == got
    with Store(db, environ={}) as store:
        runs = store.con.execute("select session_id, trigger, captured from hook_runs").fetchall()
    assert sorted((t, n) for _, t, n in runs) == [("import-history", 1), ("import-history", 2)]
    assert (one, "import-history", 2) in runs


def test_what_a_session_added_since_is_read_and_nothing_else(tmp_path: Path) -> None:
    """Appended records (the session was resumed) are captured on the next run; the rest is not read again."""
    work = tmp_path / "shop"
    work.mkdir()
    path = tmp_path / "projects" / "p" / f"{uuid.uuid4()}.jsonl"
    session = transcript(path, str(work), FACTS)
    db = tmp_path / "m.db"
    Importer(db, path.parent).run()
    transcript(path, str(work), [LATER], session)
    report = Importer(db, path.parent).run()
    assert report.sessions == 1 and report.projects[domain_for(work, {})].captured == 1
    with Store(db, environ={}) as store:
        last = store.con.execute("select report from hook_runs order by id desc limit 1").fetchone()[0]
    assert json.loads(last)["records"] == 2    # the prompt and the answer appended, not the file again


def test_a_session_the_hooks_captured_is_continued_not_read_again(tmp_path: Path) -> None:
    """The import shares the hooks' offsets: after a pre-compact hook, it reads only what followed."""
    work = tmp_path / "shop"
    work.mkdir()
    path = tmp_path / "projects" / "p" / f"{uuid.uuid4()}.jsonl"
    session = transcript(path, str(work), FACTS[:2])
    db = tmp_path / "m.db"
    env = clean_environ(answer_when_done=False)
    env.update(SUBCOG_DB=str(db), SUBCOG_WORKER_ENABLED="false", SUBCOG_DEDUP_SEMANTIC_ENABLED="false",
               SUBCOG_HOOK_LOG=str(tmp_path / "hook.log"))
    payload = {"session_id": session, "transcript_path": str(path.absolute()), "cwd": str(work),
               "hook_event_name": "PreCompact", "trigger": "manual"}
    subprocess.run([*cli_command(), "hook", "pre-compact"], input=json.dumps(payload), text=True, env=env,
                   check=True, capture_output=True, timeout=120)
    transcript(path, str(work), [LATER], session)
    report = Importer(db, path.parent).run()
    project = report.projects[domain_for(work, {})]
    assert (project.captured, project.skipped) == (1, 0)
    assert sorted(s for _, s, _ in memories(db)) == ["import-history", "pre-compact-hook", "pre-compact-hook"]


def test_bad_files_are_skipped_with_a_reason_and_nothing_half_written(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    work = tmp_path / "shop"
    work.mkdir()
    good = projects / "p" / f"{uuid.uuid4()}.jsonl"
    transcript(good, str(work), FACTS[:1])
    (projects / "p" / "binary.jsonl").write_bytes(os.urandom(4000) + b"\0")
    (projects / "p" / "foreign.jsonl").write_text('{"level": "info", "msg": "hello"}\n[1, 2]\n')
    (projects / "p" / "empty.jsonl").write_text("")
    (projects / "p" / "nocwd.jsonl").write_text(json.dumps(record("assistant", FACTS[1], None, "s")) + "\n")
    (projects / "p" / "text.jsonl").write_text("just some words\nand more\n")
    os.mkfifo(projects / "p" / "fifo.jsonl")
    (projects / "p" / "self.jsonl").symlink_to(projects / "p" / "self.jsonl")    # a symlink loop
    (projects / "p" / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (projects / "p" / "loop").symlink_to(projects)                              # a folder loop: not followed
    (projects / "p" / "notes.md").write_text("# notes\n")
    sub = projects / "p" / "session" / "subagents"
    transcript(sub / "agent-1.jsonl", str(work), FACTS[2:])
    torn = projects / "q" / f"{uuid.uuid4()}.jsonl"
    session = transcript(torn, str(work), [FACTS[2]])
    with open(torn, "a") as f:
        f.write(json.dumps(record("assistant", LATER, str(work), session))[:40])   # still being written

    db = tmp_path / "m.db"
    report = Importer(db, projects).run()
    assert dict(report.skipped) == {
        "binary (not a JSON Lines transcript)": 1, "not a Claude Code transcript": 1, "empty": 1,
        "no working directory recorded": 1, "no JSON record (not a JSON Lines transcript)": 1,
        "not a regular file": 1, "cannot read: Too many levels of symbolic links": 1,
        "cannot read: No such file or directory": 1}
    assert report.subagent_files == 1 and report.other_files == 1 and report.sessions == 2
    assert {c for _, _, c in memories(db)} == {FACTS[0], FACTS[2]}       # the torn line is left for later
    with open(torn, "a") as f:                                             # ... and read once complete
        f.write(json.dumps(record("assistant", LATER, str(work), session))[40:] + "\n")
    Importer(db, projects).run()
    assert {c for _, _, c in memories(db)} == {FACTS[0], FACTS[2], LATER}


def test_the_domain_of_a_folder_that_is_gone_is_the_one_the_hooks_used(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    before = {p: domain_for(p, {}) for p in (repo / "sub", plain)}
    (repo / "sub").rmdir()
    plain.rmdir()
    assert domain_for_recorded(str(repo / "sub"), {}) == before[repo / "sub"] == domain_for(repo, {})
    assert domain_for_recorded(str(plain), {}) == before[plain]
    assert domain_for_recorded("D:\\oh-my-posh\\src", {}).startswith("src-")
    assert domain_for_recorded("C:\\Users\\me", {}) != domain_for_recorded("C:\\Users\\you", {})
    assert domain_for_recorded(str(plain), {"SUBCOG_HOOK_DOMAIN": "mine"}) == "mine"
    assert domain_for_recorded(None, {}) == "project"


def test_the_default_folder_follows_claude_config_dir(tmp_path: Path) -> None:
    assert projects_dir({"CLAUDE_CONFIG_DIR": str(tmp_path)}) == tmp_path / "projects"
    assert projects_dir({"HOME": str(tmp_path)}) == tmp_path / ".claude" / "projects"
    work = tmp_path / "shop"
    work.mkdir()
    transcript(tmp_path / "cfg" / "projects" / "p" / f"{uuid.uuid4()}.jsonl", str(work), FACTS[:1])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBCOG_", "CLAUDE_"))}
    env.update(CLAUDE_CONFIG_DIR=str(tmp_path / "cfg"), SUBCOG_DB=str(tmp_path / "m.db"),
               SUBCOG_WORKER_ENABLED="false", SUBCOG_DEDUP_SEMANTIC_ENABLED="false")
    out = subprocess.run([*cli_command(), "import-history", "--json"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    data = json.loads(out.stdout)
    assert data["root"] == str(tmp_path / "cfg" / "projects") and data["captured"] == 1
    env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "none")
    out = subprocess.run([*cli_command(), "import-history"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "nothing to import" in out.stdout
    out = subprocess.run([*cli_command(), "import-history", str(tmp_path / "typo")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2 and "no such folder" in out.stderr


def test_the_walk_is_a_stream_in_a_stable_order(tmp_path: Path) -> None:
    for name in ("b", "a"):
        transcript(tmp_path / name / f"{uuid.uuid4()}.jsonl", "/x", FACTS[:1])
    paths = list(walk(tmp_path))
    assert [p.parent.name for p in paths] == ["a", "b"]
    assert not isinstance(walk(tmp_path), list)
    found = sniff(paths[0])
    assert not isinstance(found, str) and found.cwd == "/x" and found.session_id == paths[0].stem
