"""Issue 26, faults: a hook never waits past its deadline for a PostgreSQL server that took the connection and then
does not answer, whether its statement waits for a lock a maintenance job holds (no statement_timeout set on the
database) or the server process itself stopped (a hung host). The client's own deadline (postgres/deadline.py)
ends the wait: the store raises an error saying so, the hook answers without its store (valid output, the cause in
its log), nothing of the capture under way is kept, and the server stops waiting for the lock too.

Deterministic on a loaded machine: the lock is held, or the server process stopped, until the hook has returned,
so a hook that waited for the server could never end; each test waits for states (a server process waiting for
the lock), never for a time. The generous join bounds only turn a hang into a failure."""
from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time

import pytest

from conftest import hook_output_problems
from helpers import NO_WORKER, clean_environ, wait_for

psycopg = pytest.importorskip("psycopg")

A = "We decided to use PostgreSQL 16 with pgvector as the team's shared memory store."
DEADLINE_WORDS = "did not answer by the hook's deadline"
HANG_BOUND_SECS = 300   # a broken run's bound (the hook waits for a lock nobody releases): not a timing figure
BUDGET_SECS = 4.0       # the hook's budget: half of it to open the connection (request.CONNECT_SHARE), then the wait


@pytest.fixture
def store(pg_server):
    """A migrated store and an administrator's connection to its database."""
    from subcog_store.postgres.local_server import with_database

    url = pg_server.database(migrated=True)
    admin_url = with_database(pg_server.url, psycopg.conninfo.conninfo_to_dict(url)["dbname"])
    yield url, admin_url
    pg_server.drop(url)


def _ours_waiting_for_a_lock(admin) -> list[int]:
    """The server processes of subcog-store connections that wait for a lock."""
    from subcog_store.postgres.connection import APPLICATION_NAME

    return [pid for pid, in admin.execute(
        "select pid from pg_stat_activity where application_name = %s and wait_event_type = 'Lock' "
        "and datname = current_database()", (APPLICATION_NAME,)).fetchall()]


def _in_thread(action) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = action()
        except BaseException as e:  # noqa: BLE001 - the test reads it
            out["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def hook_log():
    """The hook's log records (a handler on the hook's logger itself, whatever an earlier test set up)."""
    records, logger = _Records(), logging.getLogger("subcog_store.hook")
    level = logger.level
    logger.addHandler(records)
    logger.setLevel(logging.INFO)
    yield records.lines
    logger.removeHandler(records)
    logger.setLevel(level)


def _prompt_hook(url: str, budget: float):
    """The prompt hook as the entry runs it in process (or the worker: the same request), with this budget."""
    from subcog_store.claude_code.handlers import dispatch
    from subcog_store.claude_code.request import HookRequest

    payload = {"session_id": "s", "cwd": "/x", "hook_event_name": "SessionStart", "source": "startup",
               "transcript_path": "/nonexistent.jsonl"}
    request = HookRequest("session-start", json.dumps(payload).encode(), clean_environ(NO_WORKER), db=url,
                          budget_secs=budget)
    return lambda: dispatch(request)


def test_a_hook_whose_read_waits_for_a_maintenance_lock_gives_up_at_its_deadline(store, hook_log) -> None:
    """A table locked by maintenance (ACCESS EXCLUSIVE, no statement_timeout on the database): the session-start
    hook's read waits for it until the hook's deadline, then the hook answers without the store (valid output,
    the cause in its log) while the lock is still held; the server's process stops waiting for the lock too
    (the cancel request), so it holds no place in the lock's queue after the hook is gone."""
    url, admin_url = store
    with psycopg.connect(admin_url, autocommit=True) as admin, psycopg.connect(admin_url) as maintenance:
        maintenance.execute("lock table memories in access exclusive mode")
        thread, out = _in_thread(_prompt_hook(url, BUDGET_SECS))
        thread.join(HANG_BOUND_SECS)
        assert not thread.is_alive(), "the hook waited for the lock past its deadline"
        assert "error" not in out, out
        assert out["value"] == "" or hook_output_problems("SessionStart", out["value"]) == []
        assert any(DEADLINE_WORDS in line for line in hook_log), hook_log
        assert wait_for(lambda: not _ours_waiting_for_a_lock(admin), HANG_BOUND_SECS), \
            "the server still waits for the lock for a hook that is gone"
        maintenance.rollback()


def test_a_hook_on_a_server_that_stops_answering_after_connect_gives_up_at_its_deadline(store, hook_log) -> None:
    """The server took the connection and answered the hook's first statements, then its process stops (a hung
    host: SIGSTOP), so neither the statement's answer nor a cancel's can come: the client's deadline still ends
    the hook's wait (its socket closed), the hook answers without the store."""
    url, admin_url = store
    stopped: list[int] = []
    try:
        with psycopg.connect(admin_url, autocommit=True) as admin, psycopg.connect(admin_url) as maintenance:
            maintenance.execute("lock table memories in access exclusive mode")
            thread, out = _in_thread(_prompt_hook(url, BUDGET_SECS))
            # the hook's server process is connected and waiting (the state to stop it in), or the hook ended
            assert wait_for(lambda: _ours_waiting_for_a_lock(admin) or not thread.is_alive(), HANG_BOUND_SECS)
            for pid in _ours_waiting_for_a_lock(admin):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            maintenance.rollback()   # the lock is free, but the stopped process cannot answer any more
            thread.join(HANG_BOUND_SECS)
            assert not thread.is_alive(), "the hook waited for a stopped server past its deadline"
        assert stopped, "the hook never reached the server (see its log)"
        assert "error" not in out, out
        assert out["value"] == "" or hook_output_problems("SessionStart", out["value"]) == []
        assert any(DEADLINE_WORDS in line for line in hook_log), hook_log
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


def test_a_capture_waiting_for_a_lock_past_the_stores_deadline_keeps_nothing(store, tiny_embedder) -> None:
    """A capture through the store (what a capture hook runs) whose statements wait for a maintenance lock: at the
    store's deadline it fails with the cause in words (before the lock wait's own limit, 10 s), and nothing of it
    is kept; the same capture later stores it once."""
    from subcog_store.store import Store

    url, admin_url = store
    with psycopg.connect(admin_url) as maintenance:
        maintenance.execute("lock table memories in access exclusive mode")

        def capture() -> None:
            with Store(url, embedder=tiny_embedder, deadline=time.monotonic() + BUDGET_SECS) as opened:
                opened.capture(A, namespace="decisions", domain="team")

        thread, out = _in_thread(capture)
        thread.join(HANG_BOUND_SECS)
        assert not thread.is_alive(), "the capture waited for the lock past the store's deadline"
        maintenance.rollback()
    assert DEADLINE_WORDS in str(out.get("error")), out
    counts = "select (select count(*) from memories), (select count(*) from memory_vectors), " \
             "(select count(*) from recent_captures)"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        assert admin.execute(counts).fetchone() == (0, 0, 0)
    with Store(url, embedder=tiny_embedder, deadline=time.monotonic() + HANG_BOUND_SECS) as opened:
        opened.capture(A, namespace="decisions", domain="team")
        opened.capture(A, namespace="decisions", domain="team")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        assert admin.execute(counts).fetchone()[0] == 1


def test_a_capture_hook_waits_for_its_store_until_before_the_clients_timeout() -> None:
    """Where a capture hook's store deadline falls: the end of its budget, or, when its minimum of work runs past
    the budget (capture/session), STORE_MARGIN_SECS before the client's timeout; no timeout known: the budget."""
    from subcog_store.capture.run import STORE_MARGIN_SECS, TIMEOUT_MARGIN_SECS, HookOptions

    options = HookOptions(db="x", budget_secs=20.0, timeout_secs=30.0)
    assert options.waits_until(100.0) == 100.0 + 30.0 - STORE_MARGIN_SECS
    assert options.minimum_limit(100.0) < options.waits_until(100.0) < 100.0 + 30.0
    assert STORE_MARGIN_SECS < TIMEOUT_MARGIN_SECS
    assert HookOptions(db="x", budget_secs=20.0, timeout_secs=10.0).waits_until(0.0) == 20.0
    assert HookOptions(db="x", budget_secs=3.0).waits_until(5.0) == 8.0
