"""The record of a transcript capture that may finish after its hook answered (the warm worker's, see
capture/session.py): marked before the answer, cleared in the transaction that saves the run's offset, and found
by a later capture hook when its worker died before finishing it. The rows are `db/hook_state.py`'s, read one
by one: one that cannot be read is set aside (hook_pending_set_aside, reported by `doctor`) and never stops the
others.
"""
from __future__ import annotations

import logging

from subcog_store.clock import iso
from subcog_store.db import hook_state, locks
from subcog_store.db.connection import immediate

log = logging.getLogger("subcog_store.hook.capture")

KEYS = ("session_id", "transcript_path", "cwd", "trigger", "hook_event_name")   # what is kept: never content
STALE_SECS = hook_state.STALE_SECS   # older than this (and than twice the budget): left by a dead worker
REDO_MAX = 5         # pending captures one hook redoes at most


def mark(store, session_key: str, path: str, record: dict) -> None:
    """Record that this capture may finish after the hook answered (or is being redone now)."""
    hook_state.mark_pending(store.con, session_key, path, record, iso(store.clock()))


def clear(store, session_key: str, path: str, in_transaction: bool = False) -> None:
    """Nothing of this session's transcript is pending any more (`in_transaction`: the caller's)."""
    if in_transaction:
        hook_state.clear_pending(store.con, session_key, path)
        return
    with immediate(store.con):
        hook_state.clear_pending(store.con, session_key, path)


def to_redo(store, budget_secs: float, own: str | None = None) -> list[dict]:
    """What a capture hook finishes after its own transcript (`own`, left out), at most REDO_MAX: the captures
    their budget stopped early (any session's), then those older than their worker could still be running. The
    records among them that cannot be read are set aside, logged by fingerprint, so they never stop the others."""
    deferred = hook_state.deferred(store.con, REDO_MAX)
    stale = hook_state.pending_before(store.con, iso(store.clock() - max(STALE_SECS, 2 * budget_secs)), REDO_MAX)
    _set_aside(store, deferred.unreadable + stale.unreadable)
    found = [dict(r, deferred=True) for r in deferred.records] + stale.records
    seen, out = {own}, []
    for record in found:
        if record["transcript_path"] not in seen:
            seen.add(record["transcript_path"])
            out.append(record)
    return out[:REDO_MAX]


def _set_aside(store, unreadable: list[hook_state.Unreadable]) -> None:
    if not unreadable:
        return
    try:
        with locks.best_effort(store.con):   # busy: they stay queued, and the next hook sets them aside
            hook_state.set_aside(store.con, unreadable, iso(store.clock()))
    except Exception as e:  # noqa: BLE001 - busy, read-only, damaged: never in the way of the redo
        log.warning("unreadable pending captures not set aside yet: %s: %s", type(e).__name__, e)
    else:
        for row in unreadable:
            log.warning("a pending capture record that cannot be read was set aside: %s: %s", row.describe(),
                        row.reason)
