"""The hooks as Claude Code runs them: a real `subcog-store ... hook pre-compact` process, JSON on stdin.

Whatever the input, the database or the model, a hook exits 0, prints output the client accepts
(check_hook_output.problems), never a traceback, mentions a failure in a few words, and logs details, never
content, to SUBCOG_HOOK_LOG.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import apsw
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import hook_output_problems as problems
from helpers import BROKEN_RUN_SECS, UNHURRIED, clean_environ, read_rows, run_cli, run_hook, wait_for
from subcog_store.capture.session import HookOptions
from subcog_store.claude_code.handlers import pre_compact
from subcog_store.claude_code.report import capture_output
from subcog_store.claude_code.recall_hooks import REPORT_HEADER
from subcog_store.extraction.summary import LASTING_FACTS_HEADING

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
SCRIPT = Path(sys.executable).parent / "subcog-store"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "subcog_store"]
# sentences of the sample transcripts that must never show up in the log
DISTINCTIVE = ["max_connections limit during the load test", "every repository class takes a Connection",
               "quokka marmalade"]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def payload(path: Path | str | None, session: str = "sess-cli", **extra) -> bytes:
    data = {"session_id": session, "cwd": "/home/dev/shop", "hook_event_name": "PreCompact", "trigger": "manual",
            "custom_instructions": None, **extra}
    if path is not None:
        data["transcript_path"] = str(path)
    return json.dumps(data).encode()


# Every hook test runs both ways: through the warm worker (the suite's private one) and in process.
MODE_ENV = {"worker": {}, "in-process": {"SUBCOG_WORKER_ENABLED": "false"}}
_mode = {"env": {}}


@pytest.fixture(autouse=True, params=sorted(MODE_ENV), scope="module")
def hook_mode(request):
    _mode["env"] = MODE_ENV[request.param]
    yield request.param
    _mode["env"] = {}


def base_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_environ({"SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"), **_mode["env"], **extra})


def hook(tmp_path: Path, db: Path | str, stdin: bytes, *args: str, sub: str = "pre-compact",
         env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return run_hook(sub, stdin, *args, db=db, environ=env or base_env(tmp_path), timeout=timeout)


def accepted(proc: subprocess.CompletedProcess, tmp_path: Path | None = None) -> str:
    """Exit 0, nothing on stderr, output the client accepts (a status line, then the request for the summary's
    lasting facts), no content in the log; returns the status line."""
    assert proc.returncode == 0, proc
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    out = proc.stdout.decode("utf-8")
    assert problems("PreCompact", out) == []
    message = out.splitlines()[0].removesuffix(".")
    assert message.startswith("subcog:") and LASTING_FACTS_HEADING in out
    if tmp_path is not None:
        assert_log_clean(tmp_path)
    return message


def assert_log_clean(tmp_path: Path) -> str:
    log = tmp_path / "hook.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    for sentence in DISTINCTIVE:
        assert sentence not in text.lower(), sentence
    return text


def copy_sample(tmp_path: Path, name: str) -> Path:
    target = tmp_path / f"{name}.jsonl"
    shutil.copyfile(SAMPLES / f"{name}.jsonl", target)
    return target


def assistant(text: str, sidechain: bool = False) -> bytes:
    return (json.dumps({"type": "assistant", "isSidechain": sidechain, "sessionId": "s", "uuid": "u",
                        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
            + "\n").encode()


def count_memories(db: Path) -> int:
    return read_rows(db, "select count(*) from memories")[0][0]


# -- bad input: the compaction goes on ---------------------------------------------------------------------
@pytest.mark.parametrize("stdin, words", [
    (b"", "empty hook input"),
    (b"   \n", "empty hook input"),
    (b"this is not json {", "not JSON"),
    (b"\xff\xfe\x00{", "not JSON"),
    (b"[1, 2, 3]", "not a JSON object"),
    (b'"just a string"', "not a JSON object"),
    (b"{}", "no transcript_path"),
    (b'{"session_id": "x", "transcript_path": 17}', "no transcript_path"),
    (b'{"session_id": ["x"], "transcript_path": ""}', "no transcript_path"),
], ids=["empty", "blank", "not-json", "not-utf8", "array", "string", "no-fields", "path-not-str", "path-empty"])
def test_bad_hook_input(tmp_path, stdin, words):
    db = tmp_path / "s.db"
    message = accepted(hook(tmp_path, db, stdin), tmp_path)
    assert words in message
    assert "see " in message and str(tmp_path / "hook.log") in message
    assert words in (tmp_path / "hook.log").read_text()


@pytest.mark.parametrize("kind", ["missing", "directory", "unreadable"])
def test_transcript_that_cannot_be_read(tmp_path, kind):
    path = tmp_path / "t.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "unreadable":
        if IS_ROOT:
            pytest.skip("root reads a chmod 000 file anyway")
        shutil.copyfile(SAMPLES / "session-a.jsonl", path)
        path.chmod(0)
    message = accepted(hook(tmp_path, tmp_path / "s.db", payload(path)), tmp_path)
    assert "transcript unreadable" in message
    assert "cannot open transcript" in (tmp_path / "hook.log").read_text()


def test_binary_garbage_transcript(tmp_path):
    rng = random.Random(7)
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"".join(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000))) + b"\n"
                              for _ in range(200)))
    db = tmp_path / "s.db"
    message = accepted(hook(tmp_path, db, payload(path)), tmp_path)
    assert message == "subcog: nothing in this conversation worth remembering yet"  # the first run says so
    assert count_memories(db) == 0


def test_invalid_utf8_lines_cost_only_themselves(tmp_path):
    path = tmp_path / "t.jsonl"
    good = (SAMPLES / "session-a.jsonl").read_bytes().splitlines(keepends=True)
    bad = [b'{"type":"assistant","message":{"content":"We decided to ship quokka marmalade \xff\xfe daily."}}\n',
           b"\xc3\x28 not utf-8 at all\n", b'{"type": "assistant", "message": {"content": "\xed\xa0\x80"}}\n']
    path.write_bytes(b"".join(good[:5] + bad + good[5:]))
    db = tmp_path / "s.db"
    message = accepted(hook(tmp_path, db, payload(path), env=base_env(tmp_path, **UNHURRIED),
                            timeout=BROKEN_RUN_SECS), tmp_path)
    assert message == "subcog: captured 7 memories, skipped 1 duplicate"
    assert count_memories(db) == 7


def test_torn_last_line(tmp_path):
    db = tmp_path / "s.db"
    path = copy_sample(tmp_path, "session-b")
    env = base_env(tmp_path, **UNHURRIED)
    assert accepted(hook(tmp_path, db, payload(path), env=env, timeout=BROKEN_RUN_SECS),
                    tmp_path) == "subcog: captured 6 memories, skipped 0 duplicates"
    with path.open("ab") as f:
        f.write(b' use Kafka for the order events, because consumers must replay a week of history."}]}}\n')
    assert accepted(hook(tmp_path, db, payload(path), env=env, timeout=BROKEN_RUN_SECS),
                    tmp_path) == "subcog: captured 1 memory, skipped 0 duplicates"


def test_a_100_mb_transcript_finishes_within_the_budget(tmp_path):
    path = tmp_path / "big.jsonl"
    tool = json.dumps({"type": "user", "isSidechain": False, "sessionId": "s", "uuid": "u",
                       "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                                "content": "0123456789abcdef" * 256}]}}) + "\n"
    block = tool.encode() * 1000
    with path.open("wb") as f:
        i = 0
        while f.tell() < 100 << 20:
            f.write(block)
            f.write(assistant(f"We decided to shard the event table by tenant number {i} because one "
                              "partition held most of the writes."))
            i += 1
    assert path.stat().st_size >= 100 << 20
    proc = hook(tmp_path, tmp_path / "s.db", payload(path), env=base_env(tmp_path, SUBCOG_HOOK_BUDGET_SECS="5"),
                timeout=120)   # bounds a broken run; the reader's deadline: tests/test_transcript.py (fake clock)
    message = accepted(proc, tmp_path)
    assert "captured" in message or "time budget" in message
    path.unlink()


# -- the database -------------------------------------------------------------------------------------------
LOCKER = """
import sys, time, apsw
con = apsw.Connection(sys.argv[1])
con.execute("begin exclusive")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.execute("rollback")
"""


def lock(db: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(db), str(seconds)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"locked"
    return proc


def new_store(db: Path) -> None:
    from subcog_store.store import Store

    Store(db).close()


def test_a_briefly_locked_database_is_waited_for(tmp_path):
    """Locked when the hook starts, released once the hook has the store open: the hook waits and captures.
    (A lock held for good: tests/test_faults.py counts the wait on a fake clock.)"""
    db = tmp_path / "s.db"
    new_store(db)
    locker = lock(db, 600)
    try:
        proc = run_hook("pre-compact", payload(copy_sample(tmp_path, "session-a")), db=db,
                        environ=base_env(tmp_path, **UNHURRIED), background=True)
        opened = wait_for(lambda: opened_by_another(db, locker.pid) or proc.poll() is not None, step=0.05)
        assert opened and proc.poll() is None, "the hook ended before it opened the store"
    finally:
        locker.kill()
        locker.wait()
    out, err = proc.communicate(timeout=BROKEN_RUN_SECS)
    message = accepted(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), tmp_path)
    assert message == "subcog: captured 7 memories, skipped 1 duplicate"


def opened_by_another(path: Path, besides: int) -> bool:
    """Whether a process other than `besides` has `path` open: the hook, or the warm worker running it (read
    from /proc: a state to wait for, not a time)."""
    for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != besides):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd")):
                return True
        except OSError:
            continue
    return False


def test_a_locked_database_does_not_outlast_the_budget(tmp_path):
    """A lock held for good: the hook gives up, says where to look, and logs the lock. How long it waits is
    counted on a fake clock in tests/test_faults.py; the timeout here only bounds a broken run."""
    db = tmp_path / "s.db"
    new_store(db)
    locker = lock(db, 600)
    try:
        proc = hook(tmp_path, db, payload(copy_sample(tmp_path, "session-a")),
                    env=base_env(tmp_path, SUBCOG_HOOK_BUDGET_SECS="2", SUBCOG_DEDUP_SEMANTIC_ENABLED="false"),
                    timeout=120)
    finally:
        locker.kill()
        locker.wait()
    message = accepted(proc, tmp_path)
    assert "locked" in (tmp_path / "hook.log").read_text()
    assert "see " in message


def test_db_directory_missing(tmp_path):
    db = tmp_path / "no" / "such" / "dir" / "s.db"
    message = accepted(hook(tmp_path, db, payload(copy_sample(tmp_path, "session-a"))), tmp_path)
    assert "memory store unavailable" in message
    assert "does not exist" in (tmp_path / "hook.log").read_text()
    assert not (tmp_path / "no").exists()


def test_db_directory_read_only(tmp_path):
    if IS_ROOT:
        pytest.skip("root writes into a read-only directory anyway")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        message = accepted(hook(tmp_path, ro / "s.db", payload(copy_sample(tmp_path, "session-a"))), tmp_path)
    finally:
        ro.chmod(0o755)
    assert "memory store unavailable" in message


@pytest.mark.parametrize("kind", ["text", "other-sqlite"])
def test_a_file_that_is_not_a_subcog_db_is_left_alone(tmp_path, kind):
    db = tmp_path / "other.db"
    if kind == "text":
        db.write_bytes(b"my notes, not a database\n" * 100)
    else:
        con = apsw.Connection(str(db))
        con.execute("create table t (x); insert into t values (1)")
        con.close()
    before = db.read_bytes()
    message = accepted(hook(tmp_path, db, payload(copy_sample(tmp_path, "session-a"))), tmp_path)
    assert "memory store unavailable" in message
    assert db.read_bytes() == before
    assert "not a" in (tmp_path / "hook.log").read_text()


def test_the_model_missing_falls_back_to_the_text_tier(tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    db = tmp_path / "s.db"
    env = base_env(tmp_path, SUBCOG_MODEL_DIR=str(empty), **UNHURRIED)
    message = accepted(hook(tmp_path, db, payload(copy_sample(tmp_path, "session-a")), env=env,
                            timeout=BROKEN_RUN_SECS), tmp_path)
    assert message == "subcog: captured 7 memories, skipped 1 duplicate"
    assert "semantic tier off" in (tmp_path / "hook.log").read_text()
    message = accepted(hook(tmp_path, db, payload(copy_sample(tmp_path, "session-b"), "sess-b"), env=env,
                            timeout=BROKEN_RUN_SECS), tmp_path)
    assert message.startswith("subcog: captured ")
    assert count_memories(db) > 7


def test_an_unwritable_log_does_not_break_the_hook(tmp_path):
    env = base_env(tmp_path, SUBCOG_HOOK_LOG="/dev/null/hook.log")
    proc = hook(tmp_path, tmp_path / "s.db", b"", env=env)
    assert accepted(proc).startswith("subcog:")


# -- formats ------------------------------------------------------------------------------------------------
def test_format_subcog_is_the_legacy_report(tmp_path):
    db = tmp_path / "s.db"
    env = base_env(tmp_path, **UNHURRIED)   # the exact captures: a run stopped early by load would capture fewer
    proc = hook(tmp_path, db, payload(copy_sample(tmp_path, "session-a")), "--format", "subcog", env=env,
                timeout=BROKEN_RUN_SECS)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    out = json.loads(proc.stdout)
    spec = out["hookSpecificOutput"]
    assert list(out) == ["hookSpecificOutput"] and spec["hookEventName"] == "PreCompact"
    # documented: the real client rejects this variant on PreCompact
    assert problems("PreCompact", proc.stdout.decode()) == [
        "hookSpecificOutput.hookEventName 'PreCompact' is not accepted by the client"]
    context = spec["additionalContext"]
    assert context.startswith("Captured 7 memories before compaction:\n1. **decisions**: We decided to use PostgreSQL")
    assert "(subcog://project/decisions/" in context
    proc = hook(tmp_path, db, payload(copy_sample(tmp_path, "session-b"), "sess-b"), "--format", "subcog", env=env,
                timeout=BROKEN_RUN_SECS)
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "- Exact match: Pattern: every repository class" in context
    assert "- Semantic 9" in context and "(changed fact: updates subcog://project/decisions/" in context
    proc = hook(tmp_path, db, b"garbage", "--format", "subcog")
    assert proc.returncode == 0 and json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_dry_run_through_the_cli(tmp_path):
    db = tmp_path / "s.db"
    message = accepted(hook(tmp_path, db, payload(copy_sample(tmp_path, "session-a")), "--dry-run",
                            env=base_env(tmp_path, **UNHURRIED), timeout=BROKEN_RUN_SECS), tmp_path)
    assert message == "subcog: would capture 7 memories, skipped 1 duplicate"
    assert not list(tmp_path.glob("s.db*"))


# -- session-start ------------------------------------------------------------------------------------------
def start(session: str, source: str = "compact") -> bytes:
    return json.dumps({"session_id": session, "transcript_path": "/x.jsonl", "cwd": "/x",
                       "hook_event_name": "SessionStart", "source": source}).encode()


def session_start(tmp_path: Path, db: Path, stdin: bytes) -> str:
    proc = hook(tmp_path, db, stdin, sub="session-start")
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc
    out = proc.stdout.decode("utf-8")
    assert problems("SessionStart", out) == []
    return out


def test_session_start_after_a_compaction(tmp_path):
    db = tmp_path / "s.db"
    assert session_start(tmp_path, db, start("sess-cli")) == ""  # no store yet
    accepted(hook(tmp_path, db, payload(copy_sample(tmp_path, "session-a")), env=base_env(tmp_path, **UNHURRIED),
                  timeout=BROKEN_RUN_SECS))   # all of session-a captured, whatever the load
    for stdin in (b"", b"garbage", b"[]", b"{}"):
        assert session_start(tmp_path, db, stdin) == "", stdin
    for stdin in (start("sess-cli", "startup"), start("sess-cli", "resume"), start("someone-else")):
        assert REPORT_HEADER not in session_start(tmp_path, db, stdin), stdin
    out = session_start(tmp_path, db, start("sess-cli"))
    spec = json.loads(out)["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart"
    assert "1. **decisions**: We decided to use PostgreSQL" in spec["additionalContext"]
    assert REPORT_HEADER not in session_start(tmp_path, db, start("sess-cli"))
    assert session_start(tmp_path, tmp_path / "other.txt", start("sess-cli")) == ""
    (tmp_path / "notdb").write_text("hello")
    assert session_start(tmp_path, tmp_path / "notdb", start("sess-cli")) == ""
    assert_log_clean(tmp_path)


# -- generated input ----------------------------------------------------------------------------------------
TEXTS = ["We decided to use PgBouncer in transaction mode because the database ran out of connections.",
         "Learned that the retry middleware retries POST requests too, which caused double charges.",
         "Pattern: every handler validates input at the edge and passes typed objects inward.",
         "Now let me run the tests.", "ok", "", "Decided to use the key sk-ant-abcdefghijklmnopqrstuvwxyz123456 now.",
         "## Heading\n\n- item one that is short\n\n```\ncode block\n```", "Fixed the flaky timeout bug in CI."]
text_st = st.one_of(st.sampled_from(TEXTS), st.text(max_size=120))
block_st = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, text_st),
    st.builds(lambda t: {"type": "thinking", "thinking": t}, text_st),
    st.builds(lambda t: {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": t}}, text_st),
    st.builds(lambda t: {"type": "tool_result", "tool_use_id": "t1", "content": t}, text_st),
    st.just({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}),
    st.dictionaries(st.text(max_size=5), st.none() | st.integers() | st.text(max_size=10), max_size=3),
    st.none(), st.integers(),
)
record_st = st.builds(
    lambda kind, side, content, extra: {"type": kind, "isSidechain": side, "uuid": "u", "sessionId": "s",
                                        "message": {"role": kind, "content": content}, **extra},
    st.sampled_from(["assistant", "user", "summary", "progress", "file-history-snapshot", "queue-operation", "x"]),
    st.one_of(st.booleans(), st.none(), st.just("yes")),
    st.one_of(text_st, st.lists(block_st, max_size=4), st.none(), st.integers()),
    st.dictionaries(st.sampled_from(["parentUuid", "timestamp", "message", "type"]),
                    st.none() | st.integers() | st.text(max_size=5), max_size=2),
)
line_st = st.one_of(
    record_st.map(lambda r: json.dumps(r).encode() + b"\n"),
    record_st.map(lambda r: json.dumps(r, ensure_ascii=False).encode() + b"\n"),
    st.binary(max_size=200).map(lambda b: b + b"\n"),
    st.sampled_from([b"\n", b"[]\n", b"null\n", b"1e999\n", b'"s"\n', b"{" * 50 + b"\n", b"[" * 2000 + b"\n"]),
)
transcript_st = st.tuples(st.lists(line_st, max_size=12),
                          st.one_of(st.just(b""), record_st.map(lambda r: json.dumps(r).encode()[:-3]),
                                    st.binary(max_size=50)))
value_st = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
                     st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
payload_st = st.dictionaries(
    st.sampled_from(["session_id", "transcript_path", "cwd", "hook_event_name", "trigger", "custom_instructions",
                     "agent_id", "prompt_id"]) | st.text(max_size=8), value_st, max_size=7)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload_st, transcript_st, st.booleans(), st.sampled_from(["default", "subcog"]))
def test_generated_payloads_and_transcripts(fields, transcript, point_at_file, fmt):
    lines, tail = transcript
    with tempfile.TemporaryDirectory() as tmp, \
            mock.patch.dict(os.environ, {"SUBCOG_HOOK_LOG": f"{tmp}/hook.log",
                                         "SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}):
        path = Path(tmp) / "t.jsonl"
        path.write_bytes(b"".join(lines) + tail)
        if point_at_file:
            fields = {**fields, "transcript_path": str(path)}
        raw = json.dumps(fields).encode()
        for dry_run in (False, True):
            result = pre_compact(raw, HookOptions(db=Path(tmp) / "s.db", dry_run=dry_run, budget_secs=10))
            json.dumps(result.report())
            out = capture_output(result, "pre-compact", fmt)
            if fmt == "default":
                assert problems("PreCompact", out) == [] and out.startswith("subcog:")
            else:
                assert isinstance(json.loads(out)["hookSpecificOutput"]["additionalContext"], str)
            if point_at_file and isinstance(fields.get("transcript_path"), str):
                assert result.errors == [] or all("capture" in e["summary"] for e in result.errors), result.errors


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_transcripts_through_the_cli(tmp_path, seed):
    rng = random.Random(seed)
    sample = (SAMPLES / "session-a.jsonl").read_bytes().splitlines(keepends=True)
    lines = []
    for _ in range(40):
        pick = rng.random()
        if pick < 0.5:
            lines.append(rng.choice(sample))
        elif pick < 0.7:
            lines.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) + b"\n")
        elif pick < 0.85:
            line = rng.choice(sample)
            lines.append(line[:rng.randrange(1, len(line))] + b"\n")
        else:
            lines.append(assistant(rng.choice(TEXTS)))
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(lines) + rng.choice(sample)[:50])
    db = tmp_path / "s.db"
    for fields in (json.loads(payload(path)), {"transcript_path": str(path), "session_id": None, "extra": [1]}):
        accepted(hook(tmp_path, db, json.dumps(fields).encode()), tmp_path)
    assert session_start(tmp_path, db, start("sess-cli")).startswith('{"hookSpecificOutput"')


# -- install-hooks ------------------------------------------------------------------------------------------
def install(project: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli("install-hooks", "--project", str(project), *args, environ=clean_environ(answer_when_done=False),
                   timeout=60, text=True)


def test_install_hooks_writes_every_hook_and_merges(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    proc = install(project)
    assert proc.returncode == 0, proc.stderr
    settings_file = project / ".claude" / "settings.json"
    data = json.loads(settings_file.read_text())
    (pre,) = data["hooks"]["PreCompact"]
    (ss,) = data["hooks"]["SessionStart"]
    assert pre["matcher"] == "" and ss["matcher"] == ""   # SessionStart: every source (startup ... compact)
    assert pre["hooks"][0]["type"] == "command" and pre["hooks"][0]["command"].endswith("command.py pre-compact")
    assert ss["hooks"][0]["command"].endswith("command.py session-start")
    assert pre["hooks"][0]["timeout"] == 30 and ss["hooks"][0]["timeout"] == 10
    for event, sub in (("UserPromptSubmit", "user-prompt-submit"), ("SessionEnd", "session-end"),
                       ("PostCompact", "post-compact")):
        (group,) = data["hooks"][event]
        assert group["hooks"][0]["command"].endswith(f"command.py {sub}")
    # the command lines as the client runs them (through the shell): a capture, then the index it gives back
    db = tmp_path / "installed.db"
    env = base_env(tmp_path, SUBCOG_DB=str(db), SUBCOG_HOOK_DOMAIN="installed")
    ran = subprocess.run(pre["hooks"][0]["command"], shell=True, input=payload(copy_sample(tmp_path, "session-a")),
                         capture_output=True, env=env, timeout=60)
    assert accepted(ran).startswith("subcog: captured ")
    ran = subprocess.run(ss["hooks"][0]["command"], shell=True, input=start("sess-new", "startup"), capture_output=True,
                         env=env, timeout=60)
    assert ran.returncode == 0 and ran.stderr == b"" and problems("SessionStart", ran.stdout.decode()) == []
    assert "subcog://installed/" in ran.stdout.decode()
    again = install(project)
    assert again.returncode == 0 and "unchanged" in again.stdout

    other = tmp_path / "other"
    (other / ".claude").mkdir(parents=True)
    mine = {"model": "opus", "hooks": {"PreCompact": [{"matcher": "manual", "hooks": [
        {"type": "command", "command": "echo mine"}]}], "Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}
    (other / ".claude" / "settings.json").write_text(json.dumps(mine))
    proc = install(other)
    assert proc.returncode == 0 and "updated" in proc.stdout
    merged = json.loads((other / ".claude" / "settings.json").read_text())
    assert merged["model"] == "opus" and merged["hooks"]["Stop"] == mine["hooks"]["Stop"]
    assert merged["hooks"]["PreCompact"][0] == mine["hooks"]["PreCompact"][0]
    assert [g["matcher"] for g in merged["hooks"]["PreCompact"]] == ["manual", ""]
    assert [g["matcher"] for g in merged["hooks"]["SessionStart"]] == [""]
    assert "unchanged" in install(other).stdout


def test_an_earlier_installs_command_path_keeps_working_and_is_rewritten(tmp_path):
    """Installs made before the hook folder was split run `.../subcog_store/hook/command.py`: it still answers
    as today's command does, and install-hooks rewrites it to today's path in place."""
    project = tmp_path / "proj"
    project.mkdir()
    assert install(project).returncode == 0
    settings_file = project / ".claude" / "settings.json"
    data = json.loads(settings_file.read_text())
    today = data["hooks"]["PreCompact"][0]["hooks"][0]["command"]
    assert "/claude_code/command.py" in today
    old = today.replace("/claude_code/command.py", "/hook/command.py")
    env = base_env(tmp_path, SUBCOG_DB=str(tmp_path / "old.db"), SUBCOG_HOOK_DOMAIN="installed", **UNHURRIED)
    ran = subprocess.run(old, shell=True, input=payload(copy_sample(tmp_path, "session-a")), capture_output=True,
                         env=env, timeout=BROKEN_RUN_SECS)
    assert accepted(ran) == "subcog: captured 7 memories, skipped 1 duplicate"
    for group in data["hooks"].values():
        for entry in group[0]["hooks"]:
            entry["command"] = entry["command"].replace("/claude_code/command.py", "/hook/command.py")
    settings_file.write_text(json.dumps(data))
    assert "updated" in install(project).stdout
    rewritten = json.loads(settings_file.read_text())
    assert rewritten["hooks"]["PreCompact"] == [{"matcher": "", "hooks": [{"type": "command", "command": today,
                                                                          "timeout": 30}]}]
    assert "/hook/command.py" not in settings_file.read_text()


def test_install_hooks_refuses_invalid_json(tmp_path):
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    settings_file = project / ".claude" / "settings.json"
    settings_file.write_bytes(b'{"hooks": {,}')
    proc = install(project)
    assert proc.returncode == 2
    assert "not valid JSON" in proc.stderr and "Traceback" not in proc.stderr
    assert settings_file.read_bytes() == b'{"hooks": {,}'
    assert sorted(p.name for p in (project / ".claude").iterdir()) == ["settings.json"]


def end_payload(path: Path | str | None, session: str = "sess-cli") -> bytes:
    return payload(path, session, hook_event_name="SessionEnd", reason="exit")


def test_session_end_captures_from_where_pre_compact_stopped(tmp_path):
    """Pre-compact, then more of the session, then its end: only the new lines are captured, once."""
    db = tmp_path / "s.db"
    transcript = copy_sample(tmp_path, "session-a")
    env = base_env(tmp_path, **UNHURRIED)   # a run stopped early would leave the end more than the new lines
    accepted(hook(tmp_path, db, payload(transcript), env=env, timeout=BROKEN_RUN_SECS))
    before = count_memories(db)
    with transcript.open("ab") as f:
        f.write(assistant("Decision: the nightly export job runs at 03:15 UTC, because the database backup "
                          "finishes at 03:00 and the export reads the replica."))
    for _ in range(2):   # the second end finds nothing new
        end = hook(tmp_path, db, end_payload(transcript), sub="session-end", env=env, timeout=BROKEN_RUN_SECS)
        assert end.returncode == 0 and end.stderr == b"" and problems("SessionEnd", end.stdout.decode()) == []
        assert count_memories(db) == before + 1
    assert_log_clean(tmp_path)


@pytest.mark.parametrize("case", ["missing", "torn", "empty payload"])
def test_session_end_with_a_missing_or_torn_transcript(tmp_path, case):
    db = tmp_path / "s.db"
    transcript = tmp_path / "t.jsonl"
    if case == "torn":
        transcript.write_bytes(assistant("Decision: we keep the audit log for 400 days because of the contract.")
                               + b'{"type": "assistant", "message": {"content": [{"type": "te')
    stdin = b"" if case == "empty payload" else end_payload(transcript)
    end = hook(tmp_path, db, stdin, sub="session-end")
    assert end.returncode == 0 and end.stderr == b"" and problems("SessionEnd", end.stdout.decode()) == []
    if case == "torn":   # the complete line is captured, the torn one waits for its end
        assert count_memories(db) == 1
    else:
        assert not db.exists() or count_memories(db) == 0
