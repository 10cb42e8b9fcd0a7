"""Search's KNN from a domain's vectors held in memory (db/vectorcache.py) gives exactly vec0's answer (ids and
cosines), through writes on this and other connections, moves, rewritten vectors, retirements and rollbacks; it is
never used where it cannot be trusted (not enabled, a small domain, a store without bits_log), and falls back to
vec0 when it cannot prove its candidates hold the k nearest."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from subcog_store.db import bitcache, vectorcache
from subcog_store.db import memories as writer
from subcog_store.db.connection import connect, immediate
from subcog_store.db.sqlfiles import q
from tests.test_knn import clustered

NOW = "2026-01-02T00:00:00Z"
K = 10
_n = itertools.count()


@pytest.fixture
def cache_on(monkeypatch):
    monkeypatch.setattr(vectorcache, "MIN_ROWS", 0)
    bitcache.enable()
    yield
    bitcache.enable(False)
    bitcache.clear()


@pytest.fixture
def vector_store(make_store, tiny_embedder):
    return make_store(embedder_=tiny_embedder)


def fill(con, vectors: np.ndarray, namespace: str = "decisions") -> dict[str, np.ndarray]:
    """Insert memories of these vectors in one transaction; {id: vector}."""
    ids = []
    with immediate(con):
        for vector in vectors:
            memory_id = writer.new_id(con)
            writer.insert(con, memory_id=memory_id, domain="project", namespace=namespace,
                          content=f"memory {next(_n)}", importance=0.5, tags=[], source=None, session_id=None,
                          created_at=NOW, now=NOW, captured_at=0.0, vector=vector.astype(np.float32).tobytes())
            ids.append(memory_id)
    return dict(zip(ids, vectors))


def vec0_answer(con, query: np.ndarray, k: int = K) -> list[tuple[str, float]]:
    return [(mid, float(sim)) for mid, sim in con.execute(q("search_knn_domain"), {
        "embedding": query.astype(np.float32).tobytes(), "k": k, "domain": "project"})]


def assert_cache_agrees(con, live: dict[str, np.ndarray], queries) -> None:
    """The cached answer is vec0's, to the last bit, and brute force's over the memories `con` sees."""
    cache = vectorcache.lookup(con, "project")
    assert cache is not None
    ids = list(live)
    matrix = np.array([live[i] for i in ids], dtype=np.float32)
    for query in queries:
        embedding = query.astype(np.float32).tobytes()
        cached = vectorcache.nearest(con, cache, embedding, "project", K)
        if cached is None:   # only when vec0 itself has equal distances across the k-th
            plain = vec0_answer(con, query, K + 1)
            assert len(plain) > K and plain[K - 1][1] == plain[K][1]
            continue
        assert cached == vec0_answer(con, query)
        assert vectorcache.nearest_cached(con, embedding, "project", K) == cached
        want = sorted(zip(ids, (matrix @ query.astype(np.float32)).tolist()), key=lambda p: -p[1])[:K]
        assert [mid for mid, _ in cached] == [mid for mid, _ in want]


@pytest.mark.parametrize("seed", [1, 2])
def test_cache_follows_every_kind_of_write(vector_store, cache_on, seed: int) -> None:
    """Inserts here and on another connection (two namespaces), retire and restore, moves out and back,
    rewritten vectors and a rolled-back transaction, in a random order, each followed by checks."""
    rng = random.Random(seed)
    con = vector_store.con
    other = connect(vector_store.path)
    pool = clustered(700, seed=seed, per_cluster=40)
    live = fill(con, pool[:150]) | fill(con, pool[150:250], "learnings")
    assert vectorcache.warm(con, "project")
    snapshots: list = []
    fresh = iter(pool[250:])
    for step in range(20):
        action = rng.choice(["insert", "other", "retire", "restore", "move", "rewrite", "rollback"])
        memory_id = rng.choice(list(live))
        if action == "insert":
            live.update(fill(con, np.array([next(fresh) for _ in range(5)])))
        elif action == "other":
            live.update(fill(other, np.array([next(fresh)]), "patterns"))
        elif action == "retire":
            with immediate(con):
                snapshots.append((writer.retire(con, memory_id, "deleted", NOW), live.pop(memory_id)))
        elif action == "restore" and snapshots:
            snap, vector = snapshots.pop()
            with immediate(con):
                writer.restore(con, snap)
            live[snap.row["id"]] = vector
        elif action == "move":
            vector = live.pop(memory_id)
            with immediate(con):
                writer.move(con, memory_id, "elsewhere", NOW)
            assert_cache_agrees(con, live, [vector])
            with immediate(con):
                writer.move(con, memory_id, "project", NOW)
            live[memory_id] = vector
        elif action == "rewrite":
            vector = next(fresh)
            seq, namespace = con.execute("select seq, namespace from memories where id = ?", (memory_id,)).fetchone()
            with immediate(con):
                writer.set_vector(con, seq, namespace, "project", vector.astype(np.float32).tobytes())
            live[memory_id] = vector
        elif action == "rollback":
            vectors = np.array([next(fresh) for _ in range(3)])
            with pytest.raises(RuntimeError), immediate(con):
                added = {}
                for vector in vectors:
                    memory_id = writer.new_id(con)
                    writer.insert(con, memory_id=memory_id, domain="project", namespace="decisions",
                                  content=f"memory {next(_n)}", importance=0.5, tags=[], source=None,
                                  session_id=None, created_at=NOW, now=NOW, captured_at=0.0,
                                  vector=vector.astype(np.float32).tobytes())
                    added[memory_id] = vector
                assert_cache_agrees(con, live | added, vectors)   # its own uncommitted rows, from the cache
                raise RuntimeError("roll back")
        assert vectorcache.warm(con, "project"), (step, action)
        assert_cache_agrees(con, live, [live[rng.choice(list(live))], next(fresh)])
    other.close()


def test_candidates_that_left_search_widen_the_pass(vector_store, cache_on) -> None:
    """The nearest rows the cache holds were retired since it loaded: the first pass cannot prove its answer,
    the wider one does, and the answer is still vec0's."""
    con = vector_store.con
    query = clustered(1, seed=5)[0]
    near = np.array([v / np.linalg.norm(v) for v in query + 0.05 * clustered(40, seed=6)], dtype=np.float32)
    live = fill(con, near) | fill(con, clustered(300, seed=7))
    assert vectorcache.warm(con, "project")
    with immediate(con):
        for memory_id in list(live)[:35]:
            writer.retire(con, memory_id, "deleted", NOW)
            del live[memory_id]
    assert_cache_agrees(con, live, [query])


def test_ties_it_cannot_order_go_to_vec0(vector_store, cache_on) -> None:
    """Rows at the same distance on both sides of the k-th, more than the wider pass takes: no proof, so vec0
    answers (None here)."""
    con = vector_store.con
    same = clustered(1, seed=8)
    fill(con, np.repeat(same, vectorcache.WIDER * K + 5, axis=0))
    assert vectorcache.warm(con, "project")
    cache = vectorcache.lookup(con, "project")
    assert vectorcache.nearest(con, cache, same[0].astype(np.float32).tobytes(), "project", K) is None
    assert vectorcache.nearest_cached(con, same[0].astype(np.float32).tobytes(), "project", K) is None
    assert len(vec0_answer(con, same[0])) == K


def test_one_shot_processes_and_small_domains_keep_no_cache(vector_store, monkeypatch) -> None:
    fill(vector_store.con, clustered(60, seed=10))
    assert vectorcache.lookup(vector_store.con, "project") is None   # not enabled: nothing loads
    assert not vectorcache._domains
    bitcache.enable()
    try:
        assert not vectorcache.warm(vector_store.con, "project", timeout=30)   # 60 < MIN_ROWS
    finally:
        bitcache.enable(False)
        bitcache.clear()
    assert not vectorcache._domains   # bitcache.clear drops these too


def test_a_store_the_cache_cannot_read_falls_back_to_vec0(tmp_path, cache_on) -> None:
    """A store of version 10 opened without migrating has no bits_log: vec0 answers, nothing raised."""
    from subcog_store.db import connection as db

    con = db.connect(tmp_path / "v10.db", migrate=False)
    db.migrate_to_latest(con, target=10)
    assert not vectorcache.warm(con, "project", timeout=30)
    assert vectorcache.nearest_cached(con, clustered(1, seed=11)[0].astype(np.float32).tobytes(), "project", K) is None
    con.close()


def test_a_rollback_drops_the_files_caches(vector_store, cache_on) -> None:
    con = vector_store.con
    fill(con, clustered(100, seed=12))
    assert vectorcache.warm(con, "project")
    with pytest.raises(RuntimeError), immediate(con):
        raise RuntimeError("roll back")
    assert (con.filename, "project") not in vectorcache._domains


def test_search_answers_the_same_with_the_cache(make_store, tiny_embedder, cache_on) -> None:
    """Store.search through the cache (as the warm worker runs it) returns what it returns without."""
    store = make_store(embedder_=tiny_embedder)
    words = ["cache", "redis", "postgres", "pool", "retry", "queue", "token", "index", "deploy", "schema"]
    rng = random.Random(3)
    for i in range(120):
        store.capture(f"memory {i}: " + " ".join(rng.sample(words, 4)), rng.choice(["decisions", "learnings"]),
                      "project")
    queries = [" ".join(rng.sample(words, 3)) for _ in range(12)]
    with_cache = []
    assert vectorcache.warm(store.con, "project")
    for text in queries:
        with_cache.append([(h.memory.id, round(h.score, 9)) for h in store.search(text, domain="project", limit=10).hits])
    bitcache.enable(False)
    without = [[(h.memory.id, round(h.score, 9)) for h in store.search(text, domain="project", limit=10).hits]
               for text in queries]
    assert with_cache == without and any(with_cache)


def test_the_caches_hold_max_rows_in_all(make_store, tiny_embedder, cache_on, monkeypatch) -> None:
    """Loading a domain drops the least recently searched ones beyond MAX_ROWS rows in all."""
    monkeypatch.setattr(vectorcache, "MAX_ROWS", 150)
    store = make_store(embedder_=tiny_embedder)
    con = store.con
    for domain, seed in (("a", 20), ("b", 21), ("c", 22)):
        with immediate(con):
            for vector in clustered(60, seed=seed):
                writer.insert(con, memory_id=writer.new_id(con), domain=domain, namespace="decisions",
                              content=f"memory {next(_n)}", importance=0.5, tags=[], source=None, session_id=None,
                              created_at=NOW, now=NOW, captured_at=0.0, vector=vector.tobytes())
    assert vectorcache.warm(con, "a") and vectorcache.warm(con, "b")
    assert vectorcache.lookup(con, "a") is not None    # "a" searched last: "b" is the least recent
    assert vectorcache.warm(con, "c")
    assert {key[1] for key in vectorcache._domains} == {"a", "c"}


def test_a_domain_grown_past_max_rows_is_left_to_vec0(vector_store, cache_on, monkeypatch) -> None:
    monkeypatch.setattr(vectorcache, "MAX_ROWS", 100)
    con = vector_store.con
    fill(con, clustered(60, seed=30))
    assert vectorcache.warm(con, "project")
    fill(con, clustered(50, seed=31))
    assert vectorcache.lookup(con, "project") is None
    assert not vectorcache.warm(con, "project", timeout=30)   # loaded again, found too large
