"""The changed-facts detector's candidates (db/search.nearest_current, dedup/outdated.py): the nearest current
memories of a domain, every namespace, found among the nearest by sign bits and re-scored exactly; the exact
float scan on a store without sign bits."""
from __future__ import annotations

import numpy as np

from subcog_store.db import search
from subcog_store.db import memories as writer
from subcog_store.db.connection import immediate
from subcog_store.dedup.outdated import CANDIDATES, FLOOR, SIGN_POOL
from tests.test_knn import brute_force, clustered, fill

NAMESPACES = ("decisions", "learnings", "patterns")


def spread_store(store, n: int = 900, seed: int = 5) -> tuple[np.ndarray, list[str]]:
    """n clustered vectors over three namespaces of one domain, and some of them in another domain (never found)."""
    vectors = clustered(n, seed, spread=0.9, per_cluster=30)
    ids: list[str] = []
    for i, namespace in enumerate(NAMESPACES):
        ids += fill(store, vectors[i::3], namespace=namespace)
    order = np.concatenate([np.arange(i, n, 3) for i in range(3)])
    fill(store, vectors[:200], domain="elsewhere")
    return vectors[order], ids


def candidates(store, query: np.ndarray) -> list[tuple[str, float]]:
    rows = search.nearest_current(store.con, query.astype(np.float32).tobytes(), "project", CANDIDATES, SIGN_POOL)
    return [(r[0], r[4]) for r in rows]


def test_the_candidates_are_the_exact_nearest_of_the_domain_nearly_always(store):
    vectors, ids = spread_store(store)
    rng = np.random.default_rng(99)   # new captures near stored ones: cosine ~0.6-0.8 to their own
    near = vectors[rng.integers(0, len(vectors), 60)] + 0.7 / np.sqrt(384) * rng.normal(size=(60, 384))
    queries = near / np.linalg.norm(near, axis=1, keepdims=True)
    wanted = found = 0
    for query in queries:
        got = candidates(store, query)
        truth = dict(brute_force(vectors, ids, query, len(ids)))
        assert all(abs(truth[mid] - sim) < 1e-4 for mid, sim in got)   # re-scored exactly, this domain only
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True) and len(got) == CANDIDATES
        best = {mid for mid, sim in brute_force(vectors, ids, query, CANDIDATES) if sim >= FLOOR}
        wanted += len(best)
        found += len(best & {mid for mid, _ in got})
    assert wanted > 100 and found >= 0.95 * wanted, (found, wanted)


def test_outdated_memories_are_never_candidates(store):
    vectors, ids = spread_store(store, n=300)
    query = vectors[0]
    nearest = [mid for mid, _ in candidates(store, query)]
    with immediate(store.con):
        writer.link_successor(store.con, nearest[0], nearest[1], "2026-01-02T00:00:00Z")
    again = [mid for mid, _ in candidates(store, query)]
    assert nearest[0] not in again and nearest[1] in again and len(again) == CANDIDATES


def test_a_store_without_sign_bits_gets_the_exact_scan(store):
    vectors, ids = spread_store(store, n=300)
    store.con.execute("drop table memory_bits")
    for query in vectors[:5]:
        got = candidates(store, query)
        want = brute_force(vectors, ids, query, CANDIDATES)
        assert [mid for mid, _ in got] == [mid for mid, _ in want]
