"""Faults found by trying to break it (issue #15): each one reproduced, as a real process where it matters.

FIFO and device transcripts, a huge session over successive runs, a full disk (a small tmpfs when root may mount
one, and a simulated SQLITE_FULL in any case), bad --jsonl lines, huge ids, /dev/zero, a hook log that cannot be
written, non-finite settings, a held lock, a killed dedup run, install-hooks on a missing directory. A fault that
was found this way has its test here.
"""
from __future__ import annotations

import itertools
import json
import logging
import math
import os
import resource
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import apsw
import pytest

from conftest import _contract_checker, clean_environ, cli_command, shared_path
from helpers import NO_WORKER, cli_in_process, read_rows, run_cli, scrub_environ

REPO = Path(__file__).resolve().parents[1]
SESSION_A = REPO / "samples" / "session-a.jsonl"
CLI = cli_command()
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NO_MODEL = {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}


# ------------------------------------------------------------------------------------------------ helpers
def run(args: list[str], tmp_path: Path, stdin: bytes = b"", timeout: float = 60, **env: str
        ) -> subprocess.CompletedProcess:
    """The CLI as a process. No warm worker (a detached process would outlive the test) unless `env` asks."""
    return run_cli(*args, stdin=stdin, env={"SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"), **NO_WORKER, **env},
                   cwd=tmp_path, timeout=timeout)


def hook(tmp_path: Path, db: Path, payload: dict | bytes, timeout: float = 60, **env: str
         ) -> tuple[subprocess.CompletedProcess, float]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    started = time.monotonic()
    proc = run(["--db", str(db), "hook", "pre-compact"], tmp_path, raw, timeout, **env)
    return proc, time.monotonic() - started


def message(proc: subprocess.CompletedProcess) -> str:
    """The hook exited 0, wrote nothing on stderr and printed output the client accepts: its status line."""
    assert proc.returncode == 0, proc
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    out = proc.stdout.decode("utf-8")
    checker = _contract_checker()
    if checker is not None:
        assert checker.problems("PreCompact", out) == [], out
    if out.lstrip().startswith("{"):
        return json.loads(out)["systemMessage"]
    return out.splitlines()[0] if out else ""


def payload(path: Path | str, session: str = "faults") -> dict:
    return {"session_id": session, "transcript_path": str(path), "hook_event_name": "PreCompact",
            "trigger": "manual", "cwd": "/"}


def assistant(text: str, uuid: str = "u") -> bytes:
    return (json.dumps({"type": "assistant", "isSidechain": False, "sessionId": "s", "uuid": uuid,
                        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
            + "\n").encode()


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def decision(i: int) -> str:
    """A distinct decision paragraph (the capture rules keep it)."""
    w = " ".join(WORDS[(i * k) % 26] for k in (1, 3, 5, 7))
    return f"We decided to use PostgreSQL for component {w} number {i} because it halves the latency."


def count(db: Path, sql: str = "select count(*) from memories where status = 'active'") -> int:
    return read_rows(db, sql)[0][0]


def cli(monkeypatch, capsys, *argv: str, stdin: bytes = b"", **env: str) -> tuple[int, str, str]:
    """The CLI in this process (fast): exit code, stdout, stderr (helpers.cli_in_process)."""
    return cli_in_process(monkeypatch, capsys, *argv, stdin=stdin, **env)


# ------------------------------------------------------------------- 2. FIFO, devices, directories as transcripts
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_a_transcript_that_is_not_a_regular_file_never_hangs(tmp_path, kind):
    path = {"fifo": tmp_path / "fifo", "dev-zero": Path("/dev/zero"), "directory": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    proc, _ = hook(tmp_path, tmp_path / "s.db", payload(path), **NO_MODEL)   # a hang: TimeoutExpired (60 s)
    assert "transcript unreadable" in message(proc)


# ------------------------------------------------------------------------------ 1. a huge session, run after run
def resume_point(db: Path) -> tuple[int, int, int]:
    """Where the next capture of the transcript goes on (record offset, characters, candidates of the piece)."""
    rows = read_rows(db, "select byte_offset, record_chars, piece_done from hook_offsets")
    return tuple(rows[0]) if rows else (0, 0, 0)


def runs_until_done(tmp_path: Path, db: Path, path: Path, budget: float, max_runs: int) -> list[str]:
    """Run the hook until it has nothing new: every run makes progress (its saved resume point moves on), however
    busy the machine, and the record is done within `max_runs` (the bound the per-run minimum gives)."""
    seen: list[str] = []
    before = (-1, -1, -1)
    for _ in range(max_runs):
        proc, _ = hook(tmp_path, db, payload(path), SUBCOG_HOOK_BUDGET_SECS=str(budget), **NO_MODEL)
        text = message(proc)
        seen.append(text)
        if "nothing new" in text:
            return seen
        now = resume_point(db)
        assert now > before, f"run {len(seen)} made no progress ({before} -> {now}): {seen}"
        assert "stopped early" not in text or "time budget used up" in text, text
        before = now
    pytest.fail(f"not done after {max_runs} runs: {seen}")


def test_a_huge_record_is_captured_over_successive_runs_each_making_progress(tmp_path):
    """29.8: a record of 600 paragraphs (about 60,000 characters: several pieces) with a 2 s budget. A run
    always handles MIN_CAPTURES candidates (or what is left), whatever the load, so the record is complete within
    600 / MIN_CAPTURES runs and its pieces (an idle machine takes one or two; the budget's own keeping is tested
    with a fake clock below). bench/faults.py runs the 3,000-paragraph record of issue 29."""
    from subcog_store.capture.session import MIN_CAPTURES, PIECE_CHARS

    n = 600
    path = tmp_path / "huge.jsonl"
    text = "\n\n".join(decision(i) for i in range(n))
    assert len(text) > 2 * PIECE_CHARS
    path.write_bytes(assistant(text))
    db = tmp_path / "s.db"
    runs_until_done(tmp_path, db, path, budget=2.0, max_runs=math.ceil(n / MIN_CAPTURES)
                    + math.ceil(len(text) / (PIECE_CHARS // 2)) + 2)
    assert count(db) == n


class BusyClock:
    """A monotonic clock on a machine so busy that every look at it finds 10 s gone: a time slice is always
    eaten before any work is done."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 10.0
        return self.now


def test_a_run_with_no_time_left_still_handles_its_minimum_and_goes_on_from_there(tmp_path, monkeypatch):
    """With a clock that says the budget is gone at every look, each run still captures MIN_CAPTURES candidates
    and saves where it stopped inside the piece; the next run goes on from there (never the same ones again);
    the record is complete after exactly ceil(candidates / MIN_CAPTURES) runs."""
    from subcog_store.capture.session import MIN_CAPTURES, HookOptions
    from subcog_store.claude_code.handlers import pre_compact

    scrub_environ(monkeypatch)
    n = 300
    path = tmp_path / "record.jsonl"
    path.write_bytes(assistant("\n\n".join(decision(i) for i in range(n))))
    db = tmp_path / "s.db"
    raw = json.dumps(payload(path)).encode()
    runs, before = [], (-1, -1, -1)
    for _ in range(math.ceil(n / MIN_CAPTURES) + 1):
        options = HookOptions(db, budget_secs=2.0, clock=BusyClock(),
                              environ={**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")})
        run = pre_compact(raw, options)
        runs.append(run)
        if not run.captured and not run.truncated:
            break
        assert len(run.captured) + len(run.skipped) == min(MIN_CAPTURES, n - sum(len(r.captured) for r in runs[:-1]))
        assert resume_point(db) > before
        before = resume_point(db)
    assert count(db) == n
    assert len(runs) == math.ceil(n / MIN_CAPTURES) + 1   # the last one finds nothing new
    assert all(len(r.captured) == MIN_CAPTURES for r in runs[:-2])


def test_a_run_stopped_between_two_groups_by_its_budget_says_so(tmp_path, monkeypatch):
    """A run that captured its first group whole (past its minimum) and finds its budget gone before the next
    group's extraction stops there; its status line says the budget stopped it, as a stop inside a group does
    (the five-runs proof met this at load 4: "stopped early" and no reason)."""
    from subcog_store.capture import session
    from subcog_store.claude_code.handlers import pre_compact
    from subcog_store.claude_code.report import system_message

    scrub_environ(monkeypatch)
    now = [0.0]   # still while the first group is captured, then past every deadline
    capture_all = session._capture_all

    def capture_then_late(*args, **kwargs):
        stopped = capture_all(*args, **kwargs)
        now[0] += 1000.0
        return stopped
    monkeypatch.setattr(session, "_capture_all", capture_then_late)
    path = tmp_path / "huge.jsonl"
    text = "\n\n".join(decision(i) for i in range(400))
    assert len(text) > session.EXTRACT_CHARS   # a record of three pieces: two groups
    path.write_bytes(assistant(text))
    options = session.HookOptions(tmp_path / "s.db", budget_secs=2.0, clock=lambda: now[0],
                                  environ={**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")})
    run = pre_compact(json.dumps(payload(path)).encode(), options)
    assert run.truncated and session.MIN_CAPTURES < len(run.captured) < 400
    assert "time budget used up" in system_message(run.report())


class LateClock:
    """Every look at it finds 100 s gone: past the budget and past the client's timeout from the first look on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 100.0
        return self.now


def counting_extraction(monkeypatch) -> list[tuple[int, int]]:
    """Where each group the capture extracts begins (record offset, characters), in order."""
    from subcog_store.extraction import extract

    groups: list[tuple[int, int]] = []
    real = extract.extract_candidates

    def counted(texts, **kw):
        groups.append((texts[0].offset, texts[0].char_start))
        return real(texts, **kw)

    monkeypatch.setattr(extract, "extract_candidates", counted)
    return groups


def test_past_the_clients_timeout_a_run_handles_one_candidate_and_starts_nothing_more(tmp_path, monkeypatch):
    """29.8: the minimum of work stops TIMEOUT_MARGIN_SECS before the client's timeout (the hook is not killed
    mid-write); past it a run still makes progress, one candidate, and extracts no second group."""
    from subcog_store.capture.session import HookOptions
    from subcog_store.claude_code.handlers import pre_compact

    scrub_environ(monkeypatch)
    groups = counting_extraction(monkeypatch)
    path = tmp_path / "record.jsonl"
    path.write_bytes(assistant("\n\n".join(decision(i) for i in range(1000))))   # five pieces, three groups
    db = tmp_path / "s.db"
    raw = json.dumps(payload(path)).encode()
    before = (-1, -1, -1)
    for n in range(1, 4):
        options = HookOptions(db, budget_secs=20.0, clock=LateClock(), timeout_secs=30.0,
                              environ={**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")})
        run = pre_compact(raw, options)
        assert len(run.captured) == 1 and run.truncated
        assert len(groups) == n             # one group extracted a run
        assert resume_point(db) > before
        before = resume_point(db)
    assert count(db) == 3


def test_a_run_extracts_only_as_far_as_it_captures(tmp_path, monkeypatch):
    """29.8 under load: extraction is cheap beside capture (the model, the checks), so a busy run that captures
    its minimum must not first extract the whole record (it did: half the budget went on candidates no run of
    it reached). Here only captures move the clock: the run extracts its first group alone."""
    from conftest import FakeClock
    from subcog_store.capture.session import EXTRACT_CHARS, MIN_CAPTURES, HookOptions
    from subcog_store.claude_code.handlers import pre_compact
    from subcog_store.dedup import write

    scrub_environ(monkeypatch)
    groups = counting_extraction(monkeypatch)
    clock, real = FakeClock(0.0), write.capture_prepared

    def slow_capture(core, prepared):
        clock.advance(0.25)                 # a busy machine: a quarter of a second a capture
        return real(core, prepared)

    monkeypatch.setattr(write, "capture_prepared", slow_capture)
    path = tmp_path / "record.jsonl"
    path.write_bytes(assistant("\n\n".join(decision(i) for i in range(1000))))   # five pieces, three groups
    db = tmp_path / "s.db"
    options = HookOptions(db, budget_secs=20.0, clock=clock, timeout_secs=30.0,
                          environ={**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")})
    run = pre_compact(json.dumps(payload(path)).encode(), options)
    assert run.truncated and MIN_CAPTURES <= len(run.captured) < 100
    assert groups == [(0, 0)]               # the second group was never extracted
    offset, chars, done = resume_point(db)   # the next run goes on inside the group: at a piece, past its done
    assert offset == 0 and chars < EXTRACT_CHARS and (chars, done) > (0, 0)


def lead_in_lists(sections: int) -> str:
    """A record of lists under lead-ins: each item is captured with its lead-in ("Decisions for ...: We use ...")."""
    return "\n\n".join(f"Decisions for the storage layer of service {i}:\n- We use PostgreSQL {i}.{i} for the ledger "
                       f"because it halves the latency.\n- The cache TTL is {i + 3} minutes so stale reads stay rare."
                       f"\n- We keep {i + 2} replicas of db-{i} in two zones." for i in range(sections))


def captured_over_runs(tmp_path: Path, path: Path, name: str, clock, budget: float, runs: int,
                       environ: dict[str, str] = NO_MODEL) -> set[str]:
    """The active memories of a store the pre-compact hook filled from `path` over successive runs, each with a
    fresh `clock()`, until a run finds nothing new (at most `runs`)."""
    from subcog_store.capture.session import HookOptions
    from subcog_store.claude_code.handlers import pre_compact

    db, raw = tmp_path / f"{name}.db", json.dumps(payload(path)).encode()
    for _ in range(runs):
        run = pre_compact(raw, HookOptions(db, budget_secs=budget, clock=clock(),
                                           environ={**environ, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")}))
        assert not run.errors or run.truncated, run.errors
        if not run.truncated:
            con = apsw.Connection(str(db))
            try:
                return {c for c, in con.execute("select content from memories where status = 'active'")}
            finally:
                con.close()
    raise AssertionError(f"{name}: not done in {runs} runs")


@pytest.mark.parametrize("minimum", [2, 5])
def test_the_same_record_gives_the_same_memories_however_its_runs_are_split(tmp_path, monkeypatch, minimum):
    """29.10: whether a fact is kept must not depend on where the runs stopped (in process a run's budget counts
    its start-up, through the worker it does not; the load decides the rest). A busy clock splits the record into
    runs of `minimum` candidates; one run with time to spare takes it whole. A run that stopped inside a record
    went on from the stopped candidate's paragraph and extracted it without what precedes it: list items lost
    their lead-in and were stored as other texts (and the pieces after it were cut elsewhere)."""
    from conftest import FakeClock
    from subcog_store.capture import session

    scrub_environ(monkeypatch)
    path = tmp_path / "lists.jsonl"
    path.write_bytes(assistant(lead_in_lists(12)))
    whole = captured_over_runs(tmp_path, path, "whole", lambda: FakeClock(time.monotonic()), 600.0, 2)
    monkeypatch.setattr(session, "MIN_CAPTURES", minimum)
    split = captured_over_runs(tmp_path, path, "split", BusyClock, 2.0, 36 // minimum + 2)
    assert len(whole) >= 12 and all(text.startswith("Decisions for the storage layer") for text in whole)
    assert split == whole


def busy_from_now() -> BusyClock:
    """A busy clock that starts now: the transcript reader (on the real clock) reads the whole file, the capture
    (on this one) stops at its minimum."""
    clock = BusyClock()
    clock.now = time.monotonic()
    return clock


REAL_SESSION = shared_path() / "samples" / "real" / "train" / "cctrace-session-import-investigation.jsonl"


@pytest.mark.skipif(not REAL_SESSION.is_file(), reason="../shared not present")
def test_a_real_session_gives_the_same_memories_however_its_runs_are_split(tmp_path, monkeypatch):
    """29.10 with the model, on a real session (train set): one run with time to spare and runs of eight
    candidates (a busy clock) store the same memories: the same candidates, and the repeats within a run (found
    among the run's own candidates) are the repeats the store finds across runs. Before the fix the split runs
    stored two other texts in place of two of the whole run's."""
    import shutil

    from conftest import FakeClock
    from subcog_store.capture import session

    scrub_environ(monkeypatch)
    path = tmp_path / "session.jsonl"
    shutil.copyfile(REAL_SESSION, path)
    whole = captured_over_runs(tmp_path, path, "whole", lambda: FakeClock(time.monotonic()), 600.0, 2, {})
    monkeypatch.setattr(session, "MIN_CAPTURES", 8)
    split = captured_over_runs(tmp_path, path, "split", busy_from_now, 2.0, 100, {})
    assert len(whole) >= 10 and split == whole


def test_a_capture_that_stopped_early_never_moves_the_resume_point_back(tmp_path, monkeypatch, caplog):
    """Two captures of one transcript at once (two hooks of a session, or a hook and the worker's turn): the one
    that read the resume point first and stopped early at its minimum saves after the other finished the
    record. The resume point stays at the end (it went back to the early stop: the next run redid the rest)."""
    from conftest import FakeClock
    from subcog_store.capture.session import MIN_CAPTURES, HookOptions
    from subcog_store.claude_code.handlers import pre_compact
    from subcog_store.dedup import write

    scrub_environ(monkeypatch)
    path = tmp_path / "record.jsonl"
    path.write_bytes(assistant("\n\n".join(decision(i) for i in range(3 * MIN_CAPTURES))))
    db = tmp_path / "s.db"
    raw = json.dumps(payload(path)).encode()
    environ = {**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")}
    real, other = write.capture_prepared, []

    def other_run_first(core, prepared):   # the other capture runs whole between this one's read and its writes
        if not other:
            other.append(None)   # the other run's own captures go straight through
            other[0] = pre_compact(raw, HookOptions(db, budget_secs=600.0, clock=FakeClock(time.monotonic()),
                                                      environ=environ))
        return real(core, prepared)

    monkeypatch.setattr(write, "capture_prepared", other_run_first)
    caplog.set_level(logging.INFO, logger="subcog_store")
    early = pre_compact(raw, HookOptions(db, budget_secs=2.0, clock=busy_from_now(), environ=environ))
    monkeypatch.setattr(write, "capture_prepared", real)
    assert not other[0].truncated and len(other[0].captured) == 3 * MIN_CAPTURES
    assert early.truncated and len(early.skipped) == MIN_CAPTURES and not early.captured
    end = resume_point(db)
    assert end > (0, 0, 0) and "another run of its transcript got further" in caplog.text
    after = pre_compact(raw, HookOptions(db, budget_secs=2.0, clock=busy_from_now(), environ=environ))
    assert not after.truncated and not after.captured and not after.skipped   # nothing redone
    assert resume_point(db) == end and count(db) == 3 * MIN_CAPTURES


def test_the_minimum_of_work_ends_well_before_the_clients_timeout():
    """The bound the capture hooks keep: their minimum of work stops TIMEOUT_MARGIN_SECS before the timeout
    `install-hooks` gives the client, which is past the default budget (the minimum can still run past it)."""
    from subcog_store.capture.run import TIMEOUT_MARGIN_SECS
    from subcog_store.capture.session import SAVE_GRACE_SECS
    from subcog_store.claude_code.install import EVENTS
    from subcog_store.claude_code.request import CAPTURE_TIMEOUT_SECS
    from subcog_store.worker.protocol import HOOK_BUDGET_SECS

    for event in ("PreCompact", "PostCompact", "SessionEnd"):
        assert EVENTS[event][2] == CAPTURE_TIMEOUT_SECS
    assert HOOK_BUDGET_SECS < CAPTURE_TIMEOUT_SECS - TIMEOUT_MARGIN_SECS
    assert TIMEOUT_MARGIN_SECS >= 4 * SAVE_GRACE_SECS   # the capture under way, the save, the exit
    from subcog_store.worker import protocol   # the hook command's warm path keeps its own copies (no config)

    assert (protocol.CAPTURE_TIMEOUT_SECS, protocol.TIMEOUT_MARGIN_SECS) == (CAPTURE_TIMEOUT_SECS, TIMEOUT_MARGIN_SECS)


@pytest.mark.parametrize("timeout", [None, "90"])
def test_the_caller_waits_for_a_capture_in_the_worker_until_its_minimum_ends(monkeypatch, timeout):
    """Through the worker a capture's minimum of work may run past the caller's share of the budget, until
    TIMEOUT_MARGIN_SECS before the client's timeout: the caller waits that long (and the save's grace) before it
    gives up and runs the capture in process too (it gave up at its share: under load the worker answered in 15 s,
    the caller had run in process from 14 s, and the hook ended past the 30 s timeout). A recall hook has no such
    minimum: its share."""
    from subcog_store.capture.run import TIMEOUT_MARGIN_SECS
    from subcog_store.capture.session import SAVE_GRACE_SECS
    from subcog_store.claude_code.request import HookRequest
    from subcog_store.worker import client

    environ = {"SUBCOG_HOOK_BUDGET_SECS": "20", **({"SUBCOG_HOOK_TIMEOUT_SECS": timeout} if timeout else {})}
    monkeypatch.delenv("SUBCOG_HOOK_TIMEOUT_SECS", raising=False)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    share = 14.25   # what the caller gave the worker: 20 less its reserve, the grace and its start-up
    in_worker = HookRequest("pre-compact", b"{}", environ, budget_secs=share)
    minimum_ends = in_worker.timeout_left() - TIMEOUT_MARGIN_SECS   # from the worker's start (HookOptions)
    for event in ("pre-compact", "session-end", "post-compact"):
        assert client.answer_wait(event, share, 20.0) >= minimum_ends + SAVE_GRACE_SECS
    assert client.answer_wait("user-prompt-submit", share, 20.0) == share + client.ANSWER_GRACE_SECS


def test_past_its_deadline_a_read_still_takes_its_minimum_of_bytes(tmp_path):
    """A run whose start-up ate its budget still reads what its minimum of work needs (a size, not a time):
    at least `at_least_bytes` of the transcript, then stops at the first line past it."""
    from subcog_store.extraction.transcript import read_assistant_texts

    path = tmp_path / "many.jsonl"
    path.write_bytes(b"".join(assistant(decision(i), f"u{i}") for i in range(500)))
    line = len(assistant(decision(0), "u0"))
    late = read_assistant_texts(path, deadline=0.0, at_least_bytes=20 * line)
    assert late.truncated and 20 <= len(late.texts) <= 22 and late.next_offset >= 20 * line
    assert len(read_assistant_texts(path, deadline=0.0).texts) == 1   # no minimum: one line, as before
    assert len(read_assistant_texts(path, deadline=None, at_least_bytes=20 * line).texts) == 500


def test_a_read_says_which_limit_stopped_it(tmp_path):
    """The reader's early stop names its cause: its share of bytes, or its deadline; a whole read names none."""
    from subcog_store.extraction.transcript import read_assistant_texts

    path = tmp_path / "many.jsonl"
    path.write_bytes(b"".join(assistant(decision(i), f"u{i}") for i in range(50)))
    line = len(assistant(decision(0), "u0"))
    assert read_assistant_texts(path, max_bytes=5 * line).stopped_by == "size"
    assert read_assistant_texts(path, deadline=0.0, at_least_bytes=5 * line).stopped_by == "deadline"
    whole = read_assistant_texts(path)
    assert not whole.truncated and whole.stopped_by == ""


def test_a_run_its_limits_stopped_is_partial_not_failed():
    """A run stopped by its budget or its read's share of bytes, before it captured anything, is partial (the next
    run goes on); a real error with nothing captured is a failure."""
    from subcog_store.capture.run import Run

    stopped = Run()
    stopped.stop_at("size")
    stopped.stop_at("budget")
    stopped.stop_at("budget")
    assert stopped.status == "partial" and len(stopped.errors) == 2
    stopped.fail("transcript unreadable", OSError("gone"))
    assert stopped.status == "failed"


@pytest.mark.parametrize("limit, says", [("deadline", "time budget used up"), ("size", "as much of the transcript")])
def test_a_run_the_reader_stopped_early_says_why(tmp_path, monkeypatch, limit, says):
    """A hook run whose read of the transcript stopped early (its deadline, or the bytes one run reads) says why
    in its status line, once, as the capture's own stops do; the rest is read by the next run."""
    from subcog_store.capture import session
    from subcog_store.claude_code.handlers import pre_compact
    from subcog_store.claude_code.report import system_message
    from subcog_store.extraction import transcript

    from conftest import FakeClock

    scrub_environ(monkeypatch)
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(assistant(decision(i), f"u{i}") for i in range(300)))
    line = len(assistant(decision(0), "u0"))
    if limit == "size":
        monkeypatch.setattr(transcript, "MAX_READ_BYTES", 100 * line)
    else:   # the reader finds every deadline passed: it reads its minimum of bytes, then stops
        monkeypatch.setattr(session, "MIN_READ_BYTES", 100 * line)
        monkeypatch.setattr(transcript, "time", types.SimpleNamespace(monotonic=lambda: math.inf))
    options = session.HookOptions(tmp_path / "s.db", budget_secs=600.0, clock=FakeClock(time.monotonic()),
                                  environ={**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")})
    run = pre_compact(json.dumps(payload(path)).encode(), options)   # the capture's still clock: only the reader
    assert run.truncated and 0 < len(run.captured) < 300
    message = system_message(run.report())
    assert says in message and message.count(says) == 1 and len(run.errors) == 1, (message, run.errors)


def test_a_hooks_budget_counts_its_process_start_up(monkeypatch):
    """In process the budget and the client's timeout are counted from the hook process's start (importing the
    model and the pipeline on a busy machine takes seconds); through the worker, from what the caller used."""
    from subcog_store.claude_code.request import CAPTURE_TIMEOUT_SECS, MIN_BUDGET_SECS, HookRequest

    environ = {"SUBCOG_HOOK_BUDGET_SECS": "20"}
    late = HookRequest("pre-compact", b"{}", environ, started=time.monotonic() - 5.0)
    assert late.budget() <= 15.0 and late.timeout_left() <= CAPTURE_TIMEOUT_SECS - 5.0
    assert HookRequest("pre-compact", b"{}", environ, started=time.monotonic() - 60.0).budget() == MIN_BUDGET_SECS
    via_worker = HookRequest("pre-compact", b"{}", environ, budget_secs=12.0)
    assert via_worker.budget() == 12.0 and via_worker.timeout_left() == CAPTURE_TIMEOUT_SECS - 8.0
    assert HookRequest("pre-compact", b"{}", environ).timeout_left() == CAPTURE_TIMEOUT_SECS
    longer = {**environ, "SUBCOG_HOOK_TIMEOUT_SECS": "90"}   # the user gave the capture hooks another timeout
    assert HookRequest("pre-compact", b"{}", longer, budget_secs=12.0).timeout_left() == 90.0 - 8.0
    bad = {**environ, "SUBCOG_HOOK_TIMEOUT_SECS": "soon"}    # a bad value: the default (its check names it)
    assert HookRequest("pre-compact", b"{}", bad).timeout_left() == CAPTURE_TIMEOUT_SECS


def test_every_record_before_the_saved_offset_was_captured(tmp_path):
    lines = [assistant(decision(i), f"u{i}") for i in range(3000)]   # extracting them takes 0.5 to 3 s
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"".join(lines))
    db = tmp_path / "s.db"
    assert run(["--db", str(db), "init"], tmp_path).returncode == 0
    message(hook(tmp_path, db, payload(path), SUBCOG_HOOK_BUDGET_SECS="0.5", **NO_MODEL)[0])
    offset = count(db, "select coalesce(max(byte_offset), 0) from hook_offsets")
    read = sum(end <= offset for end in itertools.accumulate(len(line) for line in lines))
    assert count(db) >= read, f"{read} records read past, {count(db)} memories"


def test_a_capture_its_budget_stopped_is_finished_by_the_next_capture_hook_of_any_session(tmp_path, monkeypatch):
    """29.10: a capture deferred for its budget says so in the log, and the next capture hook on the store (here
    another session's) goes on with it, so the memories a transcript gives do not depend on the load."""
    from subcog_store.capture.session import MIN_CAPTURES, HookOptions
    from subcog_store.claude_code.handlers import pre_compact, setup_log

    scrub_environ(monkeypatch)
    environ = {**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")}
    path = tmp_path / "a.jsonl"
    path.write_bytes(assistant("\n\n".join(decision(i) for i in range(100))))
    other = tmp_path / "b.jsonl"
    other.write_bytes(assistant(decision(1000)))
    db = tmp_path / "s.db"
    root = logging.getLogger("subcog_store")
    before, propagate, level = list(root.handlers), root.propagate, root.level
    setup_log(environ)
    try:
        busy = pre_compact(json.dumps(payload(path, "a")).encode(),
                           HookOptions(db, budget_secs=2.0, clock=BusyClock(), environ=environ))
        assert busy.truncated and len(busy.captured) == MIN_CAPTURES
        assert count(db, "select count(*) from hook_pending where deferred = 1") == 1
        calm = pre_compact(json.dumps(payload(other, "b")).encode(), HookOptions(db, environ=environ))
    finally:
        for handler in [h for h in root.handlers if h not in before]:
            root.removeHandler(handler)
            handler.close()
        root.propagate, root.level = propagate, level
    assert len(calm.captured) == 1
    assert count(db) == 101 and count(db, "select count(*) from hook_pending") == 0
    log = (tmp_path / "hook.log").read_text()
    assert "deferred for its budget" in log and "finishing a deferred pre-compact capture of session=a" in log


class SlowEmbedder:
    """The real model, 0.25 s slower per batch by `clock` (as on a loaded machine; no real waiting)."""

    def __init__(self, real, clock: "FakeClock") -> None:
        self.real, self.clock = real, clock

    def __getattr__(self, name: str):
        return getattr(self.real, name)

    def embed_batch(self, texts):
        self.clock.advance(0.25)
        return self.real.embed_batch(texts)


def test_a_deadline_met_while_embedding_still_captures_what_is_embedded(tmp_path, embedder):
    """A deadline that passes while a chunk is embedded: what is embedded is captured, nothing after the
    deadline is started, the rest is left for the next run. Time is a fake clock the embedder moves."""
    from conftest import FakeClock
    from subcog_store.dedup.in_batch import EMBED_CHUNK, capture_many
    from subcog_store.store import CaptureRequest, Store

    clock = FakeClock(0.0)
    texts = [decision(i) + " The reason is recorded in the design notes." for i in range(200)]
    with Store(tmp_path / "s.db", embedder=SlowEmbedder(embedder, clock), environ={}) as store:
        outcomes = capture_many(store.core, [CaptureRequest(t, "decisions") for t in texts], deadline=1.0,
                                clock=clock)
    stored = sum(o.result is not None and o.result.stored for o in outcomes)
    handled = sum(o.handled for o in outcomes)
    assert stored > 0 and handled % EMBED_CHUNK == 0 and handled < len(texts)
    assert clock.now <= 1.0 + 0.25            # no chunk embedded once the deadline had passed
    assert all(not o.handled for o in outcomes[handled:])


def test_the_minimum_of_work_is_done_past_the_deadline(tmp_path, embedder):
    """`minimum`: that many requests are handled even when the deadline passed before the first."""
    from conftest import FakeClock
    from subcog_store.dedup.in_batch import capture_many
    from subcog_store.store import CaptureRequest, Store

    clock = FakeClock(10.0)
    texts = [decision(i) for i in range(50)]
    with Store(tmp_path / "s.db", embedder=embedder, environ={}) as store:
        outcomes = capture_many(store.core, [CaptureRequest(t, "decisions") for t in texts], deadline=1.0,
                                minimum=7, clock=clock)
    assert [o.handled for o in outcomes] == [True] * 7 + [False] * 43
    assert all(o.result is not None for o in outcomes[:7])


class RecordingEmbedder:
    """The real model; remembers how many texts each call embedded."""

    def __init__(self, real) -> None:
        self.real, self.calls = real, []

    def __getattr__(self, name: str):
        return getattr(self.real, name)

    def embed_batch(self, texts):
        self.calls.append(len(texts))
        return self.real.embed_batch(texts)


def test_past_the_deadline_the_minimum_embeds_in_short_steps_and_stops_at_the_limit(tmp_path, embedder):
    """Past the deadline only what the minimum still needs is embedded, LATE_CHUNK texts at a time (a short step
    on a busy machine); past `limit` only `at_least` requests are handled."""
    from conftest import FakeClock
    from subcog_store.dedup.in_batch import LATE_CHUNK, capture_many
    from subcog_store.store import CaptureRequest, Store

    texts = [decision(i) for i in range(50)]
    recording = RecordingEmbedder(embedder)
    with Store(tmp_path / "s.db", embedder=recording, environ={}) as store:
        outcomes = capture_many(store.core, [CaptureRequest(t, "decisions") for t in texts], deadline=1.0,
                                minimum=20, limit=20.0, at_least=1, clock=FakeClock(10.0))
    assert [o.handled for o in outcomes] == [True] * 20 + [False] * 30
    assert recording.calls and max(recording.calls) <= LATE_CHUNK and sum(recording.calls) == 20
    with Store(tmp_path / "t.db", embedder=embedder, environ={}) as store:
        outcomes = capture_many(store.core, [CaptureRequest(t, "decisions") for t in texts], deadline=1.0,
                                minimum=20, limit=5.0, at_least=1, clock=FakeClock(10.0))
    assert [o.handled for o in outcomes] == [True] + [False] * 49


class SlowStartEmbedder(RecordingEmbedder):
    """The real model whose start-up takes `secs` by `clock` (on a loaded machine: seconds of wall clock)."""

    def __init__(self, real, clock: "FakeClock", secs: float) -> None:
        super().__init__(real)
        self.clock, self.secs, self.started = clock, secs, False

    @property
    def loaded(self) -> bool:
        return self.started

    def load(self) -> None:
        if not self.started:
            self.clock.advance(self.secs)
            self.started = True

    def embed_batch(self, texts):
        self.load()
        return super().embed_batch(texts)


def test_a_model_start_up_that_eats_the_time_left_is_followed_by_the_minimum_only(tmp_path, embedder):
    """29.8 under load (a run at 5% of a core: the model's start-up took 15 s of wall clock): the chunk to embed
    is sized once the model is up, not before. It was sized before: 32 texts embedded (10 s more) while the run,
    past its limit by then, could handle one; the run ended past the client's timeout."""
    from conftest import FakeClock
    from subcog_store.dedup.in_batch import EMBED_CHUNK, capture_many
    from subcog_store.store import CaptureRequest, Store

    clock = FakeClock(0.0)
    slow = SlowStartEmbedder(embedder, clock, secs=30.0)
    with Store(tmp_path / "s.db", embedder=slow, environ={}) as store:
        outcomes = capture_many(store.core, [CaptureRequest(decision(i), "decisions") for i in range(2 * EMBED_CHUNK)],
                                deadline=20.0, minimum=32, limit=25.0, at_least=1, clock=clock)
    assert [o.handled for o in outcomes] == [True] + [False] * (2 * EMBED_CHUNK - 1)
    assert slow.calls == [1]


# ------------------------------------------------------------------------------------------------ 3. full disk
@pytest.fixture
def tmpfs(tmp_path):
    """A 1 MiB tmpfs (root only); unmounted at the end whatever happens."""
    if not IS_ROOT:
        pytest.skip("mounting a tmpfs needs root (the simulated full disk runs instead)")
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"mount not permitted: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def jsonl(n: int, start: int = 0) -> bytes:
    return b"".join(json.dumps({"content": decision(i) + " " + "padding " * 40, "namespace": "decisions"}).encode()
                    + b"\n" for i in range(start, start + n))


def assert_stopped_at_a_full_disk(code: int, out: str, err: str, lines: int) -> int:
    """--jsonl on a disk that fills: the lines before keep their results, then one 'disk is full', then 'not
    attempted'; exit 4. Returns how many lines were handled."""
    results = [json.loads(line) for line in out.splitlines()]
    assert code == 4, err
    assert [r["line"] for r in results] == list(range(1, lines + 1))
    ok = sum(r["ok"] for r in results)
    assert all(r["ok"] for r in results[:ok])
    assert "disk is full" in results[ok]["error"] and results[ok]["exit_code"] == 4
    assert all("not attempted" in r["error"] and r["exit_code"] == 4 for r in results[ok + 1:])
    assert "Traceback" not in err and "disk is full" in err
    return ok


FULL_DISK_COMMANDS = [
    ("capture", "-n", "decisions", decision(9999)), ("capture", "--json", "-n", "decisions", decision(9998)),
    ("check", "-n", "decisions", decision(1)), ("check", "--json", "-n", "decisions", decision(2)),
    ("list", "--json"), ("stats", "--json"), ("review", "--json"), ("doctor", "--json"), ("init",),
    ("confirm", "1"), ("reverse", "1"), ("unmerge", "1"), ("dedup", "--json"), ("dedup", "--dry-run", "--json"),
    ("reembed",), ("show", "--json", "nope"),
]


def assert_commands_on_a_full_disk(monkeypatch, capsys, db: Path) -> None:
    for argv in FULL_DISK_COMMANDS:
        code, out, err = cli(monkeypatch, capsys, "--db", str(db), *argv, **NO_MODEL)
        assert code in (0, 1, 2, 4, 6, 7), (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        if code == 4:
            assert "full" in err or "disk" in err, (argv, err)
        if "--json" in argv and code in (0, 6):
            json.loads(out)
    code, out, err = cli(monkeypatch, capsys, "--db", str(db), "check", "--jsonl", stdin=jsonl(30), **NO_MODEL)
    assert code == 0 and len(out.splitlines()) == 30 and err.count("check not logged") <= 1, err


def test_a_full_tmpfs(tmp_path, tmpfs, monkeypatch, capsys):
    db = tmpfs / "s.db"
    assert run(["--db", str(db), "init"], tmp_path, **NO_MODEL).returncode == 0
    proc = run(["--db", str(db), "capture", "--jsonl"], tmp_path, jsonl(400), **NO_MODEL)
    stored = assert_stopped_at_a_full_disk(proc.returncode, proc.stdout.decode(), proc.stderr.decode(), 400)
    assert 1 <= stored < 400 and count(db) == stored
    proc = run(["--db", str(db), "capture", "-n", "decisions", decision(5000)], tmp_path, **NO_MODEL)
    assert proc.returncode == 4 and b"disk is full" in proc.stderr and b"Traceback" not in proc.stderr
    assert_commands_on_a_full_disk(monkeypatch, capsys, db)
    proc, _ = hook(tmp_path, db, payload(SESSION_A), **NO_MODEL)
    message(proc)
    code, _, err = cli(monkeypatch, capsys, "install-hooks", "--project", str(tmpfs))
    assert code == 2 and "cannot write" in err and not (tmpfs / ".claude" / "settings.json").exists(), err
    assert read_rows(db, "pragma quick_check") == [("ok",)]
    assert count(db, "select count(*) from memories") == stored


class FullVFS(apsw.VFS):
    """The default VFS while installed: writes to a WAL fail with SQLITE_FULL once `writes_left` reaches 0 (a
    checkpoint into the database file, which already has its pages, goes on as on a real full disk)."""

    def __init__(self) -> None:
        self.writes_left: int | None = None
        super().__init__("subcog-full", "unix", makedefault=True)

    def xOpen(self, name, flags):
        return FullFile(self, name, flags)


class FullFile(apsw.VFSFile):
    def __init__(self, vfs: FullVFS, name, flags) -> None:
        self.vfs, self.wal = vfs, str(getattr(name, "filename", name) or "").endswith("-wal")
        super().__init__("unix", name, flags)

    def xWrite(self, data, offset) -> None:
        if self.wal and self.vfs.writes_left is not None:
            if self.vfs.writes_left <= 0:
                raise apsw.FullError("database or disk is full (simulated)")
            self.vfs.writes_left -= 1
        super().xWrite(data, offset)


@pytest.fixture
def full_vfs():
    vfs = FullVFS()
    try:
        yield vfs
    finally:
        vfs.unregister()


def test_a_simulated_full_disk(tmp_path, full_vfs, monkeypatch, capsys):
    db = tmp_path / "s.db"
    assert cli(monkeypatch, capsys, "--db", str(db), "init", **NO_MODEL)[0] == 0
    full_vfs.writes_left = 60
    code, out, err = cli(monkeypatch, capsys, "--db", str(db), "capture", "--jsonl", stdin=jsonl(50), **NO_MODEL)
    stored = assert_stopped_at_a_full_disk(code, out, err, 50)
    full_vfs.writes_left = 0
    assert_commands_on_a_full_disk(monkeypatch, capsys, db)
    full_vfs.writes_left = None
    assert 1 <= stored < 50 and count(db) == stored
    code, out, err = cli(monkeypatch, capsys, "--db", str(db), "capture", "--jsonl", stdin=jsonl(50), **NO_MODEL)
    assert code == 0 and count(db) == 50, err


def test_a_commit_that_fails_leaves_no_transaction_open():
    from subcog_store.db.connection import immediate

    con = apsw.Connection(":memory:")
    con.execute("pragma foreign_keys = on; create table p (id primary key); create table c (pid references p (id))")
    with pytest.raises(apsw.ConstraintError):
        with immediate(con):
            con.execute("insert into c values (1)")   # deferred: fails at commit
    assert con.getautocommit()
    with immediate(con):
        con.execute("insert into p values (1)")
    con.close()


# ------------------------------------------------------------------------------------------ 5. bad --jsonl lines
BAD_LINES = [
    ('{"content": "deep", "namespace": "decisions", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested"),
    ('{"content": "digits", "namespace": "decisions", "importance": ' + "1" * 5001 + "}", "not JSON"),
    ('{"content": "a surrogate domain", "namespace": "decisions", "domain": "\\ud800"}', "domain"),
    ('{"content": "a surrogate session", "namespace": "decisions", "session_id": "\\udfff"}', "session_id"),
    ('{"content": "a surrogate source", "namespace": "decisions", "source": "\\ud83d"}', "source"),
    ('{"content": "a surrogate tag", "namespace": "decisions", "tags": ["\\ud83d"]}', "tag"),
    ('{"content": "a control character", "namespace": "decisions", "domain": "a\\u0000b"}', "control"),
    ('{"content": "an infinite importance", "namespace": "decisions", "importance": 1e999}', "importance"),
    ('{"content": "\\ud800 in the content", "namespace": "decisions"}', "UTF-8"),
    ("\xff\xfe not utf-8", "UTF-8"),
    ("[1, 2]", "content"),
]


@pytest.mark.parametrize("command", ["capture", "check"])
def test_bad_jsonl_lines_cost_only_themselves(tmp_path, command):
    good = [json.dumps({"content": decision(i), "namespace": "decisions"}) for i in range(3)]
    lines = [good[0]] + [line for line, _ in BAD_LINES] + good[1:]
    stdin = "\n".join(lines).encode("utf-8", "surrogateescape").replace(b"\xc3\xbf\xc3\xbe", b"\xff\xfe") + b"\n"
    proc = run(["--db", str(tmp_path / "s.db"), command, "--jsonl"], tmp_path, stdin, **NO_MODEL)
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [r["line"] for r in results] == list(range(1, len(lines) + 1))
    assert results[0]["ok"] and results[-1]["ok"] and results[-2]["ok"]
    checked = BAD_LINES if command == "capture" else [b for b in BAD_LINES if b[1] in (
        "nested", "not JSON", "domain", "control", "UTF-8", "content")]
    for r, (line, words) in zip(results[1:], BAD_LINES):
        if (line, words) in checked:
            assert not r["ok"] and r["exit_code"] == 2 and words in r["error"], (line[:60], r)
    if command == "capture":
        assert count(tmp_path / "s.db") == 3


def test_the_python_check_refuses_a_surrogate_domain(make_store):
    from subcog_store.errors import InvalidInput

    with pytest.raises(InvalidInput):
        make_store(dedup_semantic_enabled=False).check_duplicate("a text", "decisions", "\ud800")


# ------------------------------------------------------------------------------ 6, 7. huge ids, huge limits, /dev/zero
HUGE = "9" * 30
HUGE_ARGS = [
    (("reverse", HUGE), 7), (("unmerge", HUGE), 7), (("confirm", HUGE), 7), (("show", HUGE), 7),
    (("reverse", "-" + HUGE), 7), (("reverse", "1e400"), 2), (("list", "--limit", "9" * 20), 2),
    (("review", "--limit", "9" * 20), 2), (("dedup", "--k", "9" * 20), 2), (("dedup", "--threshold", "nan"), 2),
    (("dedup", "--threshold", "1e999"), 2), (("capture", "-n", "decisions", "x", "--importance", "1e999"), 2),
    (("eval-pairs", "/dev/null", "--format", "jsonl", "--limit", "9" * 20), 2),
    (("list", "-d", "\udcff"), 2), (("show", "\udcff"), 2), (("capture", "-n", "decisions", "t", "-d", "\udcff"), 2),
    (("check", "-n", "decisions", "t", "-d", "\udcff"), 2), (("dedup", "-d", "\udcff"), 2),
]


@pytest.mark.parametrize("argv, expected", HUGE_ARGS, ids=[" ".join(a)[:40] for a, _ in HUGE_ARGS])
def test_huge_ids_and_limits_are_refused_with_their_exit_code(tmp_path, monkeypatch, capsys, argv, expected):
    code, _, err = cli(monkeypatch, capsys, "--db", str(tmp_path / "s.db"), *argv, **NO_MODEL)
    assert code == expected, err
    assert "Traceback" not in err and err.strip()


def test_a_database_path_that_is_not_utf8(tmp_path, monkeypatch, capsys):
    code, _, err = cli(monkeypatch, capsys, "list", SUBCOG_DB=str(tmp_path) + "/\udcff.db", **NO_MODEL)
    assert code == 4 and "UTF-8" in err


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("fmt", ["jsonl", "mrpc", "sts"])
def test_eval_pairs_reads_dev_zero_no_further_than_a_line(tmp_path, fmt):
    environ = clean_environ({"SUBCOG_WORKER_ENABLED": "false"})
    proc = subprocess.run([*CLI, "eval-pairs", "/dev/zero", "--format", fmt, "--limit", "1"], capture_output=True,
                          env=environ, timeout=30, preexec_fn=_limit_memory)
    assert proc.returncode == 2 and b"line longer than" in proc.stderr and b"Traceback" not in proc.stderr


# ------------------------------------------------------------------------------ 8. the hook's log and settings
@pytest.mark.parametrize("log", ["/dev/full", "/proc/no-such-dir/hook.log", "{tmp}", "{tmp}/file/hook.log"])
def test_a_hook_log_that_cannot_be_written_stays_off_stderr(tmp_path, log):
    (tmp_path / "file").write_text("not a directory")
    proc, _ = hook(tmp_path, tmp_path / "s.db", payload(SESSION_A), SUBCOG_HOOK_LOG=log.format(tmp=tmp_path),
                   **NO_MODEL)
    assert "captured" in message(proc)
    assert count(tmp_path / "s.db") > 0


@pytest.fixture
def worker_env(tmp_path):
    """The warm worker enabled in a runtime directory of this test's own; the worker it starts is stopped (by the
    pid in its pid file) at the end."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {"SUBCOG_WORKER_ENABLED": "true", "XDG_RUNTIME_DIR": str(runtime)}
    try:
        yield env
    finally:
        for pid_file in (runtime / "subcog-store").glob("worker-*.pid"):
            try:
                pid = int(json.loads(pid_file.read_text())["pid"])
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if b"subcog_store.worker.server" in cmdline:
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 10
                while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                if Path(f"/proc/{pid}").exists():
                    os.kill(pid, signal.SIGKILL)


def wait_for_worker(env: dict[str, str]) -> None:
    """Until the worker's socket and pid file are there."""
    home = Path(env["XDG_RUNTIME_DIR"]) / "subcog-store"
    deadline = time.monotonic() + 300   # bounds a broken run only
    while not (list(home.glob("worker-*.sock")) and list(home.glob("worker-*.pid"))):
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.05)


def test_a_hook_log_on_dev_full_through_the_worker(tmp_path, worker_env):
    message(hook(tmp_path, tmp_path / "first.db", payload(SESSION_A), **worker_env, **NO_MODEL)[0])
    wait_for_worker(worker_env)
    proc, _ = hook(tmp_path, tmp_path / "s.db", payload(SESSION_A), SUBCOG_HOOK_LOG="/dev/full", **worker_env,
                   **NO_MODEL)
    assert "captured 7" in message(proc)


@pytest.mark.parametrize("name, value", [("SUBCOG_HOOK_BUDGET_SECS", "nan"), ("SUBCOG_HOOK_BUDGET_SECS", "inf"),
                                         ("SUBCOG_HOOK_BUDGET_SECS", "-inf"), ("SUBCOG_HOOK_BUDGET_SECS", "1e400"),
                                         ("SUBCOG_HOOK_MIN_CONFIDENCE", "nan")])
def test_a_non_finite_hook_setting_is_named(tmp_path, name, value):
    proc, _ = hook(tmp_path, tmp_path / "s.db", payload(SESSION_A), **{name: value}, **NO_MODEL)
    assert name in message(proc)   # named at once: an infinite budget waiting forever would time out (60 s)


def test_a_bad_store_setting_is_named_by_the_hook(tmp_path):
    proc, _ = hook(tmp_path, tmp_path / "s.db", payload(SESSION_A), SUBCOG_DEDUP_THRESHOLD_DECISIONS="nan",
                   **NO_MODEL)
    assert "SUBCOG_DEDUP_THRESHOLD_DECISIONS" in message(proc)


def test_a_hook_domain_that_is_not_utf8_is_named_and_nothing_is_skipped(tmp_path):
    db = tmp_path / "s.db"
    proc, _ = hook(tmp_path, db, payload(SESSION_A), SUBCOG_HOOK_DOMAIN="\udcff", **NO_MODEL)
    assert "SUBCOG_HOOK_DOMAIN" in message(proc)
    assert "captured 7" in message(hook(tmp_path, db, payload(SESSION_A), **NO_MODEL)[0])


LOCKER = """
import sys, time, apsw
con = apsw.Connection(sys.argv[1])
con.execute("begin exclusive")
print("locked", flush=True)
time.sleep(120)
"""


@pytest.fixture
def locked_db(tmp_path):
    """A store another process holds the write lock of (killed at the end)."""
    db = tmp_path / "s.db"
    assert run(["--db", str(db), "init"], tmp_path).returncode == 0
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(db)], stdout=subprocess.PIPE)
    try:
        assert locker.stdout.readline().strip() == b"locked"
        yield db
    finally:
        locker.kill()
        locker.wait()
        locker.stdout.close()


def test_a_held_lock_is_reported_by_the_hook_process(tmp_path, locked_db):
    """The hook as a process: exit 0, nothing on stderr, output the client accepts, the lock named. How long
    it waits is the in-process test's below (a fake clock); a wall-clock figure belongs in bench/faults.py."""
    proc, _ = hook(tmp_path, locked_db, payload(SESSION_A), SUBCOG_HOOK_BUDGET_SECS="2", **NO_MODEL)
    # which write meets the lock first depends on the load (a capture, or only the save of where the run stopped
    # when reading used the budget): the report points to the log, and the log names the lock
    assert "see " in message(proc)
    assert "locked" in (tmp_path / "hook.log").read_text()


class LockWaits:
    """SQLite's lock wait on a fake clock: every wait the code asks for (db/locks.py, the only place that sets
    one) becomes a busy handler that moves `clock` on instead of sleeping, so how long a run waits for a held
    lock is counted exactly, whatever the machine's load. `waits`: (when it began, how long it lasted)."""

    STEP = 0.05

    def __init__(self, clock) -> None:
        self.clock, self.waits = clock, []

    def set(self, con, seconds: float) -> None:
        limit = max(seconds, 0.001)
        began: list[float] = []

        def busy(prior_calls: int) -> bool:
            if prior_calls == 0:
                began.append(self.clock.now)
                self.waits.append([self.clock.now, 0.0])
            waited = self.clock.now - began[-1]
            if waited >= limit:
                return False
            step = min(self.STEP, limit - waited)
            self.clock.advance(step)
            self.waits[-1][1] += step
            return True

        con.setbusyhandler(busy)


@pytest.mark.parametrize("extraction_secs", [0.0, 1.5])
def test_a_held_lock_costs_no_more_than_the_budget_and_its_grace(tmp_path, locked_db, monkeypatch,
                                                                   extraction_secs):
    """Another process holds the write lock for good: the run's lock waits (on a fake clock, see LockWaits)
    end by its budget plus the grace for saving where it stopped, also when extracting used most of the budget
    first; the run says the store is locked."""
    from conftest import FakeClock
    from subcog_store.capture.session import SAVE_GRACE_SECS, HookOptions
    from subcog_store.claude_code.handlers import pre_compact
    from subcog_store.db import locks
    from subcog_store.extraction import extract

    scrub_environ(monkeypatch)
    clock = FakeClock(0.0)
    waits = LockWaits(clock)
    monkeypatch.setattr(locks, "_set", waits.set)
    real_extract = extract.extract_candidates

    def slow_extract(*args, **kwargs):
        clock.advance(extraction_secs)
        return real_extract(*args, **kwargs)
    monkeypatch.setattr(extract, "extract_candidates", slow_extract)
    budget = 2.0
    options = HookOptions(locked_db, budget_secs=budget, clock=clock,
                          environ={**NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")})
    run = pre_compact(json.dumps(payload(SESSION_A)).encode(), options)
    assert "locked" in run.report() or any("locked" in str(e) for e in run.errors), run.report()
    assert waits.waits, "the run never met the lock"
    assert clock.now <= budget + SAVE_GRACE_SECS + 1e-9, waits.waits
    assert all(start + length <= budget + SAVE_GRACE_SECS + 1e-9 for start, length in waits.waits), waits.waits


# ------------------------------------------------------------------------------------ concurrent first opens
def test_a_file_another_process_creates_while_it_is_opened_is_ours(tmp_path, monkeypatch):
    """connect() read the application id and the schema in two snapshots: a file another process created in
    between looked foreign (NotASubcogDatabase, exit 5; 8 processes creating one new file: about one run in two)."""
    import threading

    from subcog_store.db import connection

    db = tmp_path / "new.db"
    other: list[threading.Thread] = []

    class Interleaved(apsw.Connection):
        def execute(self, sql, *args):
            if sql != "pragma application_id" or other:
                return super().execute(sql, *args)
            rows = super().execute(sql, *args).fetchall()   # read; then the other process creates the file
            other.append(threading.Thread(target=lambda: connection.connect(db).close()))
            other[0].start()
            other[0].join(0.5)            # it may have to wait for this reader's snapshot
            return type("Rows", (), {"fetchone": lambda _: rows[0]})()

    monkeypatch.setattr(apsw, "Connection", Interleaved)
    connection.connect(db).close()
    other[0].join(15)
    assert not other[0].is_alive() and connection.schema_version(apsw.Connection(str(db))) == \
        connection.latest_version()


# ------------------------------------------------------------------------------------------ 9. a killed dedup
def planted(db: Path) -> None:
    """Six pairs of reworded memories (the text tier clusters each pair)."""
    from subcog_store.store import Store

    topics = ["Redis for the session store", "PostgreSQL for the billing ledger", "Kafka for the order events",
              "nginx as the edge proxy", "S3 for the nightly backups", "Terraform for the staging network"]
    with Store(db, environ={**NO_MODEL, "SUBCOG_DEDUP_ENABLED": "false"}) as store:
        for t in topics:
            store.capture(f"We use {t} in every production region of the platform", "decisions")
            store.capture(f"In every production region of the platform we use {t}", "decisions")


def runs(db: Path) -> list[tuple[int, str]]:
    return read_rows(db, "select id, status from dedup_runs order by id")


def test_a_killed_dedup_run_is_marked_interrupted_and_one_run_at_a_time(tmp_path):
    from subcog_store.db.connection import connect
    from subcog_store.doctor import diagnose

    db = tmp_path / "s.db"
    planted(db)
    environ = clean_environ({**NO_MODEL, "SUBCOG_BATCH_TEST_SLEEP": "2", "SUBCOG_WORKER_ENABLED": "false"})
    proc = subprocess.Popen([*CLI, "--db", str(db), "dedup"], env=environ, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300   # bounds a broken run only
        while count(db, "select count(*) from dedup_log where policy = 'batch'") < 1:
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
            time.sleep(0.02)
        second = run(["--db", str(db), "dedup"], tmp_path, **NO_MODEL)
        assert second.returncode == 4 and b"another" in second.stderr, second.stderr
        assert runs(db) == [(1, "running")]
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert run(["--db", str(db), "stats", "--json"], tmp_path, **NO_MODEL).returncode == 0
    assert runs(db) == [(1, "interrupted")]
    con = connect(db, migrate=False)
    try:
        bad = [f for f in diagnose(con) if not f.ok and f.check != "active_memory_has_vector"]
    finally:
        con.close()
    assert not bad, bad
    assert run(["--db", str(db), "dedup"], tmp_path, **NO_MODEL).returncode == 0
    assert runs(db) == [(1, "interrupted"), (2, "finished")]
    assert count(db) == 6


# ------------------------------------------------------------------------------------------ 9. install-hooks
@pytest.mark.parametrize("where", ["missing", "a-file", "missing-home"])
def test_install_hooks_refuses_a_directory_that_does_not_exist(tmp_path, monkeypatch, capsys, where):
    (tmp_path / "a-file").write_text("")
    if where == "missing-home":
        argv, env = ["install-hooks", "--user"], {"HOME": str(tmp_path / "nowhere")}
    else:
        argv, env = ["install-hooks", "--project", str(tmp_path / where / "dir")], {}
        if where == "a-file":
            argv[-1] = str(tmp_path / "a-file")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for extra in ([], ["--dry-run"], ["--uninstall"]):
        code, _, err = cli(monkeypatch, capsys, *argv, *extra)
        assert code == 2 and "not an existing directory" in err, (extra, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
