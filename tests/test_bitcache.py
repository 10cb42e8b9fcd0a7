"""The in-memory sign bits of db/bitcache.py stay a superset of what each connection sees: the cached KNN answers
as vec0's does, and as brute force does above the floor, through writes on this and other connections, moves,
rewritten vectors, rollbacks and a pruned log; it is never used where it cannot be trusted. On both backends:
on PostgreSQL the cache stands in for the exact scan of the scope (postgres/knn.py) in long-lived processes."""
from __future__ import annotations

import random

import numpy as np
import pytest

from subcog_store.db import bitcache, knn
from subcog_store.db import memories as writer
from subcog_store.db.connection import connect, immediate
import itertools

from tests.test_knn import FLOOR, brute_force, clustered

BOTH_BACKENDS = True
NOW = "2026-01-02T00:00:00Z"
_n = itertools.count()


@pytest.fixture
def cache_on(monkeypatch):
    monkeypatch.setattr(bitcache, "MIN_ROWS", 0)
    bitcache.enable()
    yield
    bitcache.enable(False)
    bitcache.clear()


@pytest.fixture
def vector_store(make_store, tiny_embedder):
    return make_store(embedder_=tiny_embedder)


def add(con, vectors: np.ndarray, namespace: str = "decisions") -> list[str]:
    """Insert memories of these vectors (inside the caller's transaction); returns their ids."""
    ids = []
    for vector in vectors:
        memory_id = writer.new_id(con)
        writer.insert(con, memory_id=memory_id, domain="project", namespace=namespace, content=f"memory {next(_n)}",
                      importance=0.5, tags=[], source=None, session_id=None, created_at=NOW, now=NOW,
                      captured_at=0.0, vector=vector.tobytes())
        ids.append(memory_id)
    return ids


def fill(con, vectors: np.ndarray) -> dict[str, np.ndarray]:
    with immediate(con):
        return dict(zip(add(con, vectors), vectors))


def answer(con, query: np.ndarray, domain: str = "project", k: int = 5) -> tuple[list[tuple[str, float]], str]:
    hits, how = knn.nearest(con, query, "decisions", domain, k, FLOOR)
    return [(h.memory_id, round(h.similarity, 5)) for h in hits if h.similarity >= FLOOR], how


def assert_cached_agrees(con, live: dict[str, np.ndarray], queries: np.ndarray, domain: str = "project") -> None:
    """The cached answer equals vec0's (cache off) and brute force over the memories `con` sees as active."""
    ids = list(live)
    matrix = np.array([live[i] for i in ids]) if ids else np.zeros((0, 384), np.float32)
    for query in queries:
        cached, how = answer(con, query, domain)
        assert how.startswith("cached "), how
        bitcache.enable(False)
        try:
            plain, _ = answer(con, query, domain)
        finally:
            bitcache.enable()
        want = [(i, round(s, 5)) for i, s in brute_force(matrix, ids, query, 5) if s >= FLOOR] if ids else []
        assert [s for _, s in cached] == pytest.approx([s for _, s in want], abs=1e-4), (how, cached, want)
        assert [s for _, s in plain] == pytest.approx([s for _, s in cached], abs=1e-4)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cache_follows_every_kind_of_write(vector_store, cache_on, seed: int) -> None:
    """Inserts here and on another connection, retire and restore, moves out and back, rewritten vectors and a
    rolled-back transaction, in a random order, each followed by checks against brute force."""
    rng = random.Random(seed)
    con = vector_store.con
    other = connect(vector_store.path)
    pool = clustered(900, seed=seed, per_cluster=60)
    base = pool[:300]
    live = fill(con, base)
    assert bitcache.warm(con, "decisions", "project")
    snapshots: list = []
    fresh = iter(pool[300:])
    for step in range(24):
        action = rng.choice(["insert", "other", "retire", "restore", "move", "rewrite", "rollback"])
        memory_id = rng.choice(list(live))
        if action == "insert":
            vectors = np.array([next(fresh) for _ in range(5)])
            live.update(fill(con, vectors))
        elif action == "other":
            live.update(fill(other, np.array([next(fresh)])))
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
            assert_cached_agrees(con, live, [vector])
            with immediate(con):
                writer.move(con, memory_id, "project", NOW)
            live[memory_id] = vector
        elif action == "rewrite":
            vector = next(fresh)
            seq = con.execute("select seq from memories where id = ?", (memory_id,)).fetchone()[0]
            with immediate(con):
                writer.set_vector(con, seq, "decisions", "project", vector.tobytes())
            live[memory_id] = vector
        elif action == "rollback":
            vectors = np.array([next(fresh) for _ in range(3)])
            with pytest.raises(RuntimeError), immediate(con):
                added = dict(zip(add(con, vectors), vectors))
                assert_cached_agrees(con, live | added, vectors)   # its own uncommitted rows, from the cache
                raise RuntimeError("roll back")
        assert bitcache.warm(con, "decisions", "project")
        assert_cached_agrees(con, live, [live[rng.choice(list(live))], next(fresh)])
    other.close()


def test_revisions_taken_again_after_a_rollback_are_not_missed(vector_store, cache_on) -> None:
    """A rolled-back transaction's revisions go to the next rows written: the cache that read them is dropped."""
    con = vector_store.con
    base = clustered(200, seed=8)
    live = fill(con, base)
    assert bitcache.warm(con, "decisions", "project")
    gone, kept = clustered(3, seed=9), clustered(3, seed=10)
    with pytest.raises(RuntimeError), immediate(con):
        add(con, gone)
        answer(con, gone[0])            # the cache reads the three revisions this transaction took
        raise RuntimeError("roll back")
    live.update(fill(con, kept))   # the same three revisions, other rows
    assert bitcache.warm(con, "decisions", "project")
    assert_cached_agrees(con, live, kept)


@pytest.mark.sqlite_only("bits_log, SQLite's log (PostgreSQL's: the next test)")
def test_a_log_pruned_past_the_cache_loads_it_again(vector_store, cache_on) -> None:
    """More than the log keeps was written since the cache last looked: it is dropped and loaded again."""
    con = vector_store.con
    base = clustered(100, seed=11)
    live = fill(con, base)
    assert bitcache.warm(con, "decisions", "project")
    other = connect(vector_store.path)
    with immediate(other):   # 18,500 revisions of another scope: the prune trigger drops the oldest
        other.execute("with recursive n(i) as (select 1 union all select i + 1 from n where i < 18500) "
                      "insert into bits_log (memory_seq, namespace, domain) select 0, 'patterns', 'x' from n")
    kept = clustered(2, seed=12)
    live.update(fill(other, kept))
    other.close()
    assert other_scope_pruned(con)
    assert answer(con, kept[0])[1].startswith("cached ") is False   # dropped: vec0 answers while it loads
    assert bitcache.warm(con, "decisions", "project")
    assert_cached_agrees(con, live, kept)


def test_a_postgresql_log_pruned_past_the_cache_loads_it_again(tiny_embedder, pg_url, cache_on) -> None:
    """PostgreSQL's vector_log keeps each scope's last 16,384 revisions: more were taken since the cache last
    looked (the sequence moved on), so the revision it read last is gone: it is dropped and loaded again."""
    from subcog_store.store import Store

    store = Store(pg_url, embedder=tiny_embedder, environ={}, fetch_model=False)
    con = store.con
    live = fill(con, clustered(100, seed=11))
    assert bitcache.warm(con, "decisions", "project")
    con.execute("select setval(pg_get_serial_sequence('vector_log', 'rev'), (max(rev) / 1024 + 20) * 1024 - 1) "
                "from vector_log")   # the next revision is a multiple of 1,024, 16,384 past the cache's: it prunes
    kept = clustered(2, seed=12)
    live.update(fill(con, kept))
    assert con.execute("select count(*) from vector_log").fetchone()[0] == 2   # the scope's older rows pruned
    assert answer(con, kept[0])[1].startswith("cached ") is False   # dropped: the exact scan answers meanwhile
    assert bitcache.warm(con, "decisions", "project")
    assert_cached_agrees(con, live, kept)
    store.close()


def test_a_scope_written_while_another_commits_first_is_not_missed(tiny_embedder, pg_url, cache_on) -> None:
    """PostgreSQL: a capture of one scope takes its log revision, and a capture of another scope takes a later one
    and commits first. The cache reads each scope's own log (in commit order under the scope's lock), so the
    first capture's vector is found once it commits, though a later revision was read before it."""
    from subcog_store.store import Store

    store = Store(pg_url, embedder=tiny_embedder, environ={}, fetch_model=False)
    con, slow, quick = store.con, connect(pg_url), connect(pg_url)
    live = fill(con, clustered(100, seed=17))
    assert bitcache.warm(con, "decisions", "project")
    late, other = clustered(2, seed=18)
    with immediate(slow, ("project", "decisions")):
        [late_id] = add(slow, late[None])                           # revision r, not committed yet
        with immediate(quick, ("project", "patterns")):
            add(quick, other[None], namespace="patterns")           # revision r + 1, committed first
        assert_cached_agrees(con, live, [late])
    live[late_id] = late
    assert_cached_agrees(con, live, [late])                        # r committed: found
    assert answer(con, late)[0][0][0] == late_id
    slow.close(), quick.close(), store.close()


def test_hook_connections_with_their_own_connect_timeouts_share_one_cache(tiny_embedder, pg_url, cache_on) -> None:
    """Each hook the worker runs opens the store with a connect_timeout from its own budget: one cache serves them
    all (a cache per connection string would load the scope again for every hook and never be ready)."""
    from subcog_store.postgres.connection import within
    from subcog_store.store import Store

    store = Store(pg_url, embedder=tiny_embedder, environ={}, fetch_model=False)
    live = fill(store.con, clustered(100, seed=19))
    assert bitcache.warm(store.con, "decisions", "project")
    cached = bitcache.lookup(store.con, "decisions", "project")
    for seconds in (0.7, 1.3):
        hook = connect(within(pg_url, seconds))
        assert bitcache.lookup(hook, "decisions", "project") is cached
        assert_cached_agrees(hook, live, clustered(2, seed=20))
        hook.close()
    assert len(bitcache._scopes) == 1
    store.close()


def other_scope_pruned(con) -> bool:
    return con.execute("select min(rev) from bits_log").fetchone()[0] > 1


def test_small_scopes_and_one_shot_processes_keep_no_cache(vector_store, monkeypatch) -> None:
    vectors = clustered(50, seed=13)
    fill(vector_store.con, vectors)
    assert bitcache.lookup(vector_store.con, "decisions", "project") is None   # not enabled: nothing loads
    assert not bitcache._scopes
    bitcache.enable()
    try:
        assert not bitcache.warm(vector_store.con, "decisions", "project", timeout=30)   # 50 < MIN_ROWS
        assert not answer(vector_store.con, vectors[0])[1].startswith("cached ")
    finally:
        bitcache.enable(False)
        bitcache.clear()


@pytest.mark.sqlite_only("a SQLite file of version 10")
def test_a_store_the_cache_cannot_read_falls_back_to_vec0(tmp_path, cache_on) -> None:
    """A store of version 10 opened without migrating (read-only) has no bits_log: vec0 answers, nothing raised."""
    from subcog_store.db import connection as db

    con = db.connect(tmp_path / "v10.db", migrate=False)
    db.migrate_to_latest(con, target=10)
    assert not bitcache.warm(con, "decisions", "project", timeout=30)
    assert answer(con, clustered(1, seed=14)[0]) == ([], "complete")
    con.close()


@pytest.mark.sqlite_only("store files")
def test_another_store_file_at_the_same_path_is_not_taken_for_the_cached_one(make_store, tiny_embedder, tmp_path,
                                                                             cache_on) -> None:
    """The store is deleted and made again at the same path, with more revisions than the cache had read."""
    path = tmp_path / "again.db"
    first = make_store(path=path, embedder_=tiny_embedder)
    fill(first.con, clustered(100, seed=15))
    assert bitcache.warm(first.con, "decisions", "project")
    first.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"again.db{suffix}").unlink(missing_ok=True)
    second = make_store(path=path, embedder_=tiny_embedder)
    vectors = clustered(150, seed=16)
    live = fill(second.con, vectors)
    assert bitcache.warm(second.con, "decisions", "project")
    assert_cached_agrees(second.con, live, vectors[:20])


def test_the_threshold_comes_from_the_setting(monkeypatch, caplog) -> None:
    monkeypatch.setattr(bitcache, "MIN_ROWS", bitcache.MIN_ROWS)
    try:
        monkeypatch.setenv("SUBCOG_KNN_CACHE_MIN_ROWS", "1234")
        bitcache.enable_from_settings()
        assert bitcache.MIN_ROWS == 1234 and bitcache.enabled()
        monkeypatch.setenv("SUBCOG_KNN_CACHE_MIN_ROWS", "many")
        bitcache.enable_from_settings()
        assert bitcache.MIN_ROWS == 50_000 and "SUBCOG_KNN_CACHE_MIN_ROWS" in caplog.text
    finally:
        bitcache.enable(False)
