"""The record of a transcript capture that may finish after its hook answered (the warm worker's, see
capture/session.py): marked before the answer, cleared in the transaction that saves the run's offset, and found
by a later capture hook when its worker died before finishing it.
"""
from __future__ import annotations

import json
import logging

from subcog_store.clock import iso
from subcog_store.db.connection import immediate
from subcog_store.db.sqlfiles import q

log = logging.getLogger("subcog_store.hook.capture")
KEYS = ("session_id", "transcript_path", "cwd", "trigger", "hook_event_name")   # what is kept: never content
STALE_SECS = 120.0   # a pending capture older than this (and than twice the budget) was left by a dead worker
REDO_MAX = 5         # pending captures one hook redoes at most


def mark(store, session_key: str, path: str, payload: dict) -> None:
    """Record that this capture may finish after the hook answered (or is being redone now)."""
    with immediate(store.con):
        store.con.execute(q("mark_hook_pending"), {"session_id": session_key, "transcript_path": path,
                                                   "payload": json.dumps(payload), "now": iso(store.clock())})


def clear(store, session_key: str, path: str, in_transaction: bool = False) -> None:
    """Nothing of this session's transcript is pending any more (`in_transaction`: the caller's)."""
    params = {"session_id": session_key, "transcript_path": path}
    if in_transaction:
        store.con.execute(q("clear_hook_pending"), params)
        return
    with immediate(store.con):
        store.con.execute(q("clear_hook_pending"), params)


def stale(store, budget_secs: float) -> list[dict]:
    """The hook inputs of pending captures older than their worker could still be running (at most REDO_MAX)."""
    return recorded_before(store.con, iso(store.clock() - max(STALE_SECS, 2 * budget_secs)), REDO_MAX)


def recorded_before(con, before: str, limit: int = -1) -> list[dict]:
    """The hook inputs of captures recorded as pending before `before` (ISO), oldest first; best effort: []
    when they cannot be read (a store older than migration 010 has none)."""
    try:
        rows = con.execute(q("stale_hook_pending"), {"before": before, "limit": limit}).fetchall()
        found = [json.loads(row[0]) for row in rows]
    except Exception as e:  # noqa: BLE001 - an unreadable row: the next hook sees it again
        log.warning("pending captures not read: %s: %s", type(e).__name__, e)
        return []
    return [p for p in found if isinstance(p, dict) and isinstance(p.get("transcript_path"), str)]
