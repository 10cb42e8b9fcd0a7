"""The semantic KNN: sign-bit candidates re-scored exactly, complete for every neighbour at or above a floor.

`memory_bits` holds one sign bit per dimension of each searchable vector. Two unit vectors at cosine c disagree
on a sign bit with probability angle/pi under the sign-random-projection model, so over 384 bits the Hamming
distance of a pair at cosine >= c exceeds `hamming_bound(c)` with probability below TAIL. The nearest
candidates by Hamming distance are re-scored with their float vectors; when they cannot be shown to hold the
exact k nearest among the neighbours at or above the floor, a second, wider pass runs, and after it the float
scan (the exact brute force). The candidates come from vec0, or, in a long-lived process, from the scope's sign
bits held in memory (db/bitcache.py: one numpy scan serves both passes); the decisions are the same. PostgreSQL
has a `memory_bits` table of its own (bit(384), counted with bit_count) and its exact scan as the brute force. bench/
bench_store.py measures both beside the float scan and numpy brute force on the bench corpus (recall of every
neighbour >= 0.85: 1.0 at 10k, 100k and 1M); bench/bench_knn.py has the research.
"""
# Lazy imports: the sign-bit cache (numpy, threads) loads only in a process that turned it on.
from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, NamedTuple

import apsw

from subcog_store.db.sqlfiles import q
from subcog_store.postgres import knn as pg_knn
from subcog_store.postgres.adapter import is_postgres_connection

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.db.bitcache import ScopeBits

BITS = 384
TAIL = 1e-9          # per-pair probability that a neighbour at the floor lies beyond the Hamming bound
FIRST = 256          # candidates of the first pass
CAP = 4096           # candidates of the second pass (vec0's largest k)
_GRID = 1000         # cosines are rounded down to 0.001 before the bound is looked up


class Hit(NamedTuple):
    memory_id: str
    content: str
    similarity: float
    seq: int


@lru_cache(maxsize=256)
def _bound_at(grid: int) -> int:
    """Smallest H with P(X > H) <= TAIL for X ~ Binomial(BITS, angle/pi), angle = acos(grid / _GRID)."""
    p = math.acos(grid / _GRID) / math.pi
    if p <= 0.0:
        return 0
    tail = 0.0
    for h in range(BITS, -1, -1):
        if tail > TAIL:
            return h + 1
        tail += math.exp(math.lgamma(BITS + 1) - math.lgamma(h + 1) - math.lgamma(BITS - h + 1)
                         + h * math.log(p) + (BITS - h) * math.log1p(-p))
    return 0


def hamming_bound(cos: float) -> int:
    """The most sign bits two unit vectors at cosine >= `cos` may disagree on (capped at cosine 0.999: two
    vectors at cosine 1.0 in float32 may still differ in a sign bit)."""
    return _bound_at(max(0, min(_GRID - 1, math.floor(cos * _GRID))))


def nearest(con: apsw.Connection, vector: "np.ndarray", namespace: str, domain: str, k: int,
            floor: float) -> tuple[list[Hit], str]:
    """The k nearest active memories of a scope at or above `floor`, exact, nearest first (a nearer one below the
    floor is included when it was a candidate); and how the answer was reached: complete (every vector within
    the floor's Hamming bound re-scored), proved (no vector left out can beat the k-th), second pass, float
    scan (the brute force), or float scan (no bits) on a store without them. Each is prefixed "cached" when the
    candidates came from the in-memory sign bits of db/bitcache.py instead of vec0.

    The Hamming bound also bounds the scan: vec0 keeps only rows within it, and the cost of its top-k
    selection grows with k times the rows kept (k=256 over 10k unbounded rows: 6 ms; bounded: 0.4 ms).

    On PostgreSQL: the same passes, the candidates from its own `memory_bits` table (migration PG 012) or, in a
    long-lived process, from the scope's sign bits in memory, re-scored by PostgreSQL, with the exact scan of the
    scope (`postgres/knn.py`) as the brute force ("exact scan")."""
    from subcog_store.db import bitcache   # here: it imports numpy, which the exact-tier path never needs

    cache = bitcache.lookup(con, namespace, domain)
    params = {"embedding": vector.astype("float32").tobytes(), "namespace": namespace, "domain": domain, "k": k}
    scan = _cached_scan(con, cache, params) if cache else _vec0_scan(con, params)
    prefix = "cached " if cache else ""
    try:
        hits, count, farthest = scan(FIRST, hamming_bound(floor))
    except apsw.SQLError as e:   # a store opened read-only before migration 008 (PostgreSQL: 012): the float scan
        if "memory_bits" not in str(e) and "subcog_sign_bits" not in str(e):   # still answers
            raise
        return _float_scan(con, params), "float scan (no bits)"
    if count < FIRST:
        return hits, prefix + "complete"
    kth = max(floor, hits[k - 1].similarity if len(hits) >= k else floor)
    if farthest > hamming_bound(kth):
        return hits, prefix + "proved"
    wider, count, _ = scan(CAP, hamming_bound(kth))
    if count < CAP:
        both = {hit.seq: hit for hit in hits + wider}
        return sorted(both.values(), key=lambda hit: -hit.similarity)[:k], prefix + "second pass"
    if is_postgres_connection(con):
        found, how = pg_knn.nearest(con.raw, vector, namespace, domain, k, floor)
        return [Hit(*hit) for hit in found], prefix + how
    return _float_scan(con, params), prefix + "float scan"


Scan = Callable[[int, int], tuple[list[Hit], int, int]]


def _vec0_scan(con: apsw.Connection, params: dict) -> Scan:
    """Candidates from the stored sign bits (vec0's; PostgreSQL's memory_bits table): the hits, how many
    candidates there were, the farthest's distance."""
    def scan(candidates: int, max_hamming: int) -> tuple[list[Hit], int, int]:
        rows = con.execute(q("find_semantic_candidates"),
                           params | {"candidates": candidates, "max_hamming": max_hamming}).fetchall()
        return _hits(rows), (rows[0][3] if rows else 0), (rows[0][4] if rows else 0)
    return scan


def _cached_scan(con: apsw.Connection, cache: "ScopeBits", params: dict) -> Scan:
    """The same from the scope's sign bits in memory: one numpy scan serves both passes."""
    if is_postgres_connection(con):   # no vec0: the cache computed its rows' bits the same way (bitcache.py)
        from subcog_store.db.bitcache import sign_bits_of

        query = sign_bits_of(params["embedding"])[0].tobytes()
    else:
        query = con.execute(q("sign_bits"), params).fetchone()[0]
    distance = cache.hamming(query)

    def scan(candidates: int, max_hamming: int) -> tuple[list[Hit], int, int]:
        seqs, count, farthest = cache.nearest(distance, candidates, max_hamming)
        rows = con.execute(q("rescore_candidates"), params | {"seqs": json.dumps(seqs)}).fetchall() if seqs else []
        return [Hit(r[0], r[1], float(r[2]), r[3]) for r in rows], count, farthest
    return scan


def _hits(rows: list) -> list[Hit]:
    return [Hit(r[0], r[1], float(r[2]), r[5]) for r in rows]


def _float_scan(con: apsw.Connection, params: dict) -> list[Hit]:
    return [Hit(r[0], r[1], float(r[2]), r[3]) for r in con.execute(q("find_semantic_neighbours"), params)]
