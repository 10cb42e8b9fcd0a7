"""The warm worker (issue #13): the same hooks give the same answers with and without it, and every fault (a
stale socket, a socket or directory of another user, a worker killed mid-request, wedged, of an older version,
racing starters, a full disk, garbage on the socket) still gives the right answer within the budget, loses
nothing, and the next call recovers. Every worker a test starts is stopped by it; the session ends with a check
that none is left (by /proc: the worker's command line and its XDG_RUNTIME_DIR under pytest's temp root).

Each test gets its own XDG_RUNTIME_DIR (`rt` fixture), so its worker is private to it.
"""
from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import apsw
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import worker_pids, clean_environ, cli_command, hook_output_problems, shared_path
from helpers import BROKEN_RUN_SECS, UNHURRIED, read_rows, run_cli, run_hook, wait_for
from subcog_store.worker import client, lifecycle, protocol

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
CLI = cli_command()
IS_ROOT = os.geteuid() == 0
MODES = ("in-process", "worker")
TEXTS = [
    "We decided to use PgBouncer in transaction mode for the checkout database, because every request opened "
    "its own session and the pool ran out of connections during the load test.",
    "Learned that the ORM keeps a transaction open for the whole request even when the handler only reads from "
    "the cache, which leaves connections idle in transaction.",
    "Pattern: every repository class takes a Connection in its constructor and never opens its own, so tests "
    "can pass an in-memory database.",
    "We decided to cache user sessions in Redis with a TTL of 5 minutes, because sessions are read on every "
    "request and Postgres was the bottleneck.",
    "Discovered that the retry middleware retried POST requests as well, which is what caused the double "
    "charges on the payment provider.",
    "Convention: migration files are named YYYYMMDD_HHMM_description.sql and each one runs inside its own "
    "transaction.",
    "We chose Kafka for the order events instead of RabbitMQ because consumers must be able to replay a week "
    "of history after an outage.",
    "We decided to store money as integer cents in a bigint column, never as floating point, after the "
    "rounding bug in the invoice totals.",
]


# -- harness ------------------------------------------------------------------------------------------------------
class Runtime:
    """One test's worker world: its XDG_RUNTIME_DIR, hook log and environment."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.run = tmp / "run"
        self.run.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.log = tmp / "hook.log"
        self.env = clean_environ({"XDG_RUNTIME_DIR": str(self.run), "SUBCOG_HOOK_LOG": str(self.log)})
        self.paths = protocol.Paths(self.env)

    def with_env(self, **extra: str) -> dict[str, str]:
        return {**self.env, **extra}

    def unhurried(self, **extra: str) -> dict[str, str]:
        """For a test that checks exactly what a run captured, or that the worker served it (helpers.UNHURRIED)."""
        return {**self.env, **UNHURRIED, **extra}

    def cli(self, *args: str, env: dict | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
        return run_cli(*args, environ=env or self.env, timeout=timeout)

    def start(self, env: dict | None = None) -> int:
        proc = self.cli("worker", "start", "--json", env=env)
        assert proc.returncode == 0, proc
        info = json.loads(proc.stdout)
        assert info["state"] == "running", info
        return int(info["pid"])

    def stop(self, env: dict | None = None) -> dict:
        proc = self.cli("worker", "stop", "--json", env=env)
        assert proc.returncode == 0, proc
        return json.loads(proc.stdout)

    def pids(self) -> list[int]:
        return worker_pids(str(self.run))

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""


@pytest.fixture
def rt(tmp_path):
    runtime = Runtime(tmp_path)
    yield runtime
    if runtime.pids():
        runtime.stop()
    assert not runtime.pids(), "the test left its worker running"


def payload(path: Path, session: str = "sess") -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(path), "cwd": "/home/dev/shop",
                       "hook_event_name": "PreCompact", "trigger": "manual"}).encode()


def start_payload(session: str, source: str = "compact") -> bytes:
    return json.dumps({"session_id": session, "transcript_path": "/x.jsonl", "cwd": "/home/dev/shop",
                       "hook_event_name": "SessionStart", "source": source}).encode()


def hook(env: dict, db: Path, stdin: bytes, *args: str, sub: str = "pre-compact",
         timeout: float = BROKEN_RUN_SECS) -> subprocess.CompletedProcess:   # bounds a broken run, not a figure
    return run_hook(sub, stdin, *args, db=db, environ=env, timeout=timeout)


def hook_in_background(env: dict, db: Path, stdin: bytes) -> subprocess.Popen:
    return run_hook("pre-compact", stdin, db=db, environ=env, background=True)


def hold_lock(db: Path) -> subprocess.Popen:
    """Another process holding the store's write lock until the test kills it."""
    locker = subprocess.Popen([sys.executable, "-c", "import sys, time, apsw; c = apsw.Connection(sys.argv[1]); "
                               "c.execute('begin exclusive'); print('locked', flush=True); time.sleep(600)", str(db)],
                              stdout=subprocess.PIPE)
    assert locker.stdout.readline().strip() == b"locked"
    return locker


def worker_busy(rt: "Runtime") -> bool:
    """The worker has taken a request in (it is running it): a state to wait for instead of sleeping."""
    try:
        return bool(client.request("status", paths=rt.paths)[0].get("busy"))
    except Exception:   # noqa: BLE001 - not answering yet
        return False


# what a worker woken after its caller gave up logs for the request it finds (it never runs it)
ABANDONED = re.compile(r"dropped a request|connection ended|caller went away|no environment")


def output(proc: subprocess.CompletedProcess, event: str = "PreCompact") -> str:
    """Exit 0, nothing on stderr, output the client accepts; returns stdout."""
    assert proc.returncode == 0, proc
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    out = proc.stdout.decode("utf-8")
    assert hook_output_problems(event, out) == []
    return out


def status_line(out: str) -> str:
    """The first line of a pre-compact output, without its closing full stop."""
    return out.splitlines()[0].rstrip(".") if out else ""


def sample(tmp: Path, name: str) -> Path:
    target = tmp / f"{name}.jsonl"
    shutil.copyfile(SAMPLES / f"{name}.jsonl", target)
    return target


def transcript(tmp: Path, texts: list[str] = TEXTS, name: str = "t.jsonl") -> Path:
    path = tmp / name
    path.write_text("".join(json.dumps({"type": "assistant", "isSidechain": False, "sessionId": "s", "uuid": f"u{i}",
                                        "message": {"role": "assistant", "content": [{"type": "text", "text": t}]}})
                            + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    return path


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    return read_rows(db, sql, params)


def active(db: Path) -> list[tuple[str, str]]:
    return sorted(rows(db, "select namespace, content from memories where status = 'active'"))


def settle(capture_hook, db: Path, max_runs: int = 30) -> None:
    """Run `capture_hook` until no capture is left pending or deferred in `db` (each run must go on with it: a
    progress criterion, not a count a loaded machine could break)."""
    before = None
    for _ in range(max_runs):
        capture_hook()
        left = rows(db, "select p.transcript_path, coalesce(o.byte_offset, 0), coalesce(o.record_chars, 0), "
                        "coalesce(o.piece_done, 0) from hook_pending p left join hook_offsets o "
                        "using (session_id, transcript_path) order by 1")
        if not left:
            return
        assert before is None or left != before, f"no progress: {left}"
        before = left
    pytest.fail(f"captures still pending after {max_runs} runs")


def served_by_worker(rt: Runtime, since: int, event: str = "pre-compact") -> bool:
    return f": {event} answered in " in rt.log_text()[since:]


def wait_ready(rt: Runtime, timeout: float = 300.0) -> int:
    info = lifecycle.wait_ready(rt.paths, timeout)
    assert info is not None, "no worker answered"
    return int(info["pid"])


# -- the same answers both ways -------------------------------------------------------------------------------------
@pytest.fixture(params=MODES)
def mode(request, rt):
    """A hook environment for each way: in process (SUBCOG_WORKER_ENABLED=false) or through a warm worker."""
    if request.param == "worker":
        rt.start()
        return rt.env
    return rt.with_env(SUBCOG_WORKER_ENABLED="false")


def scenario(tmp: Path, env: dict) -> list[str]:
    """The hook-CLI scenarios of tests/test_hook_cli.py, each hook's stdout in order."""
    db = tmp / "s.db"
    outs = []
    for stdin, args in [(b"", ()), (b"not json {", ()), (b"{}", ()),
                        (payload(sample(tmp, "session-a"), "sess-a"), ("--dry-run",)),
                        (payload(sample(tmp, "session-a"), "sess-a"), ()),
                        (payload(sample(tmp, "session-b"), "sess-b"), ("--format", "json")),
                        (payload(sample(tmp, "session-a"), "sess-a"), ())]:
        outs.append(output(hook(env, db, stdin, *args)))
    proc = hook(env, db, payload(sample(tmp, "session-b"), "sess-b2"), "--format", "subcog")
    assert proc.returncode == 0 and proc.stderr == b""   # the legacy report (which the real client refuses)
    outs.append(proc.stdout.decode())
    for stdin in (start_payload("sess-a"), start_payload("sess-a"), start_payload("sess-b", "startup"), b"garbage"):
        outs.append(output(hook(env, db, stdin, sub="session-start"), "SessionStart"))
    outs.append(output(hook(env, tmp / "no" / "dir" / "s.db", payload(sample(tmp, "session-a")))))
    empty = tmp / "no-model"
    empty.mkdir(exist_ok=True)
    outs.append(output(hook({**env, "SUBCOG_MODEL_DIR": str(empty)}, tmp / "text.db",
                            payload(sample(tmp, "session-a")))))
    outs.append(output(hook({**env, "SUBCOG_HOOK_BUDGET_SECS": "abc"}, db, payload(sample(tmp, "session-a"), "x"))))
    return [re_urn(o).replace(str(tmp), "<tmp>") for o in outs]


def re_urn(text: str) -> str:
    """Memory ids are random: compare outputs with them masked, and a list's items in sorted order (the
    recall index orders memories of equal rank by id, which differs between two stores)."""
    import re

    text = re.sub(r"(subcog://[^/\s]+/[^/\s]+/)[0-9a-z]+", r"\1ID", text)
    if not text.startswith('{"hookSpecificOutput"'):
        return text
    data = json.loads(text)
    lines, out, items = data["hookSpecificOutput"]["additionalContext"].split("\n"), [], []
    for line in lines + [""]:
        if line.startswith("- "):
            items.append(line)
            continue
        out += sorted(items) + [line]
        items = []
    data["hookSpecificOutput"]["additionalContext"] = "\n".join(out[:-1])
    return json.dumps(data, ensure_ascii=False)


def test_the_same_answers_and_store_both_ways(tmp_path):
    results = {}
    for way in MODES:
        rt = Runtime(tmp_path / way)
        env = rt.unhurried(SUBCOG_WORKER_ENABLED="false") if way == "in-process" else rt.unhurried()
        try:
            if way == "worker":
                rt.start()
            mark = len(rt.log_text())
            outs = scenario(rt.tmp, env)
            if way == "worker":
                assert rt.log_text()[mark:].count("answered in") >= len(outs) - 1, rt.log_text()[mark:]
                assert "in process" not in rt.log_text()[mark:], rt.log_text()[mark:]
        finally:
            if rt.pids():
                rt.stop()
        results[way] = (outs, active(rt.tmp / "s.db"), active(rt.tmp / "text.db"))
    for i, (a, b) in enumerate(zip(results["worker"][0], results["in-process"][0])):
        assert a == b, f"call {i}: worker {a!r} != in process {b!r}"
    assert results["worker"] == results["in-process"]
    outs = results["worker"][0]
    assert status_line(outs[4]) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert "capture skipped" in outs[-1] and "SUBCOG_HOOK_BUDGET_SECS" in outs[-1]


def test_a_locked_database_keeps_to_the_budget_both_ways(mode, rt):
    from subcog_store.store import Store

    db = rt.tmp / "s.db"
    Store(db).close()
    locker = subprocess.Popen([sys.executable, "-c", "import sys, time, apsw; c = apsw.Connection(sys.argv[1]); "
                               "c.execute('begin exclusive'); print('locked', flush=True); time.sleep(60)", str(db)],
                              stdout=subprocess.PIPE)
    try:
        assert locker.stdout.readline().strip() == b"locked"
        # how long the wait lasts is counted on a fake clock (tests/test_faults.py); the timeout bounds a broken run
        out = output(hook({**mode, "SUBCOG_HOOK_BUDGET_SECS": "2", "SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}, db,
                          payload(sample(rt.tmp, "session-a")), timeout=120))
    finally:
        locker.kill()
        locker.wait()
    assert "see " in out and "locked" in rt.log_text()


# -- one capture, one result (issue 29, item 10) -------------------------------------------------------------------
REAL = ("mclaude-tailscale-router-update", "agentv-restore-agents-md")   # two real sessions, when ../shared is there


def transcripts(tmp: Path) -> list[Path]:
    found = [sample(tmp, "session-a"), sample(tmp, "session-b")]
    real = shared_path() / "samples" / "real" / "train"
    for name in REAL:
        if (real / f"{name}.jsonl").is_file():
            found.append(tmp / f"{name}.jsonl")
            shutil.copyfile(real / f"{name}.jsonl", found[-1])
    return found


def capture_all(env: dict, db: Path, paths: list[Path], tag: str) -> list[str]:
    """Each transcript through pre-compact, then session-start (compact), as a compaction runs them."""
    outs = []
    for i, path in enumerate(paths):
        session = f"{tag}-{i}"
        outs.append(status_line(output(hook(env, db, payload(path, session)))))
        output(hook(env, db, start_payload(session), sub="session-start"), "SessionStart")
    return outs


def other_stores(rt: Runtime, env: dict, paths: list[Path]) -> None:
    """Requests on other stores with other settings, as a worker serving other projects meets them."""
    for i, extra in enumerate([{"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"},
                               {"SUBCOG_DEDUP_THRESHOLD_DECISIONS": "0.5", "SUBCOG_HOOK_MIN_CONFIDENCE": "0.95"},
                               {"SUBCOG_DEDUP_POLICY_DEFAULT": "merge", "SUBCOG_HOOK_DOMAIN": "elsewhere"},
                               {"SUBCOG_HOOK_BUDGET_SECS": "0.2", "TZ": "Asia/Tokyo"}]):
        db = rt.tmp / f"other-{i}.db"
        for path in paths[:2]:
            hook({**env, **extra}, db, payload(path, f"other-{i}"))
            hook({**env, **extra}, db, start_payload(f"other-{i}", "startup"), sub="session-start")


def test_the_same_transcripts_give_the_same_memories_whatever_path_ran_them(tmp_path):
    """In process; through a warm worker after it served other stores with other settings; and while a worker is
    starting (the first hooks run in process, the later ones in the worker): the same memories each time. Nothing
    one request sets is left for the next. (A warm worker's first store beside in process, call by call:
    test_the_same_answers_and_store_both_ways.)"""
    rt = Runtime(tmp_path)
    paths = transcripts(tmp_path)
    # A budget no load uses up: a worker past its share hands the hook to the in-process path, and which path ran
    # is what this test controls (the budget's own handling is tested in test_faults and test_capture_bad_input).
    env = rt.with_env(SUBCOG_HOOK_DOMAIN="same-project", SUBCOG_HOOK_BUDGET_SECS="600")
    stores = {}
    try:
        capture_all({**env, "SUBCOG_WORKER_ENABLED": "false"}, tmp_path / "in-process.db", paths, "p")
        stores["in process"] = active(tmp_path / "in-process.db")
        rt.start()
        other_stores(rt, env, paths)
        mark = len(rt.log_text())
        capture_all(env, tmp_path / "after-others.db", paths, "o")
        assert "in process" not in rt.log_text()[mark:], rt.log_text()[mark:]
        stores["after other stores"] = active(tmp_path / "after-others.db")
        rt.stop()
        starting = subprocess.Popen([*CLI, "worker", "start"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=env)
        try:
            capture_all(env, tmp_path / "while-starting.db", paths, "s")
        finally:
            starting.wait(timeout=120)
        stores["while a worker starts"] = active(tmp_path / "while-starting.db")
    finally:
        if rt.pids():
            rt.stop()
    assert stores["in process"], "nothing captured"
    for way, found in stores.items():
        assert found == stores["in process"], f"{way}: {len(found)} memories, in process {len(stores['in process'])}"


# -- the worker's own life ------------------------------------------------------------------------------------------
def test_start_status_stop_leave_nothing_behind(rt):
    pid = rt.start()
    assert rt.pids() == [pid]
    assert Path(rt.paths.sock).exists() and Path(rt.paths.pid).exists()
    assert oct(os.stat(rt.paths.dir).st_mode & 0o777) == "0o700"
    assert os.stat(rt.paths.sock).st_mode & 0o077 == 0
    again = rt.start()
    assert again == pid   # a second start finds it running
    status = json.loads(rt.cli("worker", "status", "--json").stdout)
    assert status["pid"] == pid and status["state"] == "running"
    result = rt.stop()
    assert result["stopped"] and result["pid"] == pid and result["how"] == "asked"
    assert rt.pids() == [] and not Path(rt.paths.sock).exists() and not Path(rt.paths.pid).exists()
    assert json.loads(rt.cli("worker", "status", "--json").stdout)["state"] == "not running"
    assert rt.stop()["was_running"] is False


def test_a_wedged_worker_is_stopped_anyway(rt):
    pid = rt.start()
    os.kill(pid, signal.SIGSTOP)
    try:
        result = rt.stop()
    finally:
        if rt.pids():
            os.kill(pid, signal.SIGCONT)
    assert result["stopped"] and result["how"] in ("SIGTERM", "SIGKILL")
    assert rt.pids() == [] and not Path(rt.paths.sock).exists()


def test_idle_timeout_ends_the_worker(rt):
    env = rt.with_env(SUBCOG_WORKER_IDLE_SECS="3")
    rt.start(env)
    assert wait_for(lambda: not rt.pids())
    assert not Path(rt.paths.sock).exists()
    assert "exiting (idle for 3 s)" in rt.log_text()


def test_the_first_hook_starts_one_worker_and_does_its_own_work(rt):
    db = rt.tmp / "s.db"
    out = output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"))))
    assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert "worker: no worker; running pre-compact in process" in rt.log_text()
    pid = wait_ready(rt)
    mark = len(rt.log_text())
    out = output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-b"), "sess-b")))
    assert served_by_worker(rt, mark) and status_line(out).startswith("subcog: captured ")
    assert rt.pids() == [pid]


def test_disabled_means_no_worker_and_no_files(rt):
    env = rt.unhurried(SUBCOG_WORKER_ENABLED="false")
    out = output(hook(env, rt.tmp / "s.db", payload(sample(rt.tmp, "session-a"))))
    assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert rt.pids() == [] and not Path(rt.paths.dir).exists()   # the hook has ended: it started nothing
    assert "worker" not in rt.log_text()
    assert rt.cli("worker", "start", env=env).returncode == 3


def test_the_warm_path_imports_only_the_thin_client(rt):
    rt.start()
    db = rt.tmp / "s.db"
    output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"))))
    code = ("import sys; from subcog_store.cli.main import main; sys.argv = ['subcog-store'] + sys.argv[1:]; "
            "main(); print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    # the default budget: a budget in the environment is parsed by config (the thin client leaves that to it)
    proc = subprocess.run([sys.executable, "-c", code, "--db", str(db), "hook", "pre-compact"],
                          input=payload(sample(rt.tmp, "session-a")), capture_output=True, env=rt.env,
                          timeout=BROKEN_RUN_SECS)
    modules = set(proc.stderr.decode().split())
    assert "subcog_store.worker.client" in modules
    heavy = {"argparse", "dataclasses", "logging", "typing", "subcog_store.config", "subcog_store.store",
             "subcog_store.claude_code.handlers", "numpy", "apsw", "socket", "subprocess", "threading"}
    assert not modules & heavy, modules & heavy


def test_the_installed_hook_command_starts_without_site_json_or_re(rt):
    """The command install-hooks registers (python -S -P .../hook/command.py) answers through the worker with
    the standard library's lightest modules only: no `site`, no `json` package, no `re`."""
    from subcog_store.claude_code.install import hook_commands

    rt.start()
    output(hook(rt.unhurried(), rt.tmp / "warm-up.db", payload(sample(rt.tmp, "session-a"), "warm-up")))
    db = rt.tmp / "s.db"   # the worker's model is up: the hook below is answered well within its share at any load
    argv = shlex.split(hook_commands()["PreCompact"])
    assert argv[1:3] == ["-S", "-P"] and argv[-1] == "pre-compact"
    mark = len(rt.log_text())
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:-1], "--db", str(db), "pre-compact"],
                          input=payload(sample(rt.tmp, "session-a")), capture_output=True, env=rt.env,
                          timeout=BROKEN_RUN_SECS)   # the default budget, as above
    assert proc.returncode == 0
    assert status_line(proc.stdout.decode()) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert served_by_worker(rt, mark)
    lines = [line.split("|") for line in proc.stderr.decode().splitlines()]
    assert lines and all(len(parts) == 3 and parts[0].startswith("import time:") for parts in lines), lines[:3]
    loaded = {parts[2].strip() for parts in lines}
    assert "subcog_store.worker.client" in loaded
    heavy = {"site", "json", "re", "enum", "apsw", "numpy", "logging", "socket", "subcog_store.config"}
    assert not loaded & heavy, loaded & heavy
    assert len(active(db)) == 7


def test_the_in_process_repeat_path_loads_neither_numpy_nor_the_model(rt):
    """Without a worker, a transcript whose candidates are all stored already is answered by the exact tier."""
    env = rt.with_env(SUBCOG_WORKER_ENABLED="false")
    db = rt.tmp / "s.db"
    output(hook(env, db, payload(sample(rt.tmp, "session-a"))))
    code = ("import sys; from subcog_store.cli.main import main; sys.argv = ['subcog-store'] + sys.argv[1:]; "
            "main(); print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    again = payload(sample(rt.tmp, "session-a"), session="again")  # a new session: the transcript is read anew
    proc = subprocess.run([sys.executable, "-c", code, "--db", str(db), "hook", "pre-compact"], input=again,
                          capture_output=True, env=env, timeout=60)
    assert b"skipped 8 duplicates" in proc.stdout, proc.stdout
    modules = set(proc.stderr.decode().split())
    assert "subcog_store.store" in modules and not modules & {"numpy", "onnxruntime", "tokenizers"}


def test_the_in_process_prompt_hook_loads_neither_numpy_nor_the_model(rt):
    """Without a worker the prompt hook answers from the text side: numpy (~100 ms of CPU to import) and the model
    stay unloaded, and the memory that answers the prompt is still injected."""
    env = rt.with_env(SUBCOG_WORKER_ENABLED="false")
    db = rt.tmp / "s.db"
    output(hook(env, db, payload(sample(rt.tmp, "session-a"))))
    code = ("import sys; from subcog_store.cli.main import main; sys.argv = ['subcog-store'] + sys.argv[1:]; "
            "main(); print(' '.join(sorted(sys.modules)), file=sys.stderr)")
    prompt = json.dumps({"session_id": "later", "transcript_path": "/x.jsonl", "cwd": "/home/dev/shop",
                         "hook_event_name": "UserPromptSubmit",
                         "prompt": "How do we pool the Postgres connections, PgBouncer in transaction mode?"}).encode()
    proc = subprocess.run([sys.executable, "-c", code, "--db", str(db), "hook", "user-prompt-submit"], input=prompt,
                          capture_output=True, env=env, timeout=60)
    out = proc.stdout.decode()   # stderr holds the module list: output() would refuse it
    assert proc.returncode == 0 and hook_output_problems("UserPromptSubmit", out) == [] and "PgBouncer" in out, out
    modules = set(proc.stderr.decode().split())
    assert "subcog_store.recall.search" in modules and not modules & {"numpy", "onnxruntime", "tokenizers"}


# -- faults -------------------------------------------------------------------------------------------------------
def test_a_stale_socket_is_replaced(rt):
    os.makedirs(rt.paths.dir, mode=0o700, exist_ok=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with protocol.Address(rt.paths.sock) as address:
        stale.bind(address)
    stale.close()   # the file stays, nobody listens: a worker killed with SIGKILL
    db = rt.tmp / "s.db"
    out = output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"))))
    assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert "no worker (stale socket)" in rt.log_text()
    wait_ready(rt)
    mark = len(rt.log_text())
    out = output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"))))
    assert served_by_worker(rt, mark) and status_line(out) == "subcog: nothing new to capture since the last run"


@pytest.mark.skipif(not IS_ROOT, reason="needs root to make files of another user")
def test_a_socket_of_another_user_is_never_used(rt):
    os.makedirs(rt.paths.dir, mode=0o700, exist_ok=True)
    fake = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with protocol.Address(rt.paths.sock) as address:
        fake.bind(address)
    fake.listen(8)
    fake.setblocking(False)
    os.chown(rt.paths.sock, 65534, 65534)
    try:
        out = output(hook(rt.unhurried(), rt.tmp / "s.db", payload(sample(rt.tmp, "session-a"))))
        assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
        assert "is owned by uid 65534" in rt.log_text()
        with pytest.raises(BlockingIOError):
            fake.accept()   # nobody connected to it
        wait_ready(rt)   # the hook started a worker, which put its own socket in place
        assert os.stat(rt.paths.sock).st_uid == os.getuid()
    finally:
        fake.close()


@pytest.mark.skipif(not IS_ROOT, reason="needs root to serve a socket as another user")
def test_a_socket_served_by_another_user_is_refused(rt):
    os.makedirs(rt.paths.dir, mode=0o700, exist_ok=True)
    server = subprocess.Popen([sys.executable, "-c", (
        "import os, socket, sys, time\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(os.path.basename(sys.argv[1]))\n"
        "os.setgid(65534); os.setuid(65534); s.listen(8); print('up', flush=True)\n"
        "c, _ = s.accept(); c.sendall(b'\\0\\0\\0\\x0e\\0\\0\\0\\0{\"st\":\"ready\"}'); time.sleep(30)\n"),
        rt.paths.sock], stdout=subprocess.PIPE, cwd=rt.paths.dir)
    try:
        assert server.stdout.readline().strip() == b"up"
        assert os.stat(rt.paths.sock).st_uid == os.getuid()   # the file is ours: only SO_PEERCRED tells
        out = output(hook(rt.unhurried(), rt.tmp / "s.db", payload(sample(rt.tmp, "session-a"))))
        assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
        assert "worker socket served by uid 65534" in rt.log_text()
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("kind", ["foreign-owner", "open-mode", "symlink"])
def test_an_unsafe_worker_directory_is_never_used(rt, kind):
    if kind == "foreign-owner" and not IS_ROOT:
        pytest.skip("needs root to make a directory of another user")
    if kind == "symlink":
        target = rt.tmp / "elsewhere"
        target.mkdir(mode=0o700)
        os.symlink(target, rt.paths.dir)
    else:
        os.mkdir(rt.paths.dir, 0o700)
        if kind == "foreign-owner":
            os.chown(rt.paths.dir, 65534, 65534)
        else:
            os.chmod(rt.paths.dir, 0o755)
    out = output(hook(rt.unhurried(), rt.tmp / "s.db", payload(sample(rt.tmp, "session-a"))))
    assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert "worker directory unsafe" in rt.log_text()
    assert rt.pids() == [] and os.listdir(rt.paths.dir) == []   # the hook has ended: it started nothing
    assert json.loads(rt.cli("worker", "status", "--json").stdout)["state"] == "unsafe"


def test_a_worker_killed_mid_request_loses_nothing(rt):
    from subcog_store.store import Store

    db = rt.tmp / "s.db"
    Store(db).close()
    pid = rt.start()
    locker = hold_lock(db)
    try:
        proc = hook_in_background(rt.unhurried(), db, payload(sample(rt.tmp, "session-a")))
        assert wait_for(lambda: worker_busy(rt) or proc.poll() is not None) and proc.poll() is None
        os.kill(pid, signal.SIGKILL)   # inside the hook: the store locked, nothing written yet
    finally:
        locker.kill()   # the hook, back in process, finds the store free
        locker.wait()
    out, err = proc.communicate(timeout=BROKEN_RUN_SECS)
    assert proc.returncode == 0 and err == b""
    assert status_line(out.decode()) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert "worker connection lost" in rt.log_text()
    assert len(active(db)) == 7
    wait_ready(rt)   # the hook found the socket dead and started a new worker
    mark = len(rt.log_text())
    out = output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"))))
    assert served_by_worker(rt, mark) and status_line(out) == "subcog: nothing new to capture since the last run"


def test_a_worker_dead_with_our_frame_unread_is_a_lost_connection():
    """A worker killed before it read the client's frame resets the connection (ECONNRESET, not EOF): the
    client says "connection lost" and starts a new worker, as for a clean close (the load failure of the test
    above: killed between answering "ready" and reading "go")."""
    ours, workers = socket.socketpair()
    try:
        protocol.send(ours, {"go": True})
        workers.close()   # closed with the frame unread
        with pytest.raises(ConnectionResetError) as reset:
            protocol.recv(ours, time.monotonic() + 60)
    finally:
        ours.close()
    lost = client._failed(reset.value)
    assert "worker connection lost" in str(lost) and lost.spawn
    closed = client._failed(protocol.ProtocolError("connection closed"))
    assert "worker connection lost" in str(closed) and closed.spawn


def test_a_silent_worker_is_waited_for_a_share_of_the_budget():
    """The first frame's wait is a speed fallback (a late frame means the hook runs in process, never twice): at
    the default budget a wedged worker costs 0.5 s as before; an unhurried budget (the tests that assert the worker
    served a hook) gives a live worker on a loaded machine longer, bounded."""
    assert client.first_frame_secs(protocol.HOOK_BUDGET_SECS) == client.FIRST_FRAME_SECS == 0.5
    assert client.first_frame_secs(2.0) == client.FIRST_FRAME_SECS
    assert client.first_frame_secs(float(UNHURRIED["SUBCOG_HOOK_BUDGET_SECS"])) == client.FIRST_FRAME_MAX_SECS


# -- answering before the capture has finished (SUBCOG_HOOK_ANSWER_SECS) -------------------------------------------
def finished_in_background(rt: Runtime, since: int, timeout: float = 300.0) -> bool:
    return wait_for(lambda: ": pre-compact finished in the background" in rt.log_text()[since:], timeout=timeout)


def test_a_capture_answers_first_then_stores_what_in_process_would(rt):
    """Answered at once (the capture recorded as pending first); once it finishes, the store is the one the
    in-process hook makes, nothing is pending, and the compaction's session start reports it."""
    from subcog_store.claude_code.report import BACKGROUND_MESSAGE

    path = sample(rt.tmp, "session-a")
    reference = rt.tmp / "ref.db"
    local = rt.with_env(SUBCOG_WORKER_ENABLED="false")
    output(hook(local, reference, payload(path)))
    db = rt.tmp / "s.db"
    rt.start()
    mark = len(rt.log_text())
    out = output(hook(rt.with_env(SUBCOG_HOOK_ANSWER_SECS="0"), db, payload(path)))
    assert status_line(out) == BACKGROUND_MESSAGE and "Lasting facts" in out
    # one snapshot: recorded as pending, or already saved (the two change in one transaction), never neither
    assert rows(db, "select (select count(*) from hook_pending) + (select count(*) from hook_runs)") == [(1,)]
    assert finished_in_background(rt, mark)
    assert active(db) == active(reference) and len(active(db)) == 7
    assert rows(db, "select count(*) from hook_pending") == [(0,)]
    assert rows(db, "select status, captured, skipped from hook_runs") == [("ok", 7, 1)]
    report = output(hook(rt.env, db, start_payload("sess"), sub="session-start"), "SessionStart")
    assert "Captured 7 memories" in report
    assert re_urn(report) == re_urn(output(hook(local, reference, start_payload("sess"), sub="session-start"),
                                           "SessionStart"))


def test_the_worker_embeds_the_sessions_text_once_idle(rt):
    """The capture stores the sessions' text and embeds none of it on the hook's path; the worker embeds it
    between requests (worker/backlog.py), and answers a hook sent meanwhile."""
    db = rt.tmp / "s.db"
    rt.start()
    output(hook(rt.env, db, payload(transcript(rt.tmp))))
    texts = rows(db, "select count(*) from session_text")[0][0]
    assert texts > 0
    assert wait_for(lambda: rows(db, "select count(*) from session_text where embedded = 0") == [(0,)])
    status, _ = client.request("status", paths=rt.paths)
    assert status["session_texts_embedded"] == texts
    output(hook(rt.env, db, start_payload("sess"), sub="session-start"), "SessionStart")


def test_the_worker_holds_the_sign_bits_of_the_scopes_it_checks(rt):
    """The worker turns db/bitcache.py on (its threshold at 0 here): its first capture's semantic check loads
    the scope's sign bits (only a check in a process with the cache on does), the next capture's checks use
    them, and the store is still the one the in-process hooks make."""
    reference = rt.tmp / "ref.db"
    local = rt.with_env(SUBCOG_WORKER_ENABLED="false")
    first, second = payload(sample(rt.tmp, "session-a")), payload(sample(rt.tmp, "session-b"), "sess-b")
    output(hook(local, reference, first))
    output(hook(local, reference, second))
    db = rt.tmp / "s.db"
    env = rt.with_env(SUBCOG_KNN_CACHE_MIN_ROWS="0")
    rt.start(env)
    output(hook(env, db, first))
    assert wait_for(lambda: "bitcache: loaded" in rt.log_text())
    output(hook(env, db, second))
    assert active(db) == active(reference)


def test_a_recall_hook_answers_before_its_log_row_which_follows(rt):
    """The worker answers a prompt with its output, then writes recall_log; the next prompt of the session
    (queued behind it) sees that row and does not inject the same memories again, as in process."""
    db = rt.tmp / "s.db"
    output(hook(rt.with_env(SUBCOG_WORKER_ENABLED="false"), db, payload(sample(rt.tmp, "session-a"))))
    prompt = json.dumps({"session_id": "later", "transcript_path": "/x.jsonl", "cwd": "/home/dev/shop",
                         "hook_event_name": "UserPromptSubmit",
                         "prompt": "How do we pool connections for the checkout database?"}).encode()
    outs = {}
    for way in MODES:
        env = rt.with_env(SUBCOG_WORKER_ENABLED="false") if way == "in-process" else rt.env
        if way == "worker":
            rt.start()
            output(hook(env, db, start_payload("warm-up", "startup"), sub="session-start"), "SessionStart")
        target = rt.tmp / f"{way}.db"
        shutil.copyfile(db, target)
        mark = len(rt.log_text())
        first = output(hook(env, target, prompt, sub="user-prompt-submit"), "UserPromptSubmit")
        second = output(hook(env, target, prompt, sub="user-prompt-submit"), "UserPromptSubmit")
        if way == "worker":
            assert rt.log_text()[mark:].count(": user-prompt-submit answered in ") == 2
            assert wait_for(lambda: not client.request("status", paths=rt.paths)[0].get("busy"))
        logged = rows(target, "select hook, memory_ids from recall_log where hook = 'user-prompt-submit' order by id")
        outs[way] = (first, second, logged)
    assert outs["worker"][0] and "PgBouncer" in outs["worker"][0]
    assert outs["worker"][1] == "" and outs["in-process"][1] == ""   # given once per session
    assert [h for h, _ in outs["worker"][2]] == ["user-prompt-submit"] * 2
    assert json.loads(outs["worker"][2][0][1]) and json.loads(outs["worker"][2][1][1]) == []


def test_a_worker_killed_after_answering_loses_nothing(rt):
    """Killed while it finishes a capture it already answered for: the pending record makes a later capture hook
    (another session, in process) redo it from the saved offset, and the store ends as the in-process one."""
    texts = [f"{t} (case {i} of the incident review for service S{i})" for i, t in enumerate(TEXTS * 10)]
    path = transcript(rt.tmp, texts)
    reference = rt.tmp / "ref.db"
    local = rt.with_env(SUBCOG_WORKER_ENABLED="false")
    settle(lambda: output(hook(local, reference, payload(path, "big"))), reference)
    db = rt.tmp / "s.db"
    pid = rt.start()
    out = output(hook(rt.with_env(SUBCOG_HOOK_ANSWER_SECS="0"), db, payload(path, "big")))
    os.kill(pid, signal.SIGKILL)
    assert status_line(out).startswith("subcog: capturing")
    pending = rows(db, "select session_id, transcript_path from hook_pending")   # the worker is dead: stable
    saved = rows(db, "select count(*) from hook_runs where session_id = 'big'")[0][0]
    assert pending == [("big", str(path))] or saved == 1
    assert len(active(db)) < len(active(reference)) or saved == 1   # killed mid-way (practically always)
    with apsw.Connection(str(db)) as con:   # as if it had been left long ago
        con.execute("update hook_pending set queued_at = '2000-01-01T00:00:00.000Z'")
    other = transcript(rt.tmp, ["A line of small talk."], name="other.jsonl")
    settle(lambda: output(hook(local, db, payload(other, "later"))), db)   # later capture hooks finish it
    assert active(db) == active(reference)
    assert rows(db, "select count(*) from hook_pending") == [(0,)]
    assert rows(db, "select count(*) from memories group by content_hash having count(*) > 1") == []
    assert rows(db, "select count(*) from hook_runs where session_id = 'big' and status = 'ok'")[0][0] >= 1
    assert "redoing a pending pre-compact capture" in rt.log_text()


def test_a_pending_capture_of_a_vanished_transcript_is_dropped(rt):
    db = rt.tmp / "s.db"
    gone = transcript(rt.tmp, TEXTS[:2], name="gone.jsonl")
    local = rt.with_env(SUBCOG_WORKER_ENABLED="false")
    output(hook(local, db, payload(transcript(rt.tmp, ["Hello."], name="first.jsonl"), "first")))
    with apsw.Connection(str(db)) as con:
        con.execute("insert into hook_pending (session_id, transcript_path, payload, queued_at) "
                    "values ('old', ?, ?, '2000-01-01T00:00:00.000Z')",
                    (str(gone), json.dumps({"session_id": "old", "transcript_path": str(gone),
                                            "event": "session-end"})))
    gone.unlink()
    output(hook(local, db, payload(transcript(rt.tmp, ["Hi."], name="second.jsonl"), "second")))
    assert rows(db, "select count(*) from hook_pending") == [(0,)]
    assert "redoing a pending session-end capture" in rt.log_text()


def test_a_worker_killed_between_captures_duplicates_nothing(rt):
    """Killed while it commits: what it committed is skipped by the fallback as exact duplicates."""
    texts = [f"{t} (case {i} of the incident review for service {chr(65 + i)})" for i, t in enumerate(TEXTS * 3)]
    path = transcript(rt.tmp, texts)
    reference = rt.tmp / "ref.db"
    output(hook(rt.with_env(SUBCOG_WORKER_ENABLED="false"), reference, payload(path)))
    db = rt.tmp / "s.db"
    pid = rt.start()
    proc = hook_in_background(rt.env, db, payload(path))

    def some_stored() -> bool:
        try:
            return db.exists() and rows(db, "select count(*) from memories")[0][0] > 0
        except apsw.Error:
            return False
    wait_for(some_stored, step=0.002)
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == b""
    assert status_line(out.decode()).startswith("subcog: ")
    assert active(db) == active(reference)
    assert rows(db, "select count(*) from memories group by content_hash having count(*) > 1") == []


def test_a_wedged_worker_costs_a_moment_and_runs_nothing_twice(rt):
    db = rt.tmp / "s.db"
    pid = rt.start()
    os.kill(pid, signal.SIGSTOP)
    try:
        out = output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"), "wedged")))
        mark = len(rt.log_text())
    finally:
        os.kill(pid, signal.SIGCONT)
    assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert "worker did not answer in time" in rt.log_text()
    # the woken worker reads the abandoned request and must not run it: wait until it has dealt with it
    assert wait_for(lambda: ABANDONED.search(rt.log_text()[mark:])), rt.log_text()[mark:]
    assert rows(db, "select count(*) from hook_runs where session_id = 'wedged'") == [(1,)]
    assert rt.pids() == [pid]
    mark = len(rt.log_text())
    output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"), "wedged")))
    assert served_by_worker(rt, mark)


def test_a_worker_wedged_mid_request_gives_way_within_the_budget(rt):
    from subcog_store.store import Store

    db = rt.tmp / "s.db"
    Store(db).close()
    pid = rt.start()
    locker = hold_lock(db)
    try:
        proc = hook_in_background(rt.with_env(SUBCOG_HOOK_BUDGET_SECS="8", SUBCOG_DEDUP_SEMANTIC_ENABLED="false"), db,
                                  payload(sample(rt.tmp, "session-a")))
        assert wait_for(lambda: worker_busy(rt) or proc.poll() is not None) and proc.poll() is None
        os.kill(pid, signal.SIGSTOP)   # wedged inside the hook
        locker.kill()   # the hook, giving up on the worker, finds the store free
        locker.wait()
        try:
            out, err = proc.communicate(timeout=120)   # bounds a broken run: the client's budget is 8 s
        finally:
            os.kill(pid, signal.SIGCONT)
    finally:
        locker.kill()
        locker.wait()
    assert proc.returncode == 0 and err == b"" and status_line(out.decode()).startswith("subcog: ")
    assert "worker did not answer in time" in rt.log_text()
    settle(lambda: output(hook(rt.with_env(SUBCOG_DEDUP_SEMANTIC_ENABLED="false"), db,
                               payload(sample(rt.tmp, "session-a")))), db)   # whatever was left is captured now
    assert len(active(db)) == 7
    assert rows(db, "select count(*) from memories group by content_hash having count(*) > 1") == []


def copy_tree(dest: Path) -> Path:
    """A private copy of the package (sql/ and the model beside it), so a test can change its files."""
    shutil.copytree(REPO / "subcog_store", dest / "subcog_store", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "sql", dest / "sql")
    (dest / "models").mkdir()
    for name in ("manifest.json", "model.onnx", "tokenizer.json"):
        target = dest / "models" / name
        if name == "manifest.json":
            shutil.copyfile(REPO / "models" / name, target)
        else:
            os.symlink(REPO / "models" / name, target)
    return dest


def test_a_worker_of_an_older_version_is_refused_and_replaced(rt):
    tree = copy_tree(rt.tmp / "tree")
    env = rt.with_env(PYTHONPATH=str(tree))

    def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "subcog_store", *args], input=stdin, capture_output=True,
                              env=env, cwd=rt.tmp, timeout=90)

    assert json.loads(run("worker", "start", "--json").stdout)["state"] == "running"
    try:   # a worker of the copied tree: the fixture's `worker stop` (this tree's install) cannot reach it
        _older_version_replaced(rt, tree, run)
    finally:
        run("worker", "stop")


def _older_version_replaced(rt, tree: Path, run) -> None:
    [old] = worker_pids(str(rt.run))
    db = rt.tmp / "s.db"
    mark = len(rt.log_text())
    output(run("--db", str(db), "hook", "pre-compact", stdin=payload(sample(rt.tmp, "session-a"))))
    assert served_by_worker(rt, mark)
    with open(tree / "subcog_store" / "capture" / "session.py", "a", encoding="utf-8") as f:
        f.write("\n# a new version\n")
    mark = len(rt.log_text())
    out = output(run("--db", str(db), "hook", "pre-compact", stdin=payload(sample(rt.tmp, "session-b"), "b")))
    assert status_line(out).startswith("subcog: captured ")
    # refused as stale, or (when its watcher saw the change first) already gone
    assert "worker of another version" in rt.log_text()[mark:] or "no worker" in rt.log_text()[mark:]
    assert wait_for(lambda: old not in worker_pids(str(rt.run)))
    assert wait_for(lambda: b"running" in run("worker", "status").stdout)  # the hook started a new one
    [new] = worker_pids(str(rt.run))
    assert new != old
    mark = len(rt.log_text())
    output(run("--db", str(db), "hook", "pre-compact", stdin=payload(sample(rt.tmp, "session-b"), "b2")))
    assert served_by_worker(rt, mark)
    assert json.loads(run("worker", "stop", "--json").stdout)["stopped"]
    assert worker_pids(str(rt.run)) == []


def test_starters_racing_start_exactly_one(rt):
    go = rt.tmp / "go"
    code = ("import os, sys, time\n"
            "from subcog_store.worker.lifecycle import start_detached\n"
            "print('set', flush=True)\n"
            "while not os.path.exists(sys.argv[1]): time.sleep(0.001)\n"
            "print(start_detached())\n")
    racers = [subprocess.Popen([sys.executable, "-c", code, str(go)], stdout=subprocess.PIPE, env=rt.env)
              for _ in range(8)]
    assert all(p.stdout.readline().strip() == b"set" for p in racers)   # all at the start line
    go.touch()
    started = [p.communicate(timeout=120)[0].strip() for p in racers]
    assert started.count(b"True") == 1, started
    pid = wait_ready(rt)
    assert wait_for(lambda: rt.pids() == [pid]), rt.pids()


def test_concurrent_first_hooks_start_exactly_one_and_store_once(rt):
    db = rt.tmp / "s.db"
    path = sample(rt.tmp, "session-a")
    procs = [hook_in_background(rt.unhurried(), db, payload(path, f"s{i}")) for i in range(5)]
    outs = [p.communicate(timeout=BROKEN_RUN_SECS) for p in procs]
    assert all(p.returncode == 0 and err == b"" for p, (_, err) in zip(procs, outs))
    assert len(active(db)) == 7
    pid = wait_ready(rt)
    assert wait_for(lambda: rt.pids() == [pid]), rt.pids()


def connect(rt: Runtime) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    with protocol.Address(rt.paths.sock) as address:
        s.connect(address)
    return s


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text()
                           | st.floats(allow_nan=False, allow_infinity=False),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(), c, max_size=4),
                           max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_the_frames_json_is_the_json_packages(value):
    """The wire's JSON (the json package's C functions, without importing the package) reads and writes what
    json.dumps / json.loads do."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    assert protocol.dumps(value) == text
    assert protocol.loads(text) == json.loads(text)


@pytest.mark.parametrize("bad", ["", "{", "nul", "{}x", "NaN", "[1,]", " {}", '{"a":1} ', "[" * 100_000,
                                 '"\x00"', "\ud800"])
def test_the_frames_json_refuses_what_is_not_json(bad):
    with pytest.raises(ValueError):
        protocol.loads(bad)


def test_garbage_on_the_socket_harms_nobody(rt):
    pid = rt.start()
    rng = random.Random(13)
    idle = connect(rt)   # connects and never says anything
    frames = [bytes(rng.randrange(256) for _ in range(200)), b"\xff\xff\xff\xff\0\0\0\0",
              b"\0\0\0\x05\0\0\0\0hello", b"\0\0\0\x02\0\0\0\0[]", b"\0\0\0\x20\0\0",
              protocol.encode({"op": "hook", "v": protocol.PROTOCOL, "key": "not-this-version"}),
              protocol.encode({"op": "no-such-op", "v": protocol.PROTOCOL, "key": protocol.version_key()}),
              protocol.encode({"op": "embed", "v": protocol.PROTOCOL, "key": protocol.version_key(),
                               "texts": [1, 2], "model_dir": "/"})]
    answers = []
    for frame in frames:
        with connect(rt) as s:
            s.sendall(frame)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(10)
            answers.append(s.recv(1000))
    assert any(b"version" in a for a in answers) and any(b"bad request" in a for a in answers)
    with connect(rt) as s:   # a hook request with no environment, then "go" (once the garbage is cleared away)
        s.sendall(protocol.encode({"op": "hook", "v": protocol.PROTOCOL, "key": protocol.version_key(), "env": 7,
                                   "wait": 60}))
        state = protocol.recv(s, time.monotonic() + 60)[0]
        if state == {"st": "queued"}:   # the worker is still busy with a connection above: wait for the slot
            state = protocol.recv(s, time.monotonic() + 60)[0]
        assert state == {"st": "ready"}
        s.sendall(protocol.encode({"go": True}))
        assert protocol.recv(s, time.monotonic() + 60)[0]["ok"] is False
    db = rt.tmp / "s.db"
    mark = len(rt.log_text())
    out = output(hook(rt.unhurried(), db, payload(sample(rt.tmp, "session-a"))))
    idle.close()
    assert served_by_worker(rt, mark)
    assert status_line(out) == "subcog: captured 7 memories, skipped 1 duplicate"
    assert rt.pids() == [pid]


def test_a_request_with_a_wait_that_is_not_a_number_gets_an_error_frame(rt):
    """Issue 29 item 9: it used to close the connection without a word."""
    rt.start()
    for wait in ("abc", "1", [1], {"s": 1}, True):
        with connect(rt) as s:
            s.sendall(protocol.encode({"op": "embed", "v": protocol.PROTOCOL, "key": protocol.version_key(),
                                       "texts": ["x"], "model_dir": "/", "wait": wait}))
            answer, _ = protocol.recv(s, time.monotonic() + 10)
        assert answer == {"ok": False, "error": "bad request: wait must be a number of seconds"}, wait
    assert client.request("status", paths=rt.paths)[0]["ok"] is True


@pytest.fixture
def tiny_disk(tmp_path):
    """A 4 MB tmpfs (root only): a disk that can be filled."""
    if not IS_ROOT:
        pytest.skip("needs root to mount a small filesystem")
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mount)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)])


def fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_fails_open_and_the_next_call_recovers(tiny_disk):
    from subcog_store.store import Store

    rt = Runtime(tiny_disk)   # the worker's directory, the hook log and the store all on the small disk
    path = transcript(tiny_disk.parent, TEXTS, "full.jsonl")
    try:
        db = tiny_disk / "s.db"
        Store(db).close()
        filler = fill(tiny_disk)
        pid = rt.start()   # its pid file cannot be written: it serves anyway
        out = output(hook(rt.env, db, payload(path)))
        assert status_line(out).startswith("subcog: ")
        filler.unlink()
        out = output(hook(rt.env, db, payload(path)))
        assert status_line(out).startswith("subcog: captured ")
        assert len(active(db)) == len(TEXTS)
        assert rt.pids() == [pid]
    finally:
        if rt.pids():
            rt.stop()
    assert not rt.pids()


# -- embeddings for commands --------------------------------------------------------------------------------------
def test_the_worker_embeds_exactly_what_this_process_would(rt, monkeypatch):
    from subcog_store.model import provider
    from subcog_store.model.embedder import Embedder

    for key, value in rt.env.items():
        monkeypatch.setenv(key, value)
    rt.start()
    remote = provider.WorkerEmbedder()
    remote.load()
    assert remote.loaded and remote._remote and remote._local is None
    local = Embedder()
    texts = TEXTS + ["short", ""]
    assert np.allclose(remote.embed_batch(texts), local.embed_batch(texts), atol=1e-6)
    assert remote.embed_batch([]).shape == (0, 384)
    rt.stop()
    assert np.allclose(remote.embed_batch(texts[:2]), local.embed_batch(texts[:2]), atol=1e-6)  # now in process
    assert remote._local is not None
    assert wait_for(lambda: len(rt.pids()) == 1)   # it started a worker for next time


def test_the_provider_chooses_by_the_source_it_is_given(rt):
    """Where the model runs is the caller's explicit choice (no process-wide mode); the worker's setting is read
    from the settings' own environment."""
    from subcog_store.config import Settings
    from subcog_store.model import provider
    from subcog_store.model.embedder import Embedder

    on, off = Settings.load({}, {"SUBCOG_WORKER_ENABLED": "true"}), Settings.load({}, {"SUBCOG_WORKER_ENABLED": "false"})
    assert isinstance(provider.embedder_for(on, source=provider.VIA_WORKER), provider.WorkerEmbedder)
    assert type(provider.embedder_for(off, source=provider.VIA_WORKER)) is Embedder
    assert provider.embedder_for(on, source=provider.SHARED) is provider.embedder_for(on, source=provider.SHARED)
    assert provider.embedder_for(on) is not provider.embedder_for(on)   # LOCAL, the default: one per store
    assert type(provider.embedder_for(on)) is Embedder
