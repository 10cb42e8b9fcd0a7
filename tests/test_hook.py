"""The pre-compact and session-start hooks at library level, on a real store with the real model.

`pre_compact(raw, HookOptions(...))` opens its own Store (the model loads once per run, ~0.5 s), so these
tests share nothing but the sample transcripts. What they check is what the samples README promises a user
running the hook on session A, then session B, against one store.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import apsw
import pytest

from conftest import hook_output_problems as output_problems, shared_path
from helpers import read_rows, scrub_environ
from subcog_store.capture import session as hook
from subcog_store.capture.session import HookOptions
from subcog_store.claude_code.handlers import pre_compact
from subcog_store.claude_code.report import capture_output
from subcog_store.claude_code import handlers
from subcog_store.claude_code.request import HookRequest
from subcog_store.claude_code.recall_hooks import REPORT_HEADER

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
SESSION_A, SESSION_B = "sess-a", "sess-b"
PGBOUNCER_A = ("We decided to use PostgreSQL connection pooling through PgBouncer in transaction mode, because the "
               "app opens a new session per request and the database hit its max_connections limit during the "
               "load test.")
PGBOUNCER_B = ("We chose PgBouncer in transaction mode for Postgres connection pooling since every request opens its "
               "own session and we ran out of max_connections in the load test.")
SECRET_KEY = "sk-ant-abcdefghijklmnopqrstuvwxyz123456"
SECRET_PASSWORD = "hunter2secret"


# -- helpers ------------------------------------------------------------------------------------------------
def payload(session: str | None, path: Path | str | None, **extra) -> bytes:
    data = {"session_id": session, "transcript_path": str(path) if path is not None else None,
            "cwd": "/home/dev/shop", "hook_event_name": "PreCompact", "trigger": "auto", **extra}
    return json.dumps({k: v for k, v in data.items() if v is not None}).encode()


def run(db: Path, transcript: Path, session: str | None = SESSION_A, **options) -> hook.Run:
    return pre_compact(payload(session, transcript), HookOptions(db=db, **options))


def assistant(text: str, *, sidechain: bool = False, uuid: str = "u") -> str:
    return json.dumps({"parentUuid": None, "isSidechain": sidechain, "type": "assistant", "sessionId": "s",
                       "uuid": uuid, "timestamp": "2026-11-20T09:00:00Z",
                       "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}) + "\n"


def user(text: str) -> str:
    return json.dumps({"type": "user", "isSidechain": False, "message": {"role": "user", "content": text}}) + "\n"


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    return read_rows(db, sql, params)


def memories(db: Path, status: str | None = "active") -> list[dict]:
    names = ("id", "namespace", "content", "tags", "source", "session_id", "status", "domain")
    out = [dict(zip(names, r)) for r in rows(db, f"select {', '.join(names)} from memories")]
    return [m for m in out if status is None or m["status"] == status]


def offset(db: Path, session: str, path: Path) -> int | None:
    found = rows(db, "select byte_offset from hook_offsets where session_id = ? and transcript_path = ?",
                 (session, str(path)))
    return found[0][0] if found else None


def all_text(db: Path) -> str:
    """Every text (and blob, decoded loosely) value of every ordinary table, joined."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [r[0] for r in con.execute(
            "select name from sqlite_master where type = 'table' and sql not like 'CREATE VIRTUAL%'")]
        parts = []
        for table in tables:
            for row in con.execute(f'select * from "{table}"'):
                for value in row:
                    if isinstance(value, str):
                        parts.append(value)
                    elif isinstance(value, bytes):
                        parts.append(value.decode("latin-1"))
        return "\n".join(parts)
    finally:
        con.close()


@pytest.fixture(autouse=True)
def hook_env(monkeypatch, tmp_path):
    """No developer SUBCOG_* setting leaks in; the hook log goes to tmp_path."""
    scrub_environ(monkeypatch, SUBCOG_HOOK_LOG=str(tmp_path / "hook.log"))


# -- session A, then session B (one store, built once for the module) -------------------------------------
@pytest.fixture(scope="module")
def a_then_b(tmp_path_factory):
    """Run A, then B, then each again; returns the runs and what the store held after A."""
    base = tmp_path_factory.mktemp("ab")
    with pytest.MonkeyPatch.context() as env:
        scrub_environ(env, SUBCOG_HOOK_LOG=str(base / "hook.log"))
        db = base / "store.db"
        a, b = base / "session-a.jsonl", base / "session-b.jsonl"
        shutil.copyfile(SAMPLES / "session-a.jsonl", a)
        shutil.copyfile(SAMPLES / "session-b.jsonl", b)
        run_a = run(db, a, SESSION_A)
        after_a = memories(db)
        run_b = run(db, b, SESSION_B)
        again_a = run(db, a, SESSION_A)
        again_b = run(db, b, SESSION_B)
        return {"db": db, "a": a, "b": b, "run_a": run_a, "after_a": after_a, "run_b": run_b,
                "again_a": again_a, "again_b": again_b}


def by_text(items: list[dict], needle: str) -> list[dict]:
    return [i for i in items if needle in i["content"]]


def test_a_stores_the_pgbouncer_decision_once(a_then_b):
    run_a, after_a = a_then_b["run_a"], a_then_b["after_a"]
    assert run_a.errors == [] and run_a.status == "ok"
    pg = by_text(after_a, "PgBouncer")
    assert len(pg) == 1, pg  # said twice in the main thread, once by a subagent: one memory
    assert pg[0]["namespace"] == "decisions"
    assert pg[0]["content"] == PGBOUNCER_A
    assert "Subagent" not in pg[0]["content"]
    in_batch = [s for s in run_a.skipped if s["reason"] == "in_batch"]
    assert [s["content"] for s in in_batch] == [PGBOUNCER_A]


def test_a_captures_the_lasting_statements_and_nothing_else(a_then_b):
    after_a = a_then_b["after_a"]
    expected = ["PgBouncer in transaction mode", "Turns out the ORM keeps a session open",
                "Pattern: every repository class takes a Connection", "Fixed the issue with the checkout timeouts",
                "Important: the payment webhook must answer within 3 seconds", "TTL of 5 minutes",
                "Learned that the load balancer health check"]
    for needle in expected:
        assert len(by_text(after_a, needle)) == 1, needle
    assert len(after_a) == len(expected) == len(a_then_b["run_a"].captured)
    text = "\n".join(m["content"] for m in after_a)
    # tool calls, tool results, thinking, images, progress, snapshots, summaries, user turns, narration
    for not_a_memory in ("grep -rn", "src/db.py:12", "has been updated", "pool_size=20", "The pool is tiny",
                         "iVBORw0KGgo", "hook_progress", "PostToolUse", "trackedFileBackups", "Checkout timeouts:",
                         "keeps timing out under load", "screenshot of the dashboard", "Sounds good",
                         "Subagent notes", "I'll update the settings next", "Yes, two things"):
        assert not_a_memory not in text, not_a_memory


def test_captured_memories_carry_provenance(a_then_b):
    db = a_then_b["db"]
    for m in memories(db, status=None):
        assert set(json.loads(m["tags"])) >= {"auto-captured", "pre-compact"}, m
        assert m["source"] == hook.SOURCES["pre-compact"]
        assert m["session_id"] in (SESSION_A, SESSION_B)
        assert m["domain"] == "project"
    assert {m["session_id"] for m in a_then_b["after_a"]} == {SESSION_A}
    for c in a_then_b["run_a"].captured + a_then_b["run_b"].captured:
        assert re.fullmatch(r"subcog://project/[a-z-]+/[0-9a-f]{12}", c["urn"]), c


def test_b_skips_the_reworded_decision_and_the_repeated_pattern(a_then_b):
    run_b, after_a = a_then_b["run_b"], a_then_b["after_a"]
    pg_a = by_text(after_a, "PgBouncer")[0]
    pattern_a = by_text(after_a, "Pattern: every repository class")[0]
    reasons = {s["content"][:40]: s for s in run_b.skipped}
    assert len(run_b.skipped) == 2, run_b.skipped
    reworded = reasons[PGBOUNCER_B[:40]]
    assert reworded["reason"] == "semantic_similar"
    assert reworded["matched_urn"] == f"subcog://project/decisions/{pg_a['id']}"
    assert reworded["similarity"] >= 0.92
    exact = reasons[pattern_a["content"][:40]]
    assert exact["reason"] == "exact_match"
    assert exact["matched_urn"] == f"subcog://project/patterns/{pattern_a['id']}"
    db = a_then_b["db"]
    assert len(by_text(memories(db), "PgBouncer")) == 1
    assert len(by_text(memories(db), "Pattern: every repository class")) == 1


def test_b_keeps_the_changed_ttl_as_a_changed_fact(a_then_b):
    run_b, after_a, db = a_then_b["run_b"], a_then_b["after_a"], a_then_b["db"]
    old = by_text(after_a, "TTL of 5 minutes")[0]
    changed = [c for c in run_b.captured if "TTL of 10 minutes" in c["content"]]
    assert len(changed) == 1
    assert changed[0]["decision"] == "changed_fact"
    assert changed[0]["matched_urn"] == f"subcog://project/decisions/{old['id']}"
    assert "5 minutes" in changed[0]["reasoning"] and "10 minutes" in changed[0]["reasoning"]
    now = memories(db)
    assert [m["id"] for m in by_text(now, "TTL of 5 minutes")] == [old["id"]]  # still there, still active
    assert len(by_text(now, "TTL of 10 minutes")) == 1
    assert "changed fact" in status_line(run_b)


def test_b_captures_the_new_lines_and_reads_past_the_torn_one(a_then_b):
    run_b, db, b = a_then_b["run_b"], a_then_b["db"], a_then_b["b"]
    new = [c["content"] for c in run_b.captured if c["decision"] == "stored"]
    assert any(t.startswith("Discovered that the retry middleware retries POST") for t in new)
    assert any(t.startswith("We decided to never retry non-idempotent requests") for t in new)
    assert any(t.startswith("Convention: migration files are named") for t in new)
    assert len(run_b.captured) == 4 and run_b.errors == [] and run_b.status == "ok"
    raw = b.read_bytes()
    torn_at = raw.rindex(b"\n") + 1
    assert torn_at < len(raw)
    assert run_b.records == raw[:torn_at].count(b"\n") and run_b.bad_lines == 0
    assert offset(db, SESSION_B, b) == torn_at  # the torn line is left for the next run
    assert len(memories(db)) == 11
    assert not [m for m in memories(db) if m["content"].rstrip().endswith("We decided to")]


def test_second_run_on_the_same_transcript_captures_nothing(a_then_b):
    for key in ("again_a", "again_b"):
        again = a_then_b[key]
        assert again.captured == [] and again.skipped == [] and again.errors == [], key
        assert again.records == 0
        assert status_line(again) == \
            "subcog: nothing new to capture since the last run"
    assert len(memories(a_then_b["db"])) == 11


def test_each_run_is_stored_in_hook_runs(a_then_b):
    found = rows(a_then_b["db"], "select session_id, transcript_path, trigger, status, captured, skipped, report "
                                 "from hook_runs order by id")
    assert [(r[0], r[3], r[4], r[5]) for r in found] == [
        (SESSION_A, "ok", 7, 1), (SESSION_B, "ok", 4, 2), (SESSION_A, "ok", 0, 0), (SESSION_B, "ok", 0, 0)]
    assert found[0][1] == str(a_then_b["a"]) and found[0][2] == "auto"
    assert json.loads(found[1][6]) == json.loads(json.dumps(a_then_b["run_b"].report()))


# -- incremental reading -------------------------------------------------------------------------------------
def test_appended_lines_are_the_only_part_read(tmp_path):
    db, t = tmp_path / "s.db", tmp_path / "t.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", t)
    first = run(db, t)
    assert len(first.captured) == 7
    end = t.stat().st_size
    assert offset(db, SESSION_A, t) == end
    with t.open("a") as f:
        f.write(user("What about the order events?"))
        f.write(assistant("We decided to use Kafka for the order events, because consumers must replay a week of "
                          "history."))
    second = run(db, t)
    assert second.records == 2
    assert [c["content"][:30] for c in second.captured] == ["We decided to use Kafka for th"]
    assert second.skipped == []
    assert offset(db, SESSION_A, t) == t.stat().st_size > end
    # the offset belongs to (session, path): another session on the same file reads it from the start
    other = run(db, t, "sess-other")
    assert other.records == t.read_bytes().count(b"\n")
    assert other.captured == [] and len(other.skipped) == 9
    assert len(memories(db)) == 8


def test_a_torn_line_is_read_once_it_is_completed(tmp_path):
    db, t = tmp_path / "s.db", tmp_path / "b.jsonl"
    shutil.copyfile(SAMPLES / "session-b.jsonl", t)
    first = run(db, t, SESSION_B)
    assert len(first.captured) == 6
    with t.open("a") as f:  # the writer finishes the line it was writing
        f.write(' use Kafka for the order events, because consumers must replay a week of history."}]}}\n')
    second = run(db, t, SESSION_B)
    assert second.records == 1 and second.bad_lines == 0
    assert [c["content"] for c in second.captured] == [
        "We decided to use Kafka for the order events, because consumers must replay a week of history."]
    assert offset(db, SESSION_B, t) == t.stat().st_size


# -- secrets ------------------------------------------------------------------------------------------------
def test_secrets_never_reach_the_store(tmp_path):
    db, t = tmp_path / "s.db", tmp_path / "secret.jsonl"
    t.write_text(
        user("Set up staging for me, the key is " + SECRET_KEY)
        + assistant(f"Decided to use the key {SECRET_KEY} for staging deployments of the checkout service.\n\n"
                    f"We decided to connect the reporting job through postgres://app:{SECRET_PASSWORD}@db:5432/app "
                    "because the replica lags.")
        + assistant(f"Decided to use the key {SECRET_KEY} for staging deployments of the checkout service."))
    result = run(db, t)
    assert result.redacted == 3  # two in the first record, one in the repeat
    assert len(result.captured) == 2
    message = status_line(result)
    assert "redacted 3 secrets" in message
    stored = all_text(db)
    assert "[REDACTED]" in stored
    for secret in (SECRET_KEY, SECRET_PASSWORD, "abcdefghijklmnopqrstuvwxyz123456"):
        assert secret not in stored
        for path in db.parent.glob(db.name + "*"):  # the raw bytes of the file, WAL included
            assert secret.encode() not in path.read_bytes(), path
        assert secret not in capture_output(result, "pre-compact") and secret not in capture_output(result, "pre-compact", "subcog")
        assert secret not in json.dumps(result.report())
    mem = by_text(memories(db), "postgres://")[0]["content"]
    assert "postgres://app:[REDACTED]@db:5432/app" in mem
    log = Path(os.environ["SUBCOG_HOOK_LOG"])
    assert not log.exists() or SECRET_PASSWORD not in log.read_text()


# -- in-batch dedup -----------------------------------------------------------------------------------------
def test_repeats_and_paraphrases_in_one_transcript_make_one_memory(tmp_path):
    db, t = tmp_path / "s.db", tmp_path / "t.jsonl"
    same = "Learned that the nightly export job holds a lock on the orders table for up to ten minutes."
    t.write_text(assistant(same, uuid="1") + user("ok") + assistant(same, uuid="2")
                 + assistant(PGBOUNCER_A, uuid="3") + assistant(PGBOUNCER_B, uuid="4"))
    result = run(db, t)
    assert len(result.captured) == 2, result.captured
    assert sorted(s["reason"] for s in result.skipped) == ["in_batch", "in_batch"]
    para = [s for s in result.skipped if s["content"] == PGBOUNCER_B]
    assert para and para[0]["similarity"] >= 0.92
    mems = memories(db)
    assert len(mems) == 2
    assert len(by_text(mems, "PgBouncer")) == 1 and len(by_text(mems, "nightly export")) == 1
    context = json.loads(capture_output(result, "pre-compact", "subcog"))["hookSpecificOutput"]["additionalContext"]
    assert "Repeated in this conversation" in context


# -- session start ------------------------------------------------------------------------------------------
def status_line(run: hook.Run) -> str:
    """The status line the PreCompact hook prints (the first line of its plain-text output)."""
    return capture_output(run, "pre-compact").splitlines()[0].removesuffix(".")


def dispatch(event: str, raw: bytes, db: Path) -> str:
    """A hook run in this process, as the hook command builds it."""
    return handlers.dispatch(HookRequest(event, raw, dict(os.environ), db=str(db)))


def session_start(raw: bytes, db: Path) -> str:
    return dispatch("session-start", raw, db)


def start(session: str, source: str = "compact") -> bytes:
    return json.dumps({"session_id": session, "transcript_path": "/x.jsonl", "cwd": "/x",
                       "hook_event_name": "SessionStart", "source": source}).encode()


def test_session_start_hands_the_report_over_once(tmp_path):
    db = tmp_path / "s.db"
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", a)
    shutil.copyfile(SAMPLES / "session-b.jsonl", b)
    run(db, a, SESSION_A)
    run(db, b, SESSION_B)
    for source in ("startup", "resume", "clear", "fork"):  # the project's index, never a capture report
        assert REPORT_HEADER not in session_start(start(SESSION_A, source), db)
    assert REPORT_HEADER not in session_start(start("sess-unknown"), db)
    out_a = session_start(start(SESSION_A), db)
    assert output_problems("SessionStart", out_a) == []
    spec = json.loads(out_a)["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    context_a = spec["additionalContext"]
    assert "Captured 7 memories" in context_a
    assert re.search(r"^1\. \*\*decisions\*\*: We decided to use PostgreSQL .*\(subcog://project/decisions/"
                     r"[0-9a-f]{12}\)$", context_a, re.M)
    assert "Repeated in this conversation" in context_a
    assert "Exact match" not in context_a  # only session A's report
    assert REPORT_HEADER not in session_start(start(SESSION_A), db)  # once
    out_b = session_start(start(SESSION_B), db)
    assert output_problems("SessionStart", out_b) == []
    context_b = json.loads(out_b)["hookSpecificOutput"]["additionalContext"]
    assert re.search(r"^- Exact match: Pattern: every repository class.*\(subcog://project/patterns/[0-9a-f]{12}\)$",
                     context_b, re.M)
    assert re.search(r"^- Semantic 9\d%: We chose PgBouncer.*\(subcog://project/decisions/[0-9a-f]{12}\)$",
                     context_b, re.M)
    assert re.search(r"\(changed fact: updates subcog://project/decisions/[0-9a-f]{12}, .*5 minutes.*\)", context_b)
    assert "PgBouncer in transaction mode for Postgres" not in context_a
    assert REPORT_HEADER not in session_start(start(SESSION_B), db)
    delivered = rows(db, "select session_id, delivered_at is not null from hook_runs order by id")
    assert delivered == [(SESSION_A, 1), (SESSION_B, 1)]


def test_session_start_says_nothing_without_a_store_or_input(tmp_path):
    missing = tmp_path / "none.db"
    assert session_start(start(SESSION_A), missing) == ""
    assert not missing.exists()
    for raw in (b"", b"not json", b"[1]", b'{"source": "compact"}', b'{"session_id": 3, "source": "compact"}'):
        assert session_start(raw, tmp_path / "s.db") == ""


# -- dry run ------------------------------------------------------------------------------------------------
def test_dry_run_writes_nothing(tmp_path):
    db, a, b = tmp_path / "s.db", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", a)
    shutil.copyfile(SAMPLES / "session-b.jsonl", b)
    run(db, a, SESSION_A)
    before = db.read_bytes()
    counts = rows(db, "select (select count(*) from memories), (select count(*) from dedup_log), "
                      "(select count(*) from dedup_checks), (select count(*) from hook_runs), "
                      "(select count(*) from hook_offsets)")
    dry = run(db, b, SESSION_B, dry_run=True)
    assert dry.dry_run and dry.status == "dry_run"
    assert len(dry.captured) == 4 and len(dry.skipped) == 2
    assert status_line(dry).startswith("subcog: would capture 4 memories")
    assert db.read_bytes() == before
    wal = Path(str(db) + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert rows(db, "select (select count(*) from memories), (select count(*) from dedup_log), "
                    "(select count(*) from dedup_checks), (select count(*) from hook_runs), "
                    "(select count(*) from hook_offsets)") == counts
    # the real run afterwards still sees everything
    assert len(run(db, b, SESSION_B).captured) == 4


def test_dry_run_without_a_store_creates_none(tmp_path):
    db, a = tmp_path / "sub" / "new.db", tmp_path / "a.jsonl"
    db.parent.mkdir()
    shutil.copyfile(SAMPLES / "session-a.jsonl", a)
    dry = run(db, a, dry_run=True)
    assert len(dry.captured) == 7 and dry.errors == []
    assert list(db.parent.iterdir()) == []


# -- time budget --------------------------------------------------------------------------------------------
def test_a_tiny_budget_saves_progress_and_a_later_run_captures_the_rest(tmp_path):
    db, a = tmp_path / "s.db", tmp_path / "a.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", a)
    tiny = run(db, a, budget_secs=0.001)
    assert tiny.truncated and tiny.status == "partial" and tiny.captured == []
    assert status_line(tiny).startswith("subcog:")
    first_line = a.read_bytes().index(b"\n") + 1  # at least one line is read, and that progress is kept
    assert offset(db, SESSION_A, a) == first_line
    assert rows(db, "select status from hook_runs") == [("partial",)]
    rest = run(db, a)
    assert len(rest.captured) == 7 and rest.errors == [] and not rest.truncated
    assert offset(db, SESSION_A, a) == a.stat().st_size


def test_a_budget_used_up_at_once_still_makes_progress(tmp_path):
    """A run whose budget is gone before it starts still reads a record and handles its minimum of candidates
    (issue 29: progress whatever the load); the rest comes with the next run, nothing twice."""
    db, t = tmp_path / "s.db", tmp_path / "t.jsonl"
    t.write_text(assistant("We decided to use Kafka for the order events, because consumers must replay a week of "
                           "history.") + user("fine") + assistant(PGBOUNCER_A))
    tiny = run(db, t, budget_secs=0.001)
    assert [c["content"][:21] for c in tiny.captured] == ["We decided to use Kaf"] and tiny.truncated
    assert "stopped early" in status_line(tiny) and "nothing new" not in status_line(tiny)
    assert offset(db, SESSION_A, t) is not None
    rest = run(db, t)
    assert len(rest.captured) == 1 and rest.errors == [] and not rest.truncated
    assert len(memories(db)) == 2


def test_a_run_stopped_early_does_not_claim_there_is_nothing_new(tmp_path):
    db, a = tmp_path / "s.db", tmp_path / "a.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", a)
    tiny = run(db, a, budget_secs=0.001)
    assert tiny.truncated
    message = status_line(tiny)
    assert "nothing new" not in message


# -- the recorded sessions -----------------------------------------------------------------------------------
def test_recorded_sessions_leave_the_narration(tmp_path):
    real = shared_path() / "samples" / "real"
    if not real.is_dir():
        pytest.skip(f"{real} not present")
    db = tmp_path / "s.db"
    captured: dict[str, list[str]] = {}
    for path in sorted(real.glob("*.jsonl")):
        result = run(db, path, path.stem)
        assert result.errors == [] and result.bad_lines == 0 and result.records > 30
        out = capture_output(result, "pre-compact")
        assert output_problems("PreCompact", out) == []
        for c in result.captured:
            assert not re.match(r"(?i)(now )?let me|i'll|i need|all tests pass|done\b", c["content"]), c
        assert len(result.captured) <= 3
        captured[path.stem] = [c["content"] for c in result.captured]
    # The few lasting facts are kept: the port's design decision, stated in its closing summary (a list item,
    # stored with its heading).
    assert any("Used Result<T, E> instead of raising exceptions" in c for c in captured["python-to-rust-port"])


# -- one bad paragraph must not cost the others ----------------------------------------------------------------
def test_a_lone_surrogate_in_one_paragraph_costs_only_that_paragraph(tmp_path):
    db, t = tmp_path / "s.db", tmp_path / "t.jsonl"
    bad = ('{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":'
           '"We decided to use the \\ud83d marker in commit titles for every release of the service."}]}}\n')
    t.write_text(assistant("We decided to use Kafka for the order events, because consumers must replay a week of "
                           "history.") + bad)
    result = run(db, t)
    assert result.errors == []
    assert any(c["content"].startswith("We decided to use Kafka") for c in result.captured)


# -- post-compact: the compaction summary's lasting facts -----------------------------------------------------
def post_compact_payload(session: str, summary: str) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": "/x.jsonl", "cwd": "/x", "trigger": "manual",
                       "hook_event_name": "PostCompact", "compact_summary": summary}).encode()


def test_post_compact_captures_the_summarys_facts_and_the_report_still_comes(tmp_path):
    from subcog_store.extraction.summary import LASTING_FACTS_HEADING

    db, a = tmp_path / "s.db", tmp_path / "a.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", a)
    run(db, a, SESSION_A)
    before = {m["content"] for m in memories(db)}
    pgbouncer = next(c for c in before if "PgBouncer" in c)
    summary = ("1. Primary Request and Intent: the user asked to fix checkout timeouts.\n\n"
               f"{LASTING_FACTS_HEADING}:\n- The staging Postgres listens on port 6543 behind the bastion host "
               f"db-bastion-2, because the default port is blocked by the VPN.\n- {pgbouncer}\n")
    assert dispatch("post-compact", post_compact_payload(SESSION_A, summary), db) == ""
    after = memories(db)
    new = [m for m in after if m["content"] not in before]
    assert len(new) == 1 and "6543" in new[0]["content"] and json.loads(new[0]["tags"]) == ["auto-captured",
                                                                                             "compact-summary"]
    assert sum("PgBouncer" in m["content"] for m in after) == 1   # said again in the summary: a duplicate
    # the report the model gets after the compaction is the pre-compact run's, not the summary's capture
    context = json.loads(session_start(start(SESSION_A), db))["hookSpecificOutput"]["additionalContext"]
    assert REPORT_HEADER in context and "Captured 7 memories" in context


def test_post_compact_with_bad_input_captures_nothing(tmp_path):
    db = tmp_path / "s.db"
    for raw in (b"", b"not json", b"[]", post_compact_payload(SESSION_A, ""),
                json.dumps({"session_id": SESSION_A, "compact_summary": 42}).encode()):
        assert dispatch("post-compact", raw, db) == ""
    assert not db.exists() or memories(db) == []


def test_a_narrated_lead_in_is_not_stored(tmp_path):
    db, t = tmp_path / "s.db", tmp_path / "t.jsonl"
    t.write_text(assistant(PGBOUNCER_A) + user("again?") + assistant("To repeat the earlier point: " + PGBOUNCER_A))
    result = run(db, t)
    assert len(memories(db)) == 1 and not memories(db)[0]["content"].startswith("To repeat")
    assert len(result.skipped) == 1
