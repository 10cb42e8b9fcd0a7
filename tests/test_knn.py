"""The semantic KNN (db/knn.py) against numpy brute force: every neighbour at or above the floor, in order, by
each of its paths (complete, proved, second pass, float scan), with candidates from the stored sign bits (vec0's
on SQLite, the memory_bits table on PostgreSQL) and from the sign bits a long-lived process keeps in memory
(db/bitcache.py), on both backends."""
from __future__ import annotations

import numpy as np
import pytest

from subcog_store.db import bitcache, knn
from subcog_store.db import memories as writer
from subcog_store.db.connection import immediate

FLOOR = 0.85
BOTH_BACKENDS = True


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def clustered(n: int, seed: int, spread: float = 0.42, per_cluster: int = 40) -> np.ndarray:
    """Vectors in tight clusters (pairs on both sides of the floor) among scattered ones."""
    rng = np.random.default_rng(seed)
    centres = unit(rng.normal(size=(max(1, n // per_cluster), 384)))
    members = centres[rng.integers(0, len(centres), n)] + spread / np.sqrt(384) * rng.normal(size=(n, 384))
    return unit(np.where(rng.random((n, 1)) < 0.8, members, rng.normal(size=(n, 384))))


def fill(store, vectors: np.ndarray, namespace: str = "decisions", domain: str = "project") -> list[str]:
    ids = []
    with immediate(store.con):
        for i, vector in enumerate(vectors):
            memory_id = writer.new_id(store.con)
            writer.insert(store.con, memory_id=memory_id, domain=domain, namespace=namespace,
                          content=f"memory {namespace} {domain} {i}", importance=0.5, tags=[], source=None,
                          session_id=None, created_at="2026-01-01T00:00:00Z", now="2026-01-01T00:00:00Z",
                          captured_at=0.0, vector=vector.tobytes())
            ids.append(memory_id)
    return ids


def brute_force(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[tuple[str, float]]:
    sims = vectors @ query
    order = np.argsort(-sims)[:k]
    return [(ids[i], float(sims[i])) for i in order]


def nearest(store, query: np.ndarray, k: int, namespace: str = "decisions", domain: str = "project"):
    """knn.nearest, from the in-memory sign bits when the cache is on (it must then be used)."""
    cached = bitcache.enabled()
    if cached:
        assert bitcache.warm(store.con, namespace, domain)
    hits, how = knn.nearest(store.con, query, namespace, domain, k, FLOOR)
    assert how.startswith("cached ") == cached, how
    return hits, how.removeprefix("cached ")


def assert_exact_above_floor(store, vectors, ids, queries, k: int = 5) -> set[str]:
    paths = set()
    for query in queries:
        hits, how = nearest(store, query, k)
        paths.add(how)
        want = [(i, s) for i, s in brute_force(vectors, ids, query, k) if s >= FLOOR]
        got = [(h.memory_id, h.similarity) for h in hits if h.similarity >= FLOOR]
        assert len(got) == len(want), (how, got, want)
        assert [i for i, _ in got] == [i for i, _ in want] or \
            np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5), (how, got, want)  # ties
    return paths


@pytest.fixture(params=["vec0", "cached"])
def vector_store(request, make_store, tiny_embedder, monkeypatch):
    if request.param == "cached":
        monkeypatch.setattr(bitcache, "MIN_ROWS", 0)
        bitcache.enable()
        request.addfinalizer(lambda: (bitcache.enable(False), bitcache.clear()))
    return make_store(embedder_=tiny_embedder)


def test_small_scope_is_complete(vector_store) -> None:
    """Fewer vectors within the floor's Hamming bound than the first pass takes: every one is re-scored."""
    vectors = clustered(120, seed=1)
    ids = fill(vector_store, vectors)
    assert assert_exact_above_floor(vector_store, vectors, ids, vectors[:20]) == {"complete"}
    hits, _ = nearest(vector_store, vectors[0], 5)
    assert hits[0].memory_id == ids[0] and hits[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_large_scope_misses_no_neighbour_above_the_floor(vector_store) -> None:
    """Clusters of ~400: more candidates within the bound than the first pass takes."""
    vectors = clustered(2000, seed=2, per_cluster=400)
    ids = fill(vector_store, vectors)
    queries = np.concatenate([vectors[:40], clustered(40, seed=3)])
    paths = assert_exact_above_floor(vector_store, vectors, ids, queries)
    assert "proved" in paths or "second pass" in paths


def test_second_pass_and_float_scan(vector_store, monkeypatch, backend) -> None:
    """A first pass too small to prove anything, then a second too small to hold the bound: each path still
    returns the exact neighbours (the brute force: vec0's float scan, PostgreSQL's exact scan)."""
    vectors = clustered(600, seed=4, spread=0.2)
    ids = fill(vector_store, vectors)
    monkeypatch.setattr(knn, "FIRST", 3)
    paths = assert_exact_above_floor(vector_store, vectors, ids, vectors[:30])
    assert "second pass" in paths
    monkeypatch.setattr(knn, "CAP", 4)
    paths = assert_exact_above_floor(vector_store, vectors, ids, vectors[:30])
    assert ("float scan" if backend == "sqlite" else "exact scan") in paths


def test_scopes_do_not_mix(vector_store) -> None:
    vectors = clustered(50, seed=5)
    fill(vector_store, vectors, namespace="decisions")
    other = fill(vector_store, vectors, namespace="patterns")
    third = fill(vector_store, vectors, domain="elsewhere")
    hits, _ = nearest(vector_store, vectors[0], 10)
    assert hits and not {h.memory_id for h in hits} & set(other + third)


def test_bits_follow_retire_restore_and_move(vector_store) -> None:
    """The writer keeps the sign bits beside the vector through every change (doctor checks they match)."""
    from subcog_store.doctor import diagnose

    vectors = clustered(10, seed=6)
    ids = fill(vector_store, vectors)
    with immediate(vector_store.con):
        snap = writer.retire(vector_store.con, ids[0], "deleted", "2026-01-02T00:00:00Z")
        writer.move(vector_store.con, ids[1], "elsewhere", "2026-01-02T00:00:00Z")
    assert nearest(vector_store, vectors[0], 1)[0][0].memory_id != ids[0]
    assert nearest(vector_store, vectors[1], 1, domain="elsewhere")[0][0].memory_id == ids[1]
    assert ids[1] not in {h.memory_id for h in nearest(vector_store, vectors[1], 5)[0]}
    with immediate(vector_store.con):
        writer.restore(vector_store.con, snap)
    assert nearest(vector_store, vectors[0], 1)[0][0].memory_id == ids[0]
    assert all(f.ok for f in diagnose(vector_store.con)), [f for f in diagnose(vector_store.con) if not f.ok]


def test_hamming_bound_grows_as_the_floor_falls() -> None:
    bounds = [knn.hamming_bound(c) for c in (0.999, 0.95, 0.90, 0.85, 0.5)]
    assert bounds == sorted(bounds) and 0 < bounds[0] < bounds[-1] <= knn.BITS
    assert knn.hamming_bound(1.0) == knn.hamming_bound(0.999)


def test_a_store_without_sign_bits_is_searched_by_the_float_scan(tmp_path) -> None:
    """A store of version 7 opened without migrating (read-only) has no memory_bits: the float scan answers."""
    from subcog_store.db import connection as db

    con = db.connect(tmp_path / "v7.db", migrate=False)
    db.migrate_to_latest(con, target=7)
    vectors = clustered(3, seed=7)
    for i, vector in enumerate(vectors):
        seq = con.execute("insert into memories (id, domain, namespace, content, created_at, updated_at) values "
                          "(?, 'project', 'decisions', ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z') "
                          "returning seq", (f"{i:012x}", f"memory {i}")).fetchone()[0]
        con.execute("insert into memory_vectors (memory_seq, namespace, domain, embedding) values (?, 'decisions', "
                    "'project', ?)", (seq, vector.tobytes()))
    hits, how = knn.nearest(con, vectors[1], "decisions", "project", 5, FLOOR)
    assert how == "float scan (no bits)" and hits[0].memory_id == f"{1:012x}"
