"""The semantic KNN on PostgreSQL: every vector of the scope compared, so no neighbour at or above any floor is
missed.

pgvector's inner product over the scope's rows (found through memory_vectors_scope), the k nearest, nearest
first. Rounds 3-4 read the namespace's HNSW candidates first and scanned only when they could not show the
answer complete; at 100,000 real vectors the graph missed 29 of 848 near neighbours >= 0.85 without the
candidates showing it, so the check no longer asks it (migration PG 010 drops those indexes). A prefilter with a
proved bound (sketches: 128 fixed directions plus the residual length, Cauchy-Schwarz) was built and measured
beside it: complete too, but no faster on pgvector 0.6.2, whose per-row call cost dominates (bench/RESULTS.md),
so the plain scan stays. bench/bench_postgres.py measures it beside SQLite and the former HNSW check.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from subcog_store.db.sqlfiles import q
from subcog_store.postgres.vectors import Vector

if TYPE_CHECKING:
    import numpy as np
    import psycopg

DIALECT = "postgresql"
HOW = "exact scan"


class Hit(NamedTuple):
    memory_id: str
    content: str
    similarity: float
    seq: int


def nearest(con: "psycopg.Connection", vector: "np.ndarray", namespace: str, domain: str, k: int,
            floor: float) -> tuple[list[Hit], str]:
    """The k nearest active memories of a scope, nearest first, exact (so complete at or above `floor`, which
    only SQLite's candidates need); and how the answer was reached ("exact scan")."""
    params = {"embedding": Vector(vector), "namespace": namespace, "domain": domain, "k": k}
    return [Hit(r[0], r[1], float(r[2]), r[3]) for r in con.execute(q("find_semantic_neighbours", DIALECT), params)
            ], HOW
