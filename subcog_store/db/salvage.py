"""Salvage: every memory that can still be read from a damaged database, as the JSON lines `capture --jsonl`
takes (content, namespace, domain, importance, tags, source, session_id, created_at), so they can be put into a
new store. The file is opened read-only and read in blocks of rows; a block that cannot be read is read again
row by row, and a row that cannot be read is counted and left out. Active memories only: a retired one would
come back active."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator

import apsw

from subcog_store.db.sqlfiles import q

BLOCK = 256
COLUMNS = ("seq", "id", "domain", "namespace", "content", "importance", "tags", "status", "source", "session_id",
           "created_at")


@dataclass
class Tally:
    saved: int = 0
    retired: int = 0          # readable but not active: left out
    unreadable: int = 0       # rows (or blocks' rows) that could not be read
    last_seq: int = 0


def salvage(con: apsw.Connection, tally: Tally) -> Iterator[str]:
    """The JSON lines of the active memories `con` can still read (counts in `tally`)."""
    try:
        top = con.execute(q("max_memory_seq")).fetchone()[0]
    except apsw.Error:
        top = None   # the table's last page is damaged: read on until nothing more can be read
    after = 0
    while top is None or after < top:
        try:
            rows = con.execute(q("salvage_memories"), {"after": after, "limit": BLOCK}).fetchall()
        except apsw.Error:
            rows = list(_one_by_one(con, after, tally))
            if not rows and top is None:
                break
            after = max([after + BLOCK] + [r[0] for r in rows])
        else:
            if not rows:
                break
            after = rows[-1][0]
        for row in rows:
            line = _line(dict(zip(COLUMNS, row)), tally)
            if line is not None:
                yield line
    tally.last_seq = after


def _one_by_one(con: apsw.Connection, after: int, tally: Tally) -> Iterator[tuple]:
    for seq in range(after + 1, after + BLOCK + 1):
        try:
            row = con.execute(q("salvage_memory"), {"seq": seq}).fetchone()
        except apsw.Error:
            tally.unreadable += 1
            continue
        if row is not None:
            yield row


def _line(row: dict, tally: Tally) -> str | None:
    if row["status"] != "active":
        tally.retired += 1
        return None
    try:
        tags = json.loads(row["tags"])
        line = {"content": row["content"], "namespace": row["namespace"], "domain": row["domain"],
                "importance": float(row["importance"]), "tags": tags if isinstance(tags, list) else [],
                "source": row["source"] or "salvage", "session_id": row["session_id"],
                "created_at": row["created_at"]}
        out = json.dumps({k: v for k, v in line.items() if v is not None}, ensure_ascii=False)
    except (TypeError, ValueError):
        tally.unreadable += 1
        return None
    tally.saved += 1
    return out
