"""The record of a transcript capture that may finish after its hook answered (the warm worker's, see
capture/session.py): marked before the answer, cleared in the transaction that saves the run's offset, and found
by a later capture hook when its worker died before finishing it. The rows are `db/hook_state.py`'s.
"""
from __future__ import annotations

from subcog_store.clock import iso
from subcog_store.db import hook_state
from subcog_store.db.connection import immediate

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


def stale(store, budget_secs: float) -> list[dict]:
    """The records of pending captures older than their worker could still be running (at most REDO_MAX)."""
    return hook_state.pending_before(store.con, iso(store.clock() - max(STALE_SECS, 2 * budget_secs)), REDO_MAX)
