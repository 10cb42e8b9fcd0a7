"""29.8 at any load: a capture its budget stopped early is finished by the warm worker while it is idle
(capture/deferred.py, worker/backlog.py), in turns that each move it on and give way to a request, with the
memories one unhurried run stores (29.10: one capture, one result whichever path finishes it)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import FakeClock
from helpers import read_rows, scrub_environ, wait_for
from test_faults import NO_MODEL, BusyClock, assistant, captured_over_runs, count, decision, payload
from test_worker import hook, rt  # noqa: F401 - rt: the worker fixture (a private XDG_RUNTIME_DIR)

N = 120   # decision paragraphs of the record: one extraction group, MIN_CAPTURES of them in the first run


def deferred_rows(db: Path) -> int:
    return count(db, "select count(*) from hook_pending where deferred = 1")


def memories(db: Path) -> set[str]:
    return {c for c, in read_rows(db, "select content from memories where status = 'active'")}


def a_deferred_record(tmp_path: Path, monkeypatch) -> tuple[Path, dict[str, str], set[str]]:
    """A store whose capture of a huge record its budget stopped early (a busy clock: MIN_CAPTURES handled), its
    hook's environment, and the memories one unhurried run stores from the same record."""
    from subcog_store.capture.session import MIN_CAPTURES, HookOptions
    from subcog_store.claude_code.handlers import pre_compact

    scrub_environ(monkeypatch)
    path = tmp_path / "record.jsonl"
    path.write_bytes(assistant("\n\n".join(decision(i) for i in range(N))))
    whole = captured_over_runs(tmp_path, path, "whole", lambda: FakeClock(time.monotonic()), 600.0, 2)
    env = {**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")}
    db = tmp_path / "s.db"
    run = pre_compact(json.dumps(payload(path)).encode(), HookOptions(db, budget_secs=2.0, clock=BusyClock(),
                                                                      environ=env))
    assert run.truncated and count(db) == MIN_CAPTURES and deferred_rows(db) == 1
    return db, env, whole


def test_idle_turns_finish_a_deferred_record_with_the_memories_of_one_run(tmp_path, monkeypatch):
    """No hook runs again: the worker's turns (here with nobody wanting the worker and a clock that never runs
    out) finish the record from where the run stopped, and store what one unhurried run stores."""
    from subcog_store.capture.deferred import finish_turn
    from subcog_store.model import provider

    db, env, whole = a_deferred_record(tmp_path, monkeypatch)
    turns = 0
    while finish_turn(db, env, wanted=lambda: False, clock=FakeClock(time.monotonic()), embedders=provider.LOCAL):
        turns += 1
        assert turns < 5, "the turns do not end"
    assert turns == 1 and deferred_rows(db) == 0
    assert memories(db) == whole and len(whole) == N


def test_a_turn_gives_way_to_a_request_after_one_candidate_and_still_moves_on(tmp_path, monkeypatch):
    """A request waiting from the start (or a CPU so busy the turn's time is gone at once): each turn handles one
    candidate, saves where it stopped and gives the worker back; the record still completes, the same memories."""
    from subcog_store.capture.deferred import finish_turn
    from subcog_store.model import provider

    db, env, whole = a_deferred_record(tmp_path, monkeypatch)
    before = count(db)
    for _ in range(3):
        assert finish_turn(db, env, wanted=lambda: True, clock=BusyClock(), embedders=provider.LOCAL)
        assert count(db) == before + 1 and deferred_rows(db) == 1
        before += 1
    while finish_turn(db, env, wanted=lambda: False, clock=FakeClock(time.monotonic()), embedders=provider.LOCAL):
        pass
    assert memories(db) == whole and deferred_rows(db) == 0


def test_a_turn_that_moves_nothing_on_ends_the_turns(tmp_path, monkeypatch):
    """A deferred capture whose transcript is gone: the turn clears it (nothing more can be read) and says so;
    no store is left with turns that spin."""
    from subcog_store.capture.deferred import finish_turn
    from subcog_store.model import provider

    db, env, _ = a_deferred_record(tmp_path, monkeypatch)
    (tmp_path / "record.jsonl").unlink()
    finish_turn(db, env, wanted=lambda: False, embedders=provider.LOCAL)
    assert deferred_rows(db) == 0
    assert not finish_turn(db, env, wanted=lambda: False, embedders=provider.LOCAL)


def test_the_warm_worker_finishes_a_deferred_record_without_another_hook(rt, tmp_path):  # noqa: F811
    """Through a real worker: the hook's run is stopped early by its budget (0.1 s: its minimum, then deferred);
    with no further hook the worker, idle, finishes the record (waiting for the state, not for a time)."""
    n = 400
    path = tmp_path / "record.jsonl"
    path.write_bytes(assistant("\n\n".join(decision(i) for i in range(n))))
    db = tmp_path / "s.db"
    env = rt.with_env(SUBCOG_HOOK_BUDGET_SECS="0.1", SUBCOG_HOOK_ANSWER_SECS="600", **NO_MODEL)
    rt.start(env)
    proc = hook(env, db, json.dumps(payload(path)).encode())
    assert proc.returncode == 0 and proc.stderr == b""
    assert b"stopped early" in proc.stdout, proc.stdout   # the hook's own run was deferred
    assert wait_for(lambda: count(db) == n and deferred_rows(db) == 0, timeout=600)
    status = json.loads(rt.cli("worker", "status", "--json", env=env).stdout)
    assert status["capture_turns"] >= 1
    assert "worker: a turn on the deferred" not in rt.log_text()   # the turns log to the worker's log, not a hook's


def test_a_capture_deferred_in_process_is_handed_to_the_running_worker(rt, tmp_path, monkeypatch):  # noqa: F811
    """A capture hook that ran in process while a worker was running (busy with another session, say) tells the
    worker its store (`client.note_capture`, what the hook entry sends after its output): the worker, which never
    served this store, finishes what that run deferred, with the memories of one unhurried run."""
    from subcog_store.worker import client

    db, _, whole = a_deferred_record(tmp_path, monkeypatch)   # deferred by a run in this process
    env = rt.with_env(**NO_MODEL)
    rt.start(env)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    client.note_capture("pre-compact", str(db))
    assert wait_for(lambda: deferred_rows(db) == 0 and count(db) == N, timeout=300)
    assert memories(db) == whole
