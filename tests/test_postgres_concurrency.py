"""Many writers on PostgreSQL (issue 26): the semantic KNN is complete at or above its floor, and a scope's
check-then-write under its advisory lock stores a fact once, whether it comes twice word for word or reworded,
from threads of one process or from many processes, with no serialization error anywhere."""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from subcog_store.postgres import knn
from subcog_store.postgres.connection import connect, transaction
from subcog_store.postgres.vectors import Vector, register

psycopg = pytest.importorskip("psycopg")
ROOT = Path(__file__).resolve().parents[1]
FLOOR = 0.85


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype("float32")


def add(con, seq: int, vector: np.ndarray, namespace: str = "decisions", domain: str = "team",
        content: str | None = None) -> None:
    add_many(con, [(seq, vector, namespace, domain, content)])


def add_many(con, rows: list[tuple]) -> None:
    """(seq, vector, namespace, domain, content or None) rows, in two statements."""
    with con.cursor() as cur:
        cur.executemany("insert into memories (seq, id, namespace, domain, content, created_at, updated_at) "
                        "values (%s, %s, %s, %s, %s, '', '')",
                        [(seq, f"{seq:012x}", ns, dom, text or f"m{seq}") for seq, _, ns, dom, text in rows])
        cur.executemany("insert into memory_vectors (memory_seq, namespace, domain, embedding) values (%s, %s, %s, %s)",
                        [(seq, ns, dom, Vector(vector)) for seq, vector, ns, dom, _ in rows])


@pytest.fixture
def pg(pg_url):
    con = connect(pg_url)
    register(con)
    yield con
    con.close()


def brute_force(vectors: dict[int, np.ndarray], query: np.ndarray, k: int) -> list[int]:
    sims = sorted(((float(v @ query), seq) for seq, v in vectors.items()), key=lambda t: (-t[0], t[1]))
    return [seq for sim, seq in sims[:k] if sim >= FLOOR]


def test_the_knn_finds_every_neighbour_above_the_floor_by_either_path(pg) -> None:
    rng = np.random.default_rng(7)
    centers = unit(rng.standard_normal((40, 384)))
    team, other = {}, {}
    rows = []
    for i in range(600):            # 600 in the namespace: more than the HNSW candidates
        vector = unit(centers[i % 40] + 0.012 * rng.standard_normal(384))   # cosine ~0.95 within
        domain = "team" if i % 3 else "other"
        (team if domain == "team" else other)[i + 1] = vector
        rows.append((i + 1, vector, "decisions", domain, None))
    for seq_small in range(5):      # a small scope: fewer vectors than candidates
        rows.append((10_000 + seq_small, unit(rng.standard_normal(384)), "patterns", "team", None))
    add_many(pg, rows)
    paths = set()
    for j in range(40):
        query = unit(centers[j] + 0.012 * rng.standard_normal(384))
        hits, how = knn.nearest(pg, query, "decisions", "team", 5, FLOOR)
        paths.add(how)
        got = [h.seq for h in hits if h.similarity >= FLOOR]
        assert got == brute_force(team, query, 5) and len(got) == 5, (j, how)
        assert all(h.memory_id == f"{h.seq:012x}" and h.content == f"m{h.seq}" for h in hits)
    far = unit(rng.standard_normal(384))
    hits, how = knn.nearest(pg, far, "decisions", "team", 5, FLOOR)   # nothing near: the candidates show it
    assert how == "hnsw" and all(h.similarity < FLOOR for h in hits)
    assert knn.nearest(pg, far, "patterns", "team", 5, FLOOR)[1] == "exact scan"   # 5 vectors: fewer than asked
    # Another domain crowds the candidates: 120 of its vectors around a point, the team's one neighbour farther.
    center = unit(rng.standard_normal(384))
    add_many(pg, [(20_000 + i, unit(center + 0.008 * rng.standard_normal(384)), "decisions", "other", None)
                  for i in range(120)])
    neighbour = unit(center + 0.025 * rng.standard_normal(384))
    team[30_000] = neighbour
    add(pg, 30_000, neighbour)
    assert FLOOR <= float(neighbour @ center) < 0.97
    hits, how = knn.nearest(pg, center, "decisions", "team", 5, FLOOR)
    assert how == "exact scan" and hits[0].seq == 30_000
    assert [h.seq for h in hits if h.similarity >= FLOOR] == brute_force(team, center, 5)
    assert "hnsw" in paths


def _waiting_for_lock(admin, pid: int) -> bool:
    row = admin.execute("select wait_event_type from pg_stat_activity where pid = %s", (pid,)).fetchone()
    return row is not None and row[0] == "Lock"


def _check_then_write(con, seq: int, vector: np.ndarray) -> bool:
    hits, _ = knn.nearest(con, vector, "decisions", "team", 5, FLOOR)
    if hits and hits[0].similarity >= FLOOR:
        return False
    add(con, seq, vector)
    return True


def test_a_second_writer_of_the_scope_waits_then_sees_the_first(pg, pg_url) -> None:
    """Deterministic interleaving: A has checked and not yet written; B's check waits for A's lock, then finds
    A's memory and stores nothing. Without the lock B would check before A's write and store a twin."""
    rng = np.random.default_rng(3)
    base = unit(rng.standard_normal(384))
    reworded = unit(base + 0.012 * rng.standard_normal(384))
    assert float(base @ reworded) > 0.95
    second = connect(pg_url)
    register(second)
    admin = connect(pg_url)
    results: dict[str, bool] = {}
    with transaction(pg, ("team", "decisions")):
        hits, _ = knn.nearest(pg, base, "decisions", "team", 5, FLOOR)
        assert hits == []

        def run_b() -> None:
            with transaction(second, ("team", "decisions")):
                results["b"] = _check_then_write(second, 2, reworded)
        thread = threading.Thread(target=run_b)
        thread.start()
        pid = second.info.backend_pid
        while thread.is_alive() and not _waiting_for_lock(admin, pid):   # waits for a state, never a sleep
            thread.join(0.01)
        assert thread.is_alive(), "B did not wait for A's scope lock"
        add(pg, 1, base)
    thread.join(60)
    assert results == {"b": False}
    assert pg.execute("select count(*) from memories").fetchone()[0] == 1
    with transaction(pg, ("team", "learnings")):       # another scope's lock is another lock: no wait
        pass
    second.close()
    admin.close()


WRITER = r"""
import sys
import numpy as np
from subcog_store.postgres import knn
from subcog_store.postgres.connection import connect, transaction
from subcog_store.postgres.vectors import Vector, register

url, writer, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
con = connect(url)
register(con)
rng = np.random.default_rng(1000 + writer)
stored = 0
for r in range(rounds):
    base = np.random.default_rng(r).standard_normal(384)
    # a third of the writers repeat the round's text exactly, the others reword it (a nearby vector)
    vector = base if writer % 3 == 0 else base + 0.05 * rng.standard_normal(384)
    vector = (vector / np.linalg.norm(vector)).astype("float32")
    content = f"fact {r}" if writer % 3 == 0 else f"fact {r} in other words by {writer}"
    with transaction(con, ("team", "decisions")):
        hits, _ = knn.nearest(con, vector, "decisions", "team", 5, 0.85)
        if not (hits and hits[0].similarity >= 0.85):
            seq = con.execute("select nextval(pg_get_serial_sequence('memories', 'seq'))").fetchone()[0]
            con.execute("insert into memories (seq, id, namespace, domain, content, created_at, updated_at) "
                        "values (%s, %s, 'decisions', 'team', %s, '', '')", (seq, f"{seq:012x}", content))
            con.execute("insert into memory_vectors (memory_seq, namespace, domain, embedding) "
                        "values (%s, 'decisions', 'team', %s)", (seq, Vector(vector)))
            stored += 1
print(stored)
"""


def test_many_processes_capturing_the_same_facts_store_each_once(pg, pg_url) -> None:
    writers, rounds = 6, 25
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg_url, str(w), str(rounds)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(writers)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outputs]
    assert not any("could not serialize" in err for _, err in outputs)
    assert sum(int(out) for out, _ in outputs) == rounds
    assert pg.execute("select count(*) from memories").fetchone()[0] == rounds


# -- the store's writers: a lock per (domain, namespace) scope ----------------------------------------------------

REWORDED = ("We decided to use PgBouncer in transaction mode for the checkout database because the pool ran out of "
            "connections during the load test.",
            "We chose PgBouncer in transaction mode for the checkout database, since the connection pool ran out "
            "during the load test.")


def test_captures_in_other_scopes_go_on_while_a_scope_is_held_and_its_next_writer_waits(pg_url, embedder,
                                                                                          monkeypatch) -> None:
    """A holds the (shop, decisions) lock mid-capture (its memory inserted, not committed). B captures in (shop,
    patterns) and commits meanwhile: no wait (a wait would end in B's lock timeout, an error). C captures a
    rewording of A's text in A's scope: its check cannot see A's row, it waits for A's lock, and its re-check
    under the lock finds A's memory, although B's newer row (a higher seq, another scope) committed before A's:
    the fact is stored once. A writer of the whole store (a batch run, a review) waits for the scopes' writers."""
    from subcog_store.db import decisions
    from subcog_store.db.connection import immediate
    from subcog_store.store import Store

    stores = {name: Store(pg_url, embedder=embedder, environ={}) for name in "ABCW"}
    stores["A"].capture("Deploys go out from the release branch only.", "decisions", "shop")
    inserted, release, results = threading.Event(), threading.Event(), {}
    real_log = decisions.log_decision

    def held(con, decision):
        if con is stores["A"].con and not release.is_set():
            inserted.set()
            assert release.wait(300), "the test never let A commit"
        return real_log(con, decision)

    monkeypatch.setattr(decisions, "log_decision", held)

    def capture(name: str, text: str, namespace: str) -> None:
        results[name] = stores[name].capture(text, namespace, "shop")

    a = threading.Thread(target=capture, args=("A", REWORDED[0], "decisions"))
    a.start()
    assert inserted.wait(300) and a.is_alive()
    capture("B", "Retries use exponential backoff starting at two hundred milliseconds, capped at ten seconds.",
            "patterns")
    assert results["B"].stored                        # committed while A holds (shop, decisions)

    def pid(name: str) -> int:
        return stores[name].con.raw.info.backend_pid

    c = threading.Thread(target=capture, args=("C", REWORDED[1], "decisions"))
    c.start()

    def whole_store() -> None:
        with immediate(stores["W"].con):
            results["W"] = stores["W"].con.execute("select count(*) from memories").fetchone()[0]

    w = threading.Thread(target=whole_store)
    w.start()
    admin = connect(pg_url)
    try:
        for name, thread in (("C", c), ("W", w)):
            while thread.is_alive() and not _waiting_for_lock(admin, pid(name)):   # a state, never a sleep
                thread.join(0.01)
            assert thread.is_alive(), f"{name} did not wait for A's lock"
    finally:
        release.set()
        for thread in (a, c, w):
            thread.join(300)
        admin.close()
    assert results["A"].stored and not results["C"].stored, results["C"].to_dict()
    assert results["C"].decision == "semantic_skip" and results["W"] == 3   # W counted after A committed
    active = stores["W"].con.execute("select content from memories where status = 'active' and namespace = "
                                     "'decisions'").fetchall()
    assert sorted(r[0] for r in active) == sorted(["Deploys go out from the release branch only.", REWORDED[0]])
    for store in stores.values():
        store.close()
