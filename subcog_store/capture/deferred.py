"""Deferred captures, finished by the warm worker while it is idle.

A capture run that its budget stopped early (a huge record, a busy machine) saves where it stopped and records
itself as deferred (capture/session.py); the next capture hook on the store goes on with it. In process that next
run pays the hook's fixed costs again (imports, the model's start-up: more than a whole budget gives on a busy
machine, leaving one candidate a run). The warm worker has none of them: while no request runs or waits it takes
turns (`finish_turn`) on the deferred captures of the stores its hooks named (worker/backlog.py), from where the
last run stopped, through the same reading, extraction, resume point and checks as the next hook
(`capture_source`), so the memories are the same whichever path finishes the record.

A turn has no time slice a busy CPU can eat before it starts: it handles at least one candidate whatever the
time, goes on up to TURN_SECS, and gives way as soon as a request wants the worker (after the candidate under way
and an embedding step of TURN_CHUNK texts). A turn that moves nothing on ends the store's turns until a hook names
the store again, so a capture that keeps failing never spins.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable, Mapping

from subcog_store.capture.run import TIMEOUT_MARGIN_SECS, HookOptions, Run, Source
from subcog_store.capture.session import capture_source
from subcog_store.db import hook_state
from subcog_store.model import provider

log = logging.getLogger("subcog_store.hook.capture")
TURN_SECS = 5.0   # a turn's time while no request wants the worker (its first candidate whatever the time)
TURN_CHUNK = 4    # texts a turn embeds at once: a request that arrives waits for at most one such step


def finish_turn(db: Path | str, environ: Mapping[str, str], wanted: Callable[[], bool],
                clock: Callable[[], float] = time.monotonic, embedders: str = provider.SHARED) -> bool:
    """One turn on the oldest deferred capture of the SQLite store at `db`, its settings read from `environ` (those
    of the last hook that named the store). `wanted()`: a request waits for the worker (the turn gives way).
    Returns whether another turn may follow (this one moved a capture on; more may be deferred)."""
    from subcog_store.store import Store   # lazy: the store (apsw, the model) loads when a turn runs

    with Store(db, environ=dict(environ), embedders=embedders, fetch_model=False) as store:
        found = hook_state.deferred(store.con, 1).records   # unreadable rows: the hooks set them aside
    if not found:
        return False
    record = found[0]
    if not Path(str(record.get("transcript_path") or "")).is_absolute():
        log.info("a deferred capture of session=%s names a relative transcript path: left for the next hook",
                 record.get("session_id"))
        return False
    event = record["event"] if record.get("event") in ("pre-compact", "session-end") else "pre-compact"
    started = clock()
    end = started + TURN_SECS

    def turn_clock() -> float:
        """The real clock, past the turn's end once a request wants the worker."""
        now = clock()
        return max(now, end + 1.0) if wanted() else now

    options = HookOptions.from_env(Path(db), event=event, environ=environ, budget_secs=TURN_SECS,
                                   embedders=embedders)
    # the minimum's limit at the turn's end: past it (or once wanted) the turn stops after its first candidate
    options.clock, options.embed_chunk = turn_clock, TURN_CHUNK
    options.timeout_secs = TURN_SECS + TIMEOUT_MARGIN_SECS
    run = Run(dry_run=False, log=options.log_path, trigger=record.get("trigger") or event)
    log.info("worker: a turn on the deferred %s capture of session=%s", event, record.get("session_id"))
    capture_source(Source.from_pending(record), options, run, started, end, redo=True)
    return bool(run.captured or run.skipped) or not (run.truncated or run.errors)
