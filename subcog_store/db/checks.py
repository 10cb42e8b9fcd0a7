"""The check log (`dedup_checks`: one row per duplicate check, with its tiers' timings) and the counters `stats`
reads from the audit views."""
from __future__ import annotations

from typing import TYPE_CHECKING

from subcog_store.db.connection import dict_rows, immediate
from subcog_store.db.sqlfiles import q
from subcog_store.postgres.adapter import is_postgres_connection

if TYPE_CHECKING:
    import apsw


def add(con: "apsw.Connection", row: dict) -> None:
    """One check's row (in the caller's write transaction); `row` has the columns of `insert_check`."""
    con.execute(q("insert_check"), row)


def log(con: "apsw.Connection", row: dict, scope: tuple[str, str]) -> None:
    """A check's row on its own (a check that writes nothing else): SQLite in a write transaction of its own;
    PostgreSQL as one autocommitted insert, atomic alone, and with nothing read before it no lock is needed (one
    round trip instead of two, and no wait behind the scope's writers)."""
    if is_postgres_connection(con) and con.getautocommit():
        con.execute(q("insert_check"), row)
        return
    with immediate(con, scope):
        con.execute(q("insert_check"), row)


def stats(con: "apsw.Connection") -> dict:
    """Memories by scope and status, checks by result, skips by reason, tier durations, the recent window,
    decisions by kind."""
    def rows(name: str) -> list[dict]:
        return dict_rows(con.execute(q(name)))
    return {"memories": rows("stats_memories"), "checks": rows("stats_checks"), "skips": rows("stats_skips"),
            "durations": rows("stats_durations"), "recent_window": rows("stats_recent_window")[0],
            "decisions": rows("stats_decisions")}
