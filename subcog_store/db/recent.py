"""The recent window (`recent_captures`): which content was captured in a scope and when; a trigger prunes it by
age and capacity (both read from the `settings` table, or this process's override).

Writes run inside the caller's write transaction.
"""
from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING

from subcog_store.db.connection import dict_rows
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw

IN_WINDOW_ROWS = 16   # the recent tier looks at the newest 16 captures of one content (issue 29: a clock gone back)


def in_window(con: "apsw.Connection", content_hash: str, namespace: str, domain: str, since: float
              ) -> list[tuple[str | None, float]]:
    """(memory id, captured at) of the newest IN_WINDOW_ROWS captures of this content in the scope stamped since
    `since`, newest first by insertion (the recent tier; the caller leaves out those stamped in the future)."""
    rows = con.execute(q("find_recent_capture"), {"content_hash": content_hash, "namespace": namespace,
                                                   "domain": domain, "since": since}).fetchall()
    if len(rows) > 1:
        rows.sort(key=itemgetter(0), reverse=True)
    return [(row[1], row[2]) for row in rows[:IN_WINDOW_ROWS]]


def record(con: "apsw.Connection", content_hash: str, memory_id: str | None, namespace: str, domain: str,
           captured_at: float) -> None:
    """A capture of this content now (`memory_id` None: nothing was stored)."""
    con.execute(q("insert_recent_capture"), {"content_hash": content_hash, "memory_id": memory_id,
                                             "namespace": namespace, "domain": domain, "captured_at": captured_at})


def of_memory(con: "apsw.Connection", memory_id: str) -> list[dict]:
    """The rows that point at a memory (kept in its undo snapshot)."""
    return dict_rows(con.execute(q("recent_captures_of"), {"id": memory_id}))


def forget(con: "apsw.Connection", memory_id: str) -> None:
    con.execute(q("delete_recent_captures_of"), {"id": memory_id})


def put_back(con: "apsw.Connection", rows: list[dict]) -> None:
    """Rows of an undo snapshot, with their original ids."""
    for row in rows:
        con.execute(q("reinsert_recent_capture"), row)


def move(con: "apsw.Connection", memory_id: str, domain: str) -> None:
    """A memory's rows follow it to another domain."""
    con.execute(q("move_recent_captures"), {"id": memory_id, "domain": domain})
