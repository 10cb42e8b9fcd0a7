"""Issue 29, item 1: the recall hooks never wait on a writer. Another process holds the store's write lock (a
real second process, as a long `dedup` or a second session's capture would): SessionStart and UserPromptSubmit
still answer with their memories, in process and through the warm worker, without waiting for the lock beyond
their bookkeeping's BOOKKEEPING_WAIT_SECS (every sleep SQLite's busy wait asks for is recorded by a VFS that
sitecustomize installs in the hook and worker processes: a count, not a clock); what they gave is deferred while
the lock is held (counted for the session all the same: a memory is given once) and written by the first hook
after it is released."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from helpers import read_rows
from conftest import clean_environ, cli_command, hook_output_problems
from subcog_store.claude_code.recall_hooks import BOOKKEEPING_WAIT_SECS
from subcog_store.db.deferred import spool_path

REPO = Path(__file__).resolve().parents[1]
CLI = cli_command()
# Installed by sitecustomize in the hook and worker processes: SQLite's default VFS, recording each sleep its busy
# wait asks for (the busy timeout is spent in sleeps of 1, 2, 5, 10 ... ms that add up to it, whatever the load).
SLEEP_RECORDER = """
import os, threading
import apsw

class _Recording(apsw.VFS):
    def __init__(self):
        super().__init__("recording", base="", makedefault=True)

    def xSleep(self, microseconds):
        with open(os.environ["SUBCOG_TEST_SLEEPS"], "a") as f:
            f.write(f"{os.getpid()}\\t{threading.current_thread().name}\\t{microseconds}\\n")
        return super().xSleep(microseconds)

_vfs = _Recording()
"""
LOCKER = """
import sys, time, apsw
con = apsw.Connection(sys.argv[1])
con.execute("begin immediate")
con.execute("update settings set value = value where key = 'dedup_time_window_secs'")
print("locked", flush=True)
time.sleep(600)
"""
PROMPT = "How do we pool the Postgres connections, PgBouncer in transaction mode?"


class World:
    def __init__(self, tmp: Path, way: str):
        self.tmp, self.db, self.log = tmp, tmp / "m.db", tmp / "hook.log"
        run, site, self.sleeps = tmp / "run", tmp / "site", tmp / "sleeps.tsv"
        run.mkdir(mode=0o700)
        site.mkdir()
        (site / "sitecustomize.py").write_text(SLEEP_RECORDER)
        self.env = clean_environ({"XDG_RUNTIME_DIR": str(run), "SUBCOG_HOOK_LOG": str(self.log),
                                  "SUBCOG_HOOK_DOMAIN": "shop", "PYTHONPATH": str(site),
                                  "SUBCOG_TEST_SLEEPS": str(self.sleeps)})
        if way == "in-process":
            self.env["SUBCOG_WORKER_ENABLED"] = "false"

    def hook(self, event: str, payload: dict) -> tuple[str, None]:
        proc = subprocess.run([*CLI, "--db", str(self.db), "hook", event], input=json.dumps(payload).encode(),
                              capture_output=True, env=self.env, timeout=120)
        assert proc.returncode == 0 and proc.stderr == b"", proc
        out = proc.stdout.decode()
        name = "SessionStart" if event == "session-start" else "UserPromptSubmit"
        assert hook_output_problems(name, out) == []
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
        return context, None

    def lock_waits(self) -> list[float]:
        """The seconds each wait for a lock in a hook (or the worker's requests) slept, in all: a wait starts
        with SQLite's first 1 ms sleep. The worker's backlog thread is left out (it is no hook's)."""
        waits: dict[tuple[str, str], list[int]] = {}
        lines = self.sleeps.read_text().splitlines() if self.sleeps.exists() else []
        for pid, thread, microseconds in (line.split("\t") for line in lines):
            if thread != "subcog-backlog":
                runs = waits.setdefault((pid, thread), [])
                if int(microseconds) == 1000 or not runs:
                    runs.append(0)
                runs[-1] += int(microseconds)
        return [total / 1e6 for runs in waits.values() for total in runs]

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, *args], capture_output=True, env=self.env, timeout=120)

    def rows(self, sql: str) -> list[tuple]:
        return read_rows(self.db, sql)

    def settled(self, sql: str, done, timeout: float = 60.0) -> list[tuple]:
        """The rows once `done(rows)` holds: the worker writes a recall hook's rows after it has answered."""
        deadline = time.monotonic() + timeout
        while not done(rows := self.rows(sql)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return rows


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    """A store that captured session-a once (in process), checkpointed: each test starts from a copy of it."""
    tmp = tmp_path_factory.mktemp("captured")
    w = World(tmp, "in-process")
    session = tmp / "a.jsonl"
    session.write_bytes((REPO / "samples" / "session-a.jsonl").read_bytes())
    capture = {"session_id": "earlier", "transcript_path": str(session), "cwd": str(tmp),
               "hook_event_name": "PreCompact", "trigger": "manual"}
    proc = subprocess.run([*CLI, "--db", str(w.db), "hook", "pre-compact"], input=json.dumps(capture).encode(),
                          capture_output=True, env=w.env, timeout=120)
    assert proc.returncode == 0 and b"captured 7" in proc.stdout, proc
    con = apsw.Connection(str(w.db))
    con.execute("pragma wal_checkpoint(truncate)")
    con.close()
    return w.db


@pytest.fixture(params=["in-process", "worker"])
def world(request, tmp_path, captured):
    w = World(tmp_path, request.param)
    shutil.copyfile(captured, w.db)
    if request.param == "worker":
        assert w.cli("worker", "start").returncode == 0
    yield w
    if request.param == "worker":
        w.cli("worker", "stop")


@pytest.fixture
def locker(world):
    proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(world.db)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"locked"
    yield proc
    proc.kill()
    proc.wait()
    proc.stdout.close()


def wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


def start(session: str, source: str = "startup") -> dict:
    return {"session_id": session, "cwd": "/", "hook_event_name": "SessionStart", "source": source}


def prompt(session: str, text: str = PROMPT) -> dict:
    return {"session_id": session, "cwd": "/", "hook_event_name": "UserPromptSubmit", "prompt": text}


def test_recall_answers_at_once_while_another_process_holds_the_write_lock(world, locker):
    for i in range(3):   # through the worker every second prompt used to wait 11 s (its 10 s busy timeout)
        index, _ = world.hook("session-start", start(f"s{i}"))
        assert "PgBouncer" in index
        found, _ = world.hook("user-prompt-submit", prompt(f"p{i}"))
        assert "PgBouncer" in found
    # each hook's bookkeeping tried the lock (so the recorder sees waits) and gave up within its bound
    assert wait_for(lambda: len(world.lock_waits()) >= 6)
    assert max(world.lock_waits()) <= BOOKKEEPING_WAIT_SECS, world.lock_waits()
    again, _ = world.hook("user-prompt-submit", prompt("p0"))
    assert "PgBouncer" not in again   # given once per session, though its row waits in the spool
    assert world.rows("select count(*) from recall_log") == [(0,)]
    assert "deferred to the next hook" in world.log.read_text()
    # no hook met a BusyError (the worker's backlog, embedding the session text the capture kept, may: it tries
    # again after the next hook)
    assert not [line for line in world.log.read_text().splitlines()
                if "BusyError" in line and "session text not embedded" not in line]

    locker.kill()
    locker.wait()
    world.hook("user-prompt-submit", prompt("later", "What is the weather like?"))
    logged = world.settled("select session_id, hook from recall_log order by id", lambda rows: len(rows) >= 8)
    assert sorted(logged) == sorted([(f"s{i}", "session-start:startup") for i in range(3)]
                                    + [(f"p{i}", "user-prompt-submit") for i in range(3)]
                                    + [("p0", "user-prompt-submit"), ("later", "user-prompt-submit")])
    assert not spool_path(world.db).exists()


def test_a_compaction_seen_under_the_lock_is_recorded_once_released(world, locker):
    index, _ = world.hook("session-start", start("earlier", "compact"))
    assert "subcog memory report from before this compaction" in index
    again, _ = world.hook("session-start", start("earlier", "compact"))
    assert "subcog memory report" not in again   # delivered once, though not yet written
    locker.kill()
    locker.wait()
    world.hook("user-prompt-submit", prompt("other", "What is the weather like?"))
    world.settled("select count(*) from recall_log where session_id = 'other'", lambda rows: rows[0][0] == 1)
    assert world.rows("select count(*) from session_compactions where session_id = 'earlier'")[0][0] >= 1
    assert world.rows("select count(*) from hook_runs where delivered_at is null") == [(0,)]


def test_a_spool_left_beside_a_replaced_file_is_never_applied_to_it(world, locker):
    world.hook("user-prompt-submit", prompt("p"))
    assert wait_for(spool_path(world.db).exists)   # the worker spools after it has answered
    locker.kill()
    locker.wait()
    fresh = world.tmp / "fresh.db"
    assert world.cli("--db", str(fresh), "init").returncode == 0
    os.replace(fresh, world.db)
    for suffix in ("-wal", "-shm"):
        Path(f"{world.db}{suffix}").unlink(missing_ok=True)
    world.hook("user-prompt-submit", prompt("q", "What is the weather like?"))
    world.settled("select count(*) from recall_log", lambda rows: rows[0][0] >= 1)
    assert world.rows("select session_id from recall_log") == [("q",)]
