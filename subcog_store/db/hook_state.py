"""The hooks' own state: where each session's transcript capture stopped (`hook_offsets`), the report of each
capture run (`hook_runs`), the captures that finish after their hook answered (`hook_pending`), and the texts a
capture found no candidate in (`extraction_memo`, by fingerprint: extraction/memo.py).

Reads run on the caller's connection; writes inside the caller's write transaction unless said otherwise.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import NamedTuple

import apsw

from subcog_store.db.connection import immediate
from subcog_store.db.sqlfiles import q
from subcog_store.text.normalize import fingerprint

log = logging.getLogger("subcog_store.hook.capture")
STALE_SECS = 120.0   # a capture pending longer than this (and than twice its budget) was left by a dead worker


# ------------------------------------------------------------------------------------------------ offsets

class Resume(NamedTuple):
    """Where a transcript's capture goes on: the record (byte offset), the piece of its text (characters of it
    already handled), how many candidates of that piece were handled and the fingerprint of the last of them.
    Ordered: a later position is further on."""

    offset: int = 0
    chars: int = 0
    done: int = 0
    mark: str | None = None

    def after(self, other: "Resume") -> bool:
        return self[:3] > other[:3]


def offset(con: "apsw.Connection", session_id: str, transcript_path: str) -> Resume:
    """Where the last capture of this session's transcript stopped (the start when there was none)."""
    row = con.execute(q("get_hook_offset"), {"session_id": session_id, "transcript_path": transcript_path}).fetchone()
    return Resume(int(row[0]), int(row[1]), int(row[2]), row[3]) if row else Resume()


def set_offset(con: "apsw.Connection", session_id: str, transcript_path: str, at: Resume, now: str) -> None:
    con.execute(q("set_hook_offset"), {"session_id": session_id, "transcript_path": transcript_path,
                                       "byte_offset": at.offset, "record_chars": at.chars, "piece_done": at.done,
                                       "piece_mark": at.mark, "now": now})


# ------------------------------------------------------------------------------------------------ runs

def add_run(con: "apsw.Connection", *, session_id: str | None, transcript_path: str | None, trigger: str | None,
            started_at: str, finished_at: str, status: str, captured: int, skipped: int, redacted: int,
            report: dict) -> None:
    """One capture run and its report."""
    con.execute(q("insert_hook_run"), {
        "session_id": session_id, "transcript_path": transcript_path, "trigger": trigger, "started_at": started_at,
        "finished_at": finished_at, "status": status, "captured": captured, "skipped": skipped,
        "redacted": redacted, "report": json.dumps(report)})


def undelivered_report(con: "apsw.Connection", session_id: str) -> tuple[int, dict] | None:
    """The newest undelivered capture report of a session (pre-compact runs) and its run id; nothing is marked."""
    row = con.execute(q("undelivered_hook_run"), {"session_id": session_id}).fetchone()
    return (int(row[0]), json.loads(row[1])) if row is not None else None


def run_reports(con: "apsw.Connection") -> list[tuple[int, str]]:
    """Every run's (id, report JSON), oldest first."""
    return con.execute(q("hook_run_reports")).fetchall()


def rewrite_report(con: "apsw.Connection", run_id: int, report: str) -> None:
    con.execute(q("redact_hook_run"), {"id": run_id, "report": report})


# ------------------------------------------------------------------------------------------------ pending

def mark_pending(con: "apsw.Connection", session_id: str, transcript_path: str, record: dict, now: str) -> None:
    """This capture may finish after its hook answered (or is being redone now). Its own write transaction."""
    with immediate(con):
        con.execute(q("mark_hook_pending"), {"session_id": session_id, "transcript_path": transcript_path,
                                             "payload": json.dumps(record), "now": now})


def clear_pending(con: "apsw.Connection", session_id: str, transcript_path: str) -> None:
    """Nothing of this session's transcript is pending any more (in the caller's transaction)."""
    con.execute(q("clear_hook_pending"), {"session_id": session_id, "transcript_path": transcript_path})


def defer(con: "apsw.Connection", session_id: str, transcript_path: str, record: dict, now: str) -> None:
    """This capture stopped early for its budget: the next capture hook on the store goes on with it (in the
    caller's transaction)."""
    con.execute(q("defer_hook_capture"), {"session_id": session_id, "transcript_path": transcript_path,
                                          "payload": json.dumps(record), "now": now})


@dataclass
class Unreadable:
    """A pending-capture record whose payload is not a hook input naming a transcript."""

    session_id: str
    transcript_path: str
    queued_at: str
    payload: str
    reason: str

    def describe(self) -> str:
        return f"{self.session_id} {self.transcript_path} ({fingerprint(self.payload)})"


@dataclass
class Pending:
    records: list[dict] = field(default_factory=list)        # hook inputs to redo, oldest first
    unreadable: list[Unreadable] = field(default_factory=list)


def pending_before(con: "apsw.Connection", before: str, limit: int = -1) -> Pending:
    """The captures marked pending before `before` (ISO) and never saved (their worker died), oldest first, read
    row by row: a row whose payload is not a hook input naming a transcript comes back apart, never in the way of
    the others. A store older than migration 010 has none."""
    return _read(con, "stale_hook_pending", {"before": before, "limit": limit})


def deferred(con: "apsw.Connection", limit: int = -1) -> Pending:
    """The captures their budget stopped early, oldest first, read row by row as `pending_before`."""
    return _read(con, "deferred_hook_captures", {"limit": limit})


def _read(con: "apsw.Connection", query: str, params: dict) -> Pending:
    found = Pending()
    try:
        rows = con.execute(q(query), params).fetchall()
    except apsw.Error as e:   # the table is missing, or cannot be read now: nothing to redo this time
        log.warning("pending captures not listed: %s: %s", type(e).__name__, e)
        return found
    for session_id, path, payload, queued_at in rows:
        try:
            data = json.loads(payload)
            ok = isinstance(data, dict) and isinstance(data.get("transcript_path"), str) and data["transcript_path"]
            reason = None if ok else "not a hook input naming a transcript"
        except (TypeError, ValueError, RecursionError) as e:
            data, reason = None, f"not JSON ({type(e).__name__})"
        if reason is None:
            found.records.append(data)
        else:
            found.unreadable.append(Unreadable(session_id, path, queued_at, str(payload), reason))
    return found


def set_aside(con: "apsw.Connection", rows: list[Unreadable], now: str) -> None:
    """Move unreadable records to hook_pending_set_aside (doctor reports them). Its own write transaction."""
    with immediate(con):
        for row in rows:
            keys = {"session_id": row.session_id, "transcript_path": row.transcript_path, "queued_at": row.queued_at}
            con.execute(q("set_aside_hook_pending"), {**keys, "now": now, "reason": row.reason})
            con.execute(q("delete_set_aside_hook_pending"), keys)


def set_aside_records(con: "apsw.Connection") -> list[str]:
    """The records set aside as unreadable, each described by session, transcript and fingerprint."""
    try:
        rows = con.execute(q("hook_pending_set_aside")).fetchall()
    except apsw.Error:   # a store older than migration 013
        return []
    return [Unreadable(s, t, "", p, "").describe() for s, t, p in rows]


# ------------------------------------------------------------------------------------ texts without candidates

def known_empty(con: "apsw.Connection", fingerprints: list[int]) -> set[int]:
    """Which of these text fingerprints a capture extracted and found no candidate in (none on a store older than
    migration 018 opened read-only)."""
    if not fingerprints:
        return set()
    try:
        rows = con.execute(q("known_empty_texts"), {"fingerprints": json.dumps(fingerprints)}).fetchall()
    except apsw.Error as e:   # the table is missing, or cannot be read now: every text is extracted
        log.info("texts without candidates not read: %s: %s", type(e).__name__, e)
        return set()
    return {int(row[0]) for row in rows}


def remember_empty(con: "apsw.Connection", fingerprints: list[int], now: float, keep_secs: float) -> None:
    """Texts extracted without a candidate (their fingerprints), stamped `now` (unix seconds); those stamped more
    than `keep_secs` before `now` are pruned."""
    if fingerprints:
        con.execute(q("remember_empty_texts"), {"fingerprints": json.dumps(fingerprints), "now": int(now)})
        con.execute(q("prune_empty_texts"), {"before": int(now - keep_secs)})
