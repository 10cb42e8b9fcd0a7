"""What `doctor` reads to check the store's invariants: SQLite's own check and the rows that break one.
(A memory without a vector and stale sign bits are `db/vectors.py`'s; stored hashes `db/memories.hashes`.)"""
from __future__ import annotations

import apsw

from subcog_store.db.sqlfiles import q
from subcog_store.postgres.adapter import is_postgres_connection


def sqlite_check(con: "apsw.Connection") -> list[str]:
    """SQLite's quick_check: ["ok"], or what it found (the error, when the file is so damaged that the check
    itself cannot run). PostgreSQL checks its own pages (checksums, amcheck are the administrator's): ["ok"]."""
    if is_postgres_connection(con):
        return ["ok"]
    try:
        return [str(r[0]) for r in con.execute(q("quick_check"))]
    except apsw.Error as e:
        return [f"{type(e).__name__}: {e}"]


def vectors_without_active_memory(con: "apsw.Connection") -> list[str]:
    return [str(r[0]) for r in con.execute(q("vector_without_active_memory"))]


def vectors_in_wrong_scope(con: "apsw.Connection") -> list[str]:
    return [str(r[0]) for r in con.execute(q("vector_scope_mismatch"))]


def dangling_successors(con: "apsw.Connection") -> list[str]:
    """Retired memories whose successor does not exist."""
    return [str(r[0]) for r in con.execute(q("dangling_successors"))]


def duplicate_active(con: "apsw.Connection") -> list[tuple[str, str, str, int]]:
    """(domain, namespace, content hash, count) of every scope holding the same content active twice."""
    return con.execute(q("duplicate_active_hashes")).fetchall()
