"""`export` and `import`: JSONL out and back in through deduplication (idempotent, changed facts linked again), the
Markdown memory document (current facts by namespace, outdated ones under their successor, every text escaped)."""
from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

from subcog_store import transfer
from helpers import clean_environ, cli_command

TTL5 = ("We decided to use Redis for the session cache with a TTL of 5 minutes, because sessions are read on every "
        "request.")
TTL10 = TTL5.replace("5 minutes", "10 minutes")
POOL = "We chose PgBouncer in transaction mode for Postgres connection pooling because the app opens many sessions."
ORM = ("Learned that the ORM keeps a session open for the whole request even when the handler only reads, which "
       "holds a connection idle in transaction.")
SCRIPT = "A memory holding <script>alert(1)</script> & friends must read as text."
SECRET = "glpat-" + "FAKEa1b2c3d4e5f6g7h8"


def fill(store) -> None:
    store.capture(TTL5, "decisions", "shop", tags=["cache"], importance=0.7)
    store.capture(TTL10, "decisions", "shop", tags=["cache"], importance=0.7)
    store.capture(POOL, "decisions", "shop")
    store.capture(ORM, "learnings", "shop")
    store.capture(SCRIPT, "learnings", "shop")
    store.capture(POOL, "decisions", "billing")


def scopes(store) -> set[tuple[str, str, str, bool]]:
    rows = store.con.execute("select domain, namespace, content, successor_id is not null from memories "
                             "where status = 'active'").fetchall()
    return {tuple(r) for r in rows}


def test_a_jsonl_export_comes_back_the_same_and_a_second_import_stores_nothing(make_store, tmp_path: Path) -> None:
    source = make_store(path=tmp_path / "a.db")
    fill(source)
    out = io.StringIO()
    assert transfer.export_jsonl(source, out) == 6
    lines = out.getvalue().splitlines()
    assert [json.loads(x)["content"] for x in lines][:2] == [TTL5, TTL10]          # oldest first
    assert json.loads(lines[0])["outdated_by"] == json.loads(lines[1])["id"]

    target = make_store(path=tmp_path / "b.db")
    report = transfer.import_lines(target, [x.encode() + b"\n" for x in lines])
    assert report.stored == 6 and report.decisions["changed_fact"] == 1 and report.errors == 0
    assert scopes(target) == scopes(source)                   # TTL 5 marked as outdated by TTL 10 again
    again = transfer.import_lines(target, [x.encode() + b"\n" for x in lines])
    assert again.stored == 0 and again.decisions == {"hash_exact": 6}
    assert scopes(target) == scopes(source)
    tags = target.con.execute("select tags from memories where content = ?", (TTL10,)).fetchone()[0]
    assert json.loads(tags) == ["cache"]


def test_import_into_another_domain_and_retired_or_bad_lines(make_store, tmp_path: Path) -> None:
    source = make_store(path=tmp_path / "a.db")
    fill(source)
    source.forget(source.memories("learnings", "shop")[0].id, "stale")
    out = io.StringIO()
    transfer.export_jsonl(source, out, domain="shop", include_all=True)
    raw = [x.encode() + b"\n" for x in out.getvalue().splitlines()]
    raw += [b"not json\n", b'{"content": 5, "namespace": "decisions"}\n', b"\n", b'{"content": "x"}\n',
            b'{"content": "' + b"y" * (2 << 20) + b'", "namespace": "decisions"}\n',
            b'{"content": "   ", "namespace": "decisions"}\n', b'{"content": "ok", "namespace": "nope"}\n']
    target = make_store(path=tmp_path / "b.db")
    report = transfer.import_lines(target, raw, domain="shop-moved")
    assert report.not_current == 1 and report.errors == 6 and report.stored == 4
    assert [e["line"] for e in report.error_lines] == [6, 7, 9, 10, 11, 12]     # 5 exported lines, then these
    assert {d for d, *_ in scopes(target)} == {"shop-moved"}


def test_the_markdown_document_lists_current_facts_by_namespace_with_outdated_ones_under_them(make_store,
                                                                                           tmp_path: Path) -> None:
    store = make_store(path=tmp_path / "a.db")
    fill(store)
    store.con.execute("update memories set content = content || ' Token: ' || ? where content = ?", (SECRET, ORM))
    out = io.StringIO()
    assert transfer.export_markdown(store, out, "shop", "9.9", "2026-01-02") == 4
    doc = out.getvalue()
    assert doc.startswith("\n# Memories of shop\n") and "subcog-store 9.9 on 2026-01-02" in doc
    assert doc.index("## decisions") < doc.index(TTL10) < doc.index("## learnings")
    assert doc.count(TTL5) == 1 and "  - replaced: ~~" + TTL5 + "~~" in doc
    assert doc.index(TTL10) < doc.index(TTL5)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; friends" in doc and "<script>" not in doc
    assert SECRET not in doc and "[REDACTED]" in doc
    assert "billing" not in doc
    everything = io.StringIO()
    transfer.export_markdown(store, everything, None, "9.9", "2026-01-02")
    assert "\n## billing\n" in everything.getvalue() and "\n## shop\n" in everything.getvalue()


def test_the_cli_writes_a_file_whole_or_not_at_all_and_import_says_what_it_did(tmp_path: Path) -> None:
    env = clean_environ(answer_when_done=False)
    env.update(SUBCOG_DB=str(tmp_path / "a.db"), SUBCOG_WORKER_ENABLED="false", SUBCOG_DEDUP_SEMANTIC_ENABLED="false")

    def run(*args: str, db: str = "a.db", stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*cli_command(), "--db", str(tmp_path / db), *args], env=env, capture_output=True,
                              text=True, timeout=120, input=stdin)

    for text in (POOL, ORM):
        assert run("capture", "-n", "decisions", "-d", "shop", text).returncode == 0
    target = tmp_path / "out.jsonl"
    done = run("export", "-o", str(target))
    assert done.returncode == 0 and "2 memories written" in done.stdout and done.stderr == ""
    (tmp_path / "other.db").write_bytes(b"not a database at all" * 100)
    before = target.read_bytes()
    assert run("export", "-o", str(target), db="other.db").returncode == 5
    assert target.read_bytes() == before and [p.name for p in tmp_path.glob(".out.jsonl*")] == []
    first = run("import", str(target), db="b.db")
    assert first.returncode == 0 and "2 memories stored" in first.stdout
    second = run("import", str(target), "--json", db="b.db")
    assert json.loads(second.stdout)["decisions"] == {"hash_exact": 2}
    bad = run("import", "-", db="b.db", stdin=target.read_text() + "oops\n")
    assert bad.returncode == 2 and "line 3: not a JSON line" in bad.stdout
    assert run("import", str(tmp_path / "missing.jsonl"), db="b.db").returncode == 2
    piped = run("capture", "--jsonl", db="c.db", stdin=target.read_text())   # an export is capture --jsonl input
    assert piped.returncode == 0 and all(json.loads(x)["stored"] for x in piped.stdout.splitlines())
    md = run("export", "--format", "markdown", "-d", "shop")
    assert md.returncode == 0 and md.stdout.startswith("\n# Memories of shop\n")
