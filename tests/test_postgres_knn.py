"""The semantic check's KNN on PostgreSQL finds every neighbour at or above the floor (issue 26): it compares
every vector of the scope, whatever other domains and namespaces hold, and follows a vector that moves."""
from __future__ import annotations

import numpy as np
import pytest

from subcog_store.postgres import knn
from subcog_store.postgres.vectors import Vector
from tests.test_postgres_concurrency import FLOOR, add, add_many, brute_force, pg, unit  # noqa: F401 (pg: a fixture)

psycopg = pytest.importorskip("psycopg")


def near(anchor: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at exactly `cosine` from `anchor`."""
    noise = rng.standard_normal(384)
    noise = unit(noise - (noise @ anchor) * anchor)
    return unit(cosine * anchor + np.sqrt(1 - cosine * cosine) * noise)


def test_the_check_finds_every_neighbour_at_or_above_the_floor(pg) -> None:
    """Clusters of near neighbours (more than k), neighbours at cosines around the floor, and another domain
    crowding the same namespace near the same points (what made the HNSW candidates miss or fall back)."""
    rng = np.random.default_rng(7)
    centers = unit(rng.standard_normal((40, 384)))
    team: dict[int, np.ndarray] = {}
    rows = []
    for i in range(600):
        vector = unit(centers[i % 40] + rng.uniform(0.01, 0.05) * rng.standard_normal(384))
        domain = "team" if i % 3 else "other"
        if domain == "team":
            team[i + 1] = vector
        rows.append((i + 1, vector, "decisions", domain, None))
    for j, center in enumerate(centers[:20]):
        vector = near(center, rng.uniform(0.80, 0.95), rng)
        team[1000 + j] = vector
        rows.append((1000 + j, vector, "decisions", "team", None))
        rows += [(2000 + 10 * j + i, near(center, 0.97, rng), "decisions", "other", None) for i in range(10)]
    rows += [(5000 + i, unit(rng.standard_normal(384)), "learnings", "team", None) for i in range(50)]
    add_many(pg, rows)
    for j, query in enumerate(list(unit(centers + 0.02 * rng.standard_normal((40, 384)))) + list(centers[:20])):
        hits, how = knn.nearest(pg, query, "decisions", "team", 5, FLOOR)
        assert how == knn.HOW
        assert [h.seq for h in hits if h.similarity >= FLOOR] == brute_force(team, query, 5), j
        assert all(h.memory_id == f"{h.seq:012x}" and h.content == f"m{h.seq}" for h in hits)
        wanted = {seq for seq, v in team.items() if float(v @ query) >= FLOOR}
        assert wanted == {h.seq for h in knn.nearest(pg, query, "decisions", "team", 1000, FLOOR)[0]
                          if h.similarity >= FLOOR}, j


def test_a_vector_is_found_in_the_scope_it_moved_to_and_nowhere_once_gone(pg) -> None:
    vector = unit(np.random.default_rng(9).standard_normal(384))
    add(pg, 1, vector)
    assert [h.seq for h in knn.nearest(pg, vector, "decisions", "team", 5, FLOOR)[0]] == [1]
    pg.execute("update memory_vectors set domain = 'moved' where memory_seq = 1")
    assert knn.nearest(pg, vector, "decisions", "team", 5, FLOOR)[0] == []
    assert [h.seq for h in knn.nearest(pg, vector, "decisions", "moved", 5, FLOOR)[0]] == [1]
    pg.execute("delete from memory_vectors where memory_seq = 1")
    assert knn.nearest(pg, vector, "decisions", "moved", 5, FLOOR)[0] == []


def test_no_hnsw_index_is_left_for_the_check_to_read(pg) -> None:
    assert pg.execute("select count(*) from pg_indexes where indexdef ilike '%using hnsw%'").fetchone()[0] == 0


def _bits(con, seq: int) -> tuple[str, str, str] | None:
    row = con.execute("select namespace, domain, bits::text from memory_bits where memory_seq = %s", (seq,)).fetchone()
    return None if row is None else tuple(row)


def test_the_sign_bits_follow_every_vector_and_are_its_signs(pg) -> None:
    """memory_bits (migration 012) holds each vector's signs, bit i set when dimension i is positive, and follows
    the vector through a move, a new embedding and its removal (the triggers): what the check's candidates are
    counted from never lags the vectors, whoever writes them."""
    rng = np.random.default_rng(12)
    first, second = unit(rng.standard_normal(384)), unit(rng.standard_normal(384))
    signs = lambda v: "".join("1" if x > 0 else "0" for x in v)   # noqa: E731
    add(pg, 1, first)
    assert _bits(pg, 1) == ("decisions", "team", signs(first))
    pg.execute("update memory_vectors set domain = 'moved', namespace = 'learnings' where memory_seq = 1")
    assert _bits(pg, 1) == ("learnings", "moved", signs(first))
    pg.execute("update memory_vectors set embedding = %s where memory_seq = 1", (Vector(second),))
    assert _bits(pg, 1) == ("learnings", "moved", signs(second))
    pg.execute("delete from memory_vectors where memory_seq = 1")
    assert _bits(pg, 1) is None


def test_the_checks_candidates_from_stored_sign_bits_are_complete(pg, pg_url) -> None:
    """The data layer's KNN on PostgreSQL without sign bits in memory (a hook without the worker, a command):
    candidates counted from memory_bits, re-scored exactly, with the same proofs as SQLite's; every neighbour at
    or above the floor found, as the exact scan finds them, in clusters larger than the first pass."""
    from subcog_store.db import knn as db_knn
    from subcog_store.postgres import adapter

    rng = np.random.default_rng(13)
    centers = unit(rng.standard_normal((6, 384)))
    vectors = unit(centers[rng.integers(0, 6, 1800)] + 0.42 / np.sqrt(384) * rng.standard_normal((1800, 384)))
    add_many(pg, [(i + 1, v, "decisions", "team", None) for i, v in enumerate(vectors)])
    data_layer, paths = adapter.connect(pg_url), set()
    try:
        for query in list(vectors[:30]) + list(unit(rng.standard_normal((10, 384)))):
            hits, how = db_knn.nearest(data_layer, query, "decisions", "team", 5, FLOOR)
            paths.add(how)
            exact, _ = knn.nearest(pg, query, "decisions", "team", 5, FLOOR)
            assert [h.seq for h in hits if h.similarity >= FLOOR] == \
                [h.seq for h in exact if h.similarity >= FLOOR], how
    finally:
        data_layer.close()
    assert paths <= {"complete", "proved", "second pass", "exact scan"} and paths & {"proved", "second pass"}, paths
