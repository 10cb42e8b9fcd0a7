"""Sign bits of large scopes kept in memory by long-lived processes, for the semantic KNN (db/knn.py).

A pass of vec0 over a million sign bits takes ~45 ms and a check needs one or two; numpy's popcount over the
same bits held in memory takes ~5 ms, and one scan serves both passes. The warm worker and the MCP server turn
this on (`enable`); a one-shot process never loads a cache, which would cost it more than it saves.

The cache of a scope holds a superset of the scope's sign bits as any connection of this process sees them:
loaded once in a background thread (until it is ready the checks scan vec0), then brought up to date before
each use from `bits_log` (migration 011: every row written to memory_bits, in commit order). Rows that left the
scope stay until the next load: each candidate is re-scored against the memory as it is now (query
`rescore_candidates`), and extra candidates never break the KNN's completeness argument. The cache is dropped,
to load again, on a rollback on a connection that brought it up to date (its revisions may go to other rows), or
when the last log entry it read is gone or another (the log pruned past it, another file at the same path) or a
connection sees an older log than it has read. One gap is accepted: a reader whose snapshot predates a load
does not see, among the candidates, a memory deleted between its snapshot and that load.

On PostgreSQL the same cache serves the check that otherwise scans every vector of the scope (postgres/knn.py):
the sign bits are computed here from the vectors (`sign_bits_of`: one bit per dimension, set when positive, as
vec0's), loaded for scopes of a PG_SHARE'th of MIN_ROWS or more, and brought up to date from `vector_log` (PG migration 011),
whose revisions follow commit order within a scope (its writer holds the scope's lock), so a cache reads each
scope's own log; a rollback gives no revision to another row (a sequence), so no rollback hook is needed.
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from array import array
from functools import lru_cache
from typing import Callable

import apsw
import numpy as np

from subcog_store.config import process_setting_or_default
from subcog_store.db.connection import connect, read_snapshot
from subcog_store.db.sqlfiles import q
from subcog_store.postgres.adapter import is_postgres_connection

MIN_ROWS = 50_000       # below this vec0's scan is fast enough (8 ms at 100k) and the memory not worth it
                        # (the setting knn_cache_min_rows; its default is this)
PG_SHARE = 10          # on PostgreSQL a tenth of MIN_ROWS: the scan the cache replaces is exact, ~10x dearer a row
RECHECK_SECS = 600.0    # a scope found small, or whose load failed, is looked at again after this long
WORDS = 6               # 384 sign bits as six 64-bit words

log = logging.getLogger("subcog_store.worker.bitcache")   # the worker's own log, from any thread
_enabled = False
_lock = threading.Lock()
_scopes: dict[tuple[str, str, str], "ScopeBits"] = {}
_watched: "weakref.WeakSet[apsw.Connection]" = weakref.WeakSet()
_also_forget: list[Callable[[str], None]] = []
_also_clear: list[Callable[[], None]] = []


def enable(on: bool = True) -> None:
    """Keep the sign bits of large scopes in memory in this process (the warm worker, the MCP server); off,
    the caches are kept but not used."""
    global _enabled
    _enabled = on


def enable_from_settings() -> None:
    """Turn the caches on for a long-lived process, for scopes of `SUBCOG_KNN_CACHE_MIN_ROWS` memories or more
    (a bad value: the default, and a warning in the log)."""
    global MIN_ROWS
    MIN_ROWS = int(process_setting_or_default("knn_cache_min_rows",   # type: ignore[arg-type]
                                              lambda why: log.warning("bitcache: %s", why)))
    enable()


def enabled() -> bool:
    return _enabled


def clear() -> None:
    """Drop every cache of this process (db/vectorcache.py's too)."""
    with _lock:
        _scopes.clear()
    for also in _also_clear:
        also()


def forget(path: str) -> None:
    """Drop the caches of one database file (they load again when next used; db/vectorcache.py's too)."""
    with _lock:
        for key in [key for key in _scopes if key[0] == path]:
            del _scopes[key]
    for also in _also_forget:
        also(path)


def on_forget(fn: Callable[[str], None]) -> None:
    """Another cache read from bits_log (db/vectorcache.py) is dropped with these: `fn(path)` on `forget`."""
    _also_forget.append(fn)


def on_clear(fn: Callable[[], None]) -> None:
    _also_clear.append(fn)


class LoggedRows:
    """Rows of a store kept in memory in step with `bits_log`, by memory seq: a superset of what any connection
    of this process sees (rows that left stay until the next load; a rewritten row is appended again). A subclass
    holds the rows themselves (`fill`, `append`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ready = False
        self.retry_at = 0.0
        self.rev = 0                    # the newest bits_log revision read
        self.mark: tuple | None = None  # ... and the memory it logged: it must still be there, the same
        self.size = 0
        self.seqs = np.empty(0, dtype=np.int64)

    def append(self, seq: int, row: bytes) -> None:
        raise NotImplementedError

    def follow_log(self, con: apsw.Connection, query: str, params: dict) -> bool:
        """Append the rows `query` logged after the revision read last, up to the newest `con` sees; False when
        the cache cannot be brought up to date and must load again: the entry it read last is gone or another (the
        log was pruned past it, a rollback gave its revision to another row, the file was replaced) or `con` sees
        an older log than the cache has read."""
        with read_snapshot(con):
            newest = con.execute(q("bits_log_newest")).fetchone()[0]
            if self.rev and log_entry(con, self.rev) != self.mark:
                return False
            if newest <= self.rev:
                return newest == self.rev
            for _, seq, row in con.execute(q(query), {**params, "after": self.rev, "upto": newest}):
                self.append(seq, row)
            self.rev, self.mark = newest, log_entry(con, newest)
        return True


def read_logged_rows(con: apsw.Connection, size_query: str, rows_query: str, params: dict,
                     wanted: Callable[[int], bool]) -> tuple[array, bytearray, int, tuple | None] | None:
    """A cache's first load, in one snapshot: the newest bits_log revision and its mark, then every (seq, row)
    of `rows_query`; None when `wanted(size)` refuses the size `size_query` counts."""
    seqs, rows = array("q"), bytearray()
    with read_snapshot(con):
        newest = con.execute(q("bits_log_newest")).fetchone()[0]
        mark = log_entry(con, newest)
        if not wanted(con.execute(q(size_query), params).fetchone()[0]):
            return None
        for seq, row in con.execute(q(rows_query), params):
            seqs.append(seq)
            rows += row
    return seqs, rows, newest, mark


class ScopeBits(LoggedRows):
    """The sign bits of one (database, namespace, domain), words in columns, grown by doubling."""

    def __init__(self) -> None:
        super().__init__()
        self.words = np.empty((WORDS, 0), dtype=np.uint64)

    def fill(self, seqs: array, bits: bytearray, rev: int, mark: tuple | None) -> None:
        self.seqs = np.frombuffer(seqs, dtype=np.int64).copy()
        self.words = np.ascontiguousarray(np.frombuffer(bits, dtype=np.uint64).reshape(-1, WORDS).T)
        self.size, self.rev, self.mark, self.ready = len(self.seqs), rev, mark, True

    def append(self, seq: int, bits: bytes) -> None:
        if self.size == len(self.seqs):
            capacity = max(1024, 2 * self.size)
            self.seqs = np.resize(self.seqs, capacity)
            words = np.empty((WORDS, capacity), dtype=np.uint64)
            words[:, :self.size] = self.words[:, :self.size]
            self.words = words
        self.seqs[self.size] = seq
        self.words[:, self.size] = np.frombuffer(bits, dtype=np.uint64)
        self.size += 1

    def catch_up(self, con: apsw.Connection, namespace: str, domain: str) -> bool:
        """Bring the cache up to what `con` sees (SQLite: `follow_log`); False when it must load again."""
        if is_postgres_connection(con):
            return self._catch_up_postgres(con, namespace, domain)
        return self.follow_log(con, "bits_since", {"namespace": namespace, "domain": domain})

    def _catch_up_postgres(self, con, namespace: str, domain: str) -> bool:
        """The scope's own log from the revision read last (one statement: one snapshot)."""
        rows = _binary_rows(con, "vectors_since", {"namespace": namespace, "domain": domain, "after": self.rev})
        if self.rev and (not rows or rows[0][0] != self.rev or tuple(rows[0][1:3]) != self.mark):
            return False
        fresh = [(seq, vector) for rev, seq, _, vector in rows if rev > self.rev and vector is not None]
        if fresh:
            bits = sign_bits_of(b"".join(vector for _, vector in fresh))
            for (seq, _), row_bits in zip(fresh, bits):
                self.append(seq, row_bits.tobytes())
        if rows:
            self.rev, self.mark = rows[-1][0], tuple(rows[-1][1:3])
        return True

    def hamming(self, query: bytes) -> np.ndarray:
        """The Hamming distance of every cached row to the query's sign bits."""
        n = self.size
        distance = np.zeros(n, dtype=np.uint16)
        scratch = np.empty(n, dtype=np.uint64)
        counts = np.empty(n, dtype=np.uint8)
        for word, value in zip(self.words, np.frombuffer(query, dtype=np.uint64)):
            np.bitwise_xor(word[:n], value, out=scratch)
            np.bitwise_count(scratch, out=counts)
            np.add(distance, counts, out=distance)
        return distance

    def nearest(self, distance: np.ndarray, limit: int, max_hamming: int) -> tuple[list[int], int, int]:
        """The `limit` rows nearest by Hamming distance among those within `max_hamming`: their memory seqs
        (each once), how many rows that was, and the farthest one's distance."""
        within = np.flatnonzero(distance <= max_hamming)
        if len(within) > limit:
            within = within[np.argpartition(distance[within], limit - 1)[:limit]]
        if not len(within):
            return [], 0, 0
        return np.unique(self.seqs[within]).tolist(), len(within), int(distance[within].max())


def lookup(con: apsw.Connection, namespace: str, domain: str) -> ScopeBits | None:
    """The scope's cache brought up to what `con` sees, or None (not enabled, small, loading, or dropped)."""
    if not _enabled or not (where := _where(con)):
        return None
    key = (where, namespace, domain)
    with _lock:
        scope = _scopes.get(key)
        if scope is None or (not scope.ready and scope.retry_at and time.monotonic() > scope.retry_at):
            scope = _scopes[key] = ScopeBits()
            threading.Thread(target=_load, args=(key, scope, con.conninfo if is_postgres_connection(con) else where),
                             name="subcog-bitcache", daemon=True).start()
    if not scope.ready:
        return None
    watch(con)
    try:
        with scope.lock:
            if scope.catch_up(con, namespace, domain):
                return scope
    except apsw.Error:   # e.g. a store opened read-only before migration 011: vec0 still answers
        log.exception("bitcache: cannot bring the cache up to date")
        scope.ready, scope.retry_at = False, time.monotonic() + RECHECK_SECS
        return None
    log.info("bitcache: a scope dropped, to load again")
    with _lock:
        if _scopes.get(key) is scope:
            del _scopes[key]
    return None


def warm(con: apsw.Connection, namespace: str, domain: str, timeout: float = 600.0) -> bool:
    """Start loading the scope's cache and wait until it is ready (benchmarks, tests); False if it is not."""
    deadline = time.monotonic() + timeout
    while lookup(con, namespace, domain) is None:
        scope = _scopes.get((_where(con), namespace, domain))
        if time.monotonic() > deadline or (scope is not None and scope.retry_at):
            return False
        time.sleep(0.01)
    return True


def sign_bits_of(vectors: bytes) -> np.ndarray:
    """The sign bits of float32 vectors (384 each, concatenated), one row of 48 bytes each, as vec0 packs them."""
    matrix = np.frombuffer(vectors, dtype="<f4").reshape(-1, WORDS * 64)
    return np.packbits(matrix > 0, axis=1, bitorder="little")


def _where(con) -> str:
    """Which store a connection is open on: its file, or its PostgreSQL connection string without what does not
    name the database (a hook's connect_timeout, derived from its budget, differs from run to run)."""
    return _database_of(con.conninfo) if is_postgres_connection(con) else con.filename


@lru_cache(maxsize=64)
def _database_of(conninfo: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    return "postgresql:" + repr(sorted((k, v) for k, v in conninfo_to_dict(conninfo).items()
                                       if k not in ("connect_timeout", "application_name")))


def _binary_rows(con, name: str, params: dict) -> list:
    """The rows of a PostgreSQL query with vectors read in binary (float32 bytes): a scope's load reads ~1.5 KB a
    row, which the adapter's text rows would parse float by float."""
    import psycopg

    cursor = psycopg.Cursor(con.raw)
    return con.guarded(lambda: cursor.execute(q(name, "postgresql"), params, binary=True).fetchall())


def log_entry(con: apsw.Connection, rev: int) -> tuple | None:
    row = con.execute(q("bits_log_entry"), {"rev": rev}).fetchone()
    return tuple(row) if row else None


def watch(con: apsw.Connection) -> None:
    """A rollback may hand the revisions a cache has read to other rows: drop that file's caches."""
    if is_postgres_connection(con):   # revisions from a sequence: a rolled-back one is never reused
        return
    with _lock:
        if con in _watched:
            return
        _watched.add(con)
    path = con.filename
    con.set_rollback_hook(lambda: forget(path))


def _load(key: tuple[str, str, str], scope: ScopeBits, path: str) -> None:
    _, namespace, domain = key
    started = time.monotonic()
    try:
        con = connect(path, readonly=True, migrate=False)
    except Exception:   # the caller still scans vec0: never let the cache's failure reach a check
        log.exception("bitcache: cannot open the store")
        scope.retry_at = time.monotonic() + RECHECK_SECS
        return
    try:
        if is_postgres_connection(con):
            loaded = _load_postgres(con, namespace, domain)
            if loaded is None:
                scope.retry_at = time.monotonic() + RECHECK_SECS
                return
            with scope.lock:
                scope.fill(*loaded)
            log.info("bitcache: loaded %d rows in %.2f s", scope.size, time.monotonic() - started)
            return
        read = read_logged_rows(con, "scope_size", "scope_bits", {"namespace": namespace, "domain": domain},
                                lambda size: size >= MIN_ROWS)
        if read is None:
            scope.retry_at = time.monotonic() + RECHECK_SECS
            return
        with scope.lock:
            scope.fill(*read)
        log.info("bitcache: loaded %d rows in %.2f s", scope.size, time.monotonic() - started)
    except Exception:
        log.exception("bitcache: load failed")
        scope.retry_at = time.monotonic() + RECHECK_SECS
    finally:
        con.close()


def _load_postgres(con, namespace: str, domain: str) -> tuple | None:
    """A PostgreSQL scope's sign bits, or None when it is small: the scope's newest revision first, then its
    vectors (a later snapshot, so every vector of a revision up to it is among them; one logged after it too, to
    be read again on the next catch-up: an extra candidate, never a missing one)."""
    params = {"namespace": namespace, "domain": domain}
    if con.execute(q("scope_size"), params).fetchone()[0] < MIN_ROWS // PG_SHARE:
        return None
    newest = con.execute(q("vector_log_newest", "postgresql"), params).fetchone()
    rev, mark = (newest[0], tuple(newest[1:3])) if newest else (0, None)
    seqs, bits = array("q"), bytearray()

    def read() -> None:
        import psycopg

        chunk: list[tuple[int, bytes]] = []

        def flush() -> None:
            seqs.extend(seq for seq, _ in chunk)
            bits.extend(sign_bits_of(b"".join(vector for _, vector in chunk)).tobytes())
            chunk.clear()
        for row in psycopg.Cursor(con.raw).stream(q("scope_vectors", "postgresql"), params, binary=True):
            chunk.append(row)
            if len(chunk) == 4096:
                flush()
        if chunk:
            flush()
    con.guarded(read)
    return seqs, bits, rev, mark
