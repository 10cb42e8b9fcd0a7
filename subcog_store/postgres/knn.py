"""The semantic KNN on PostgreSQL: pgvector's HNSW index of the namespace for candidates, an exact scan of the
scope whenever the candidates cannot show that they hold every neighbour at or above the floor.

The HNSW search (`hnsw.ef_search` = CANDIDATES, one partial index per namespace) returns the namespace's nearest
candidates, every domain's, nearest first. The answer is taken from them when the farthest candidate is below
the threshold that matters (the floor, or the k-th neighbour of the scope when k are at or above it): every
vector above that threshold the index can reach was then a candidate. Otherwise (a namespace with fewer
vectors than CANDIDATES, a scope crowded out by other domains, more near neighbours than candidates) the scope is
scanned exactly. An HNSW graph can still fail to reach a vector: bench/bench_postgres.py measures how often a
neighbour at or above 0.85 is missed (none at 10k and 100k on the bench corpus) beside the exact scan.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from subcog_store.db.sqlfiles import q
from subcog_store.postgres.connection import HNSW_CANDIDATES as CANDIDATES
from subcog_store.postgres.vectors import Vector

if TYPE_CHECKING:
    import numpy as np
    import psycopg

DIALECT = "postgresql"


class Hit(NamedTuple):
    memory_id: str
    content: str
    similarity: float
    seq: int


def nearest(con: "psycopg.Connection", vector: "np.ndarray", namespace: str, domain: str, k: int,
            floor: float) -> tuple[list[Hit], str]:
    """The k nearest active memories of a scope, nearest first, complete for every neighbour at or above
    `floor`; and how the answer was reached: "hnsw" (the candidates showed it) or "exact scan"."""
    params = {"embedding": Vector(vector), "namespace": namespace, "domain": domain, "k": k,
              "candidates": CANDIDATES}
    rows = con.execute(q("find_semantic_candidates", DIALECT), params).fetchall()
    if len(rows) >= CANDIDATES:
        scope = [Hit(r[3], r[4], float(r[2]), r[0]) for r in rows if r[1] == domain]
        threshold = max(floor, scope[k - 1].similarity if len(scope) >= k else floor)
        if float(rows[-1][2]) < threshold:
            return scope[:k], "hnsw"
    return exact(con, params), "exact scan"


def exact(con: "psycopg.Connection", params: dict) -> list[Hit]:
    """Every vector of the scope compared (the brute force)."""
    return [Hit(r[0], r[1], float(r[2]), r[3]) for r in con.execute(q("find_semantic_neighbours", DIALECT), params)]
