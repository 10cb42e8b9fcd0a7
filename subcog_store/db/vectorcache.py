"""A domain's float vectors kept in memory by long-lived processes, for search's KNN (recall/search.py).

vec0 answers search's KNN by scanning every vector of the domain's partitions: ~5-8 ms at 10,000 memories on this
machine's 2 cores, while numpy's product of the query with the same vectors held in memory takes ~1 ms (the whole
KNN, with SQLite's re-scoring of the candidates, ~1.8 ms). The warm worker (which answers the prompt hook) and the
MCP server turn this on with the sign-bit caches of db/bitcache.py (`bitcache.enable`); a one-shot process never loads a cache, which would cost it more (~60 ms at
10k) than it saves. Domains of MIN_ROWS to MAX_ROWS searchable memories are kept (1.5 KB a memory), MAX_ROWS
in all: loading one drops the least recently searched ones beyond that.

The answer is vec0's, exactly: the cache picks candidates and proves they hold the k nearest, and SQLite re-scores
them with vec0's own distance (query `rescore_domain_candidates`), which also drops rows that left the domain or
search since the cache read them. The proof: every row the connection sees as searchable has its current vector
in the cache (a superset, as bitcache's: loaded once in a background thread, then brought up to date before each
use from `bits_log`, which logs every vector written, in commit order), so a row left out scores at most the
best score left out (plus MARGIN, far above float32's rounding of a 384-term dot product) and cannot beat the
k-th re-scored one when that one is higher (than it and than the k+1-th re-scored one: equal distances across
the k-th are vec0's to choose among); otherwise a wider pass runs, and after it vec0's scan. The cache is
dropped, to load again, on the events that drop bitcache's (a rollback, a log pruned past it, another file at the
same path, a connection that sees an older log).
"""
from __future__ import annotations

import json
import logging
import threading
import time
from array import array
from collections import OrderedDict

import apsw
import numpy as np

from subcog_store.db import bitcache
from subcog_store.db.connection import connect
from subcog_store.db.sqlfiles import q
from subcog_store.postgres.adapter import is_postgres_connection

MIN_ROWS = 2_000       # below this vec0's scan takes under a millisecond or two
MAX_ROWS = 100_000     # 150 MB of vectors in all; a larger domain is left to vec0 (the worker's memory matters more)
MARGIN = 1e-4          # numpy's float32 dot product and vec0's distance agree far closer than this
FIRST = 2              # candidates of the first pass: FIRST * k rows, the second pass WIDER * k
WIDER = 40
DIMENSIONS = 384

log = logging.getLogger("subcog_store.worker.vectorcache")
_lock = threading.Lock()
_domains: "OrderedDict[tuple[str, str], DomainVectors]" = OrderedDict()   # least recently searched first


class DomainVectors(bitcache.LoggedRows):
    """The float vectors of one (database, domain), one row each, grown by an eighth at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.matrix = np.empty((0, DIMENSIONS), dtype=np.float32)

    def fill(self, seqs: array, vectors: bytearray, rev: int, mark: tuple | None) -> None:
        self.seqs = np.frombuffer(seqs, dtype=np.int64).copy()
        self.matrix = np.frombuffer(vectors, dtype="<f4").reshape(-1, DIMENSIONS).copy()
        self.size, self.rev, self.mark, self.ready = len(self.seqs), rev, mark, True

    def append(self, seq: int, vector: bytes) -> None:
        if self.size == len(self.seqs):
            capacity = max(1024, self.size + self.size // 8)   # a large domain's matrix: an eighth more
            self.seqs = np.resize(self.seqs, capacity)
            matrix = np.empty((capacity, DIMENSIONS), dtype=np.float32)
            matrix[:self.size] = self.matrix[:self.size]
            self.matrix = matrix
        self.seqs[self.size] = seq
        self.matrix[self.size] = np.frombuffer(vector, dtype="<f4")
        self.size += 1

    def catch_up(self, con: apsw.Connection, domain: str) -> bool:
        """Bring the cache up to what `con` sees (`follow_log`); False when it must load again."""
        return self.follow_log(con, "domain_vectors_since", {"domain": domain})

    def scores(self, query: np.ndarray) -> np.ndarray:
        """The cosine of the query with every cached row (float32). einsum, not BLAS: OpenBLAS runs a product this
        size on every core and its threads then spin, taking the CPU from the model's next run."""
        return np.einsum("ij,j->i", self.matrix[:self.size], query.astype(np.float32))


def lookup(con: apsw.Connection, domain: str) -> DomainVectors | None:
    """The domain's cache brought up to what `con` sees, or None (not enabled, small or large, loading, dropped,
    or a PostgreSQL store)."""
    if not bitcache.enabled() or is_postgres_connection(con) or not (where := con.filename):
        return None
    key = (where, domain)
    with _lock:
        cache = _domains.get(key)
        if cache is not None:
            _domains.move_to_end(key)
        if cache is None or (not cache.ready and cache.retry_at and time.monotonic() > cache.retry_at):
            cache = _domains[key] = DomainVectors()
            threading.Thread(target=_load, args=(key, cache), name="subcog-vectorcache", daemon=True).start()
    if not cache.ready:
        return None
    bitcache.watch(con)
    try:
        with cache.lock:
            if cache.catch_up(con, domain) and cache.size <= MAX_ROWS:
                return cache
    except apsw.Error:   # e.g. a store opened read-only before migration 011: vec0 still answers
        log.exception("vectorcache: cannot bring the cache up to date")
        cache.ready, cache.retry_at = False, time.monotonic() + bitcache.RECHECK_SECS
        return None
    log.info("vectorcache: a domain dropped, to load again (or left to vec0 once it has grown past MAX_ROWS)")
    with _lock:
        if _domains.get(key) is cache:
            del _domains[key]
    return None


def nearest_cached(con: apsw.Connection, embedding: bytes, domain: str, k: int) -> list[tuple[str, float]] | None:
    """`nearest` from the domain's cache, or None when there is none (yet) or it cannot prove its answer."""
    cache = lookup(con, domain)
    return nearest(con, cache, embedding, domain, k) if cache is not None else None


def nearest(con: apsw.Connection, cache: DomainVectors, embedding: bytes, domain: str, k: int
            ) -> list[tuple[str, float]] | None:
    """(id, cosine) of the k nearest searchable memories of the domain, nearest first, as vec0's KNN gives them;
    None when the cache cannot prove its candidates hold them (the caller scans vec0)."""
    with cache.lock:
        scores = cache.scores(np.frombuffer(embedding, dtype="<f4"))
        seqs = cache.seqs[:cache.size]
    for width in (FIRST * k, WIDER * k):
        complete = width >= len(scores)
        if complete:
            picked, rest = np.arange(len(scores)), -np.inf
        else:
            picked = np.argpartition(-scores, width)[:width + 1]
            picked = picked[np.argsort(-scores[picked])]
            picked, rest = picked[:width], float(scores[picked[width]])
        rows = con.execute(q("rescore_domain_candidates"), {
            "embedding": embedding, "domain": domain, "k": k + 1,
            "seqs": json.dumps(np.unique(seqs[picked]).tolist())}).fetchall()
        if len(rows) > k:   # the k-th must stand above the next one and above every row left out
            if rows[k - 1][1] > rows[k][1] and rows[k - 1][1] > rest + MARGIN:
                return [(mid, float(sim)) for mid, sim in rows[:k]]
            if complete:
                return None   # equal distances across the k-th: vec0 chooses among them
        elif complete:
            return [(mid, float(sim)) for mid, sim in rows]
    return None


def clear() -> None:
    """Drop every cache of this process."""
    with _lock:
        _domains.clear()


def forget(path: str) -> None:
    """Drop the caches of one database file (they load again when next used)."""
    with _lock:
        for key in [key for key in _domains if key[0] == path]:
            del _domains[key]


def warm(con: apsw.Connection, domain: str, timeout: float = 600.0) -> bool:
    """Start loading the domain's cache and wait until it is ready (benchmarks, tests); False if it is not."""
    deadline = time.monotonic() + timeout
    while lookup(con, domain) is None:
        cache = _domains.get((con.filename, domain))
        if time.monotonic() > deadline or (cache is not None and cache.retry_at) or not bitcache.enabled():
            return False
        time.sleep(0.01)
    return True


def _load(key: tuple[str, str], cache: DomainVectors) -> None:
    path, domain = key
    started = time.monotonic()
    try:
        con = connect(path, readonly=True, migrate=False)
    except Exception:   # the caller still scans vec0: never let the cache's failure reach a search
        log.exception("vectorcache: cannot open the store")
        cache.retry_at = time.monotonic() + bitcache.RECHECK_SECS
        return
    try:
        read = bitcache.read_logged_rows(con, "domain_size", "domain_vectors", {"domain": domain},
                                         lambda size: MIN_ROWS <= size <= MAX_ROWS)
        if read is None:
            cache.retry_at = time.monotonic() + bitcache.RECHECK_SECS
            return
        _make_room(key, len(read[0]))
        with cache.lock:
            cache.fill(*read)
        log.info("vectorcache: loaded %d rows in %.2f s", cache.size, time.monotonic() - started)
    except Exception:
        log.exception("vectorcache: load failed")
        cache.retry_at = time.monotonic() + bitcache.RECHECK_SECS
    finally:
        con.close()


def _make_room(loading: tuple[str, str], rows: int) -> None:
    """Drop the least recently searched other caches until they hold MAX_ROWS - `rows` rows or fewer."""
    with _lock:
        others = [key for key in _domains if key != loading]
        while others and sum(_domains[key].size for key in others) + rows > MAX_ROWS:
            del _domains[others.pop(0)]


bitcache.on_forget(forget)
bitcache.on_clear(clear)
