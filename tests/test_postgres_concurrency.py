"""Many writers on PostgreSQL (issue 26): a scope's check-then-write under its advisory lock stores a fact
once, whether it comes twice word for word or reworded, from threads of one process or from many processes,
with no serialization error anywhere; captures linking the same memories of other scopes never deadlock."""
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


def _link_two_in_opposite_orders(pg_url: str, scopes_a: list, scopes_b: list, admin) -> dict[str, str]:
    """Two captures' write transactions (two connections: two server processes), each linking the same two
    memories of other scopes as outdated, A in the order X then Y, B in the order Y then X, stepped by events:
    A links X; B starts and tries Y; A tries Y. What each ended with: "ok" or its error."""
    from subcog_store.db import memories as writer
    from subcog_store.db.connection import immediate
    from subcog_store.postgres import adapter

    a, b = adapter.connect(pg_url), adapter.connect(pg_url)
    outcome: dict[str, str] = {}
    a_linked_x, b_started = threading.Event(), threading.Event()

    def run(name: str, con, scopes: list, first: str, second: str, successor: str) -> None:
        try:
            with immediate(con, *scopes):
                if name == "b":
                    b_started.set()
                writer.link_successor(con, first, successor, "2026-01-01T00:00:00")
                if name == "a":
                    a_linked_x.set()
                    b_started.wait(60)
                    _wait_until_blocked_or_done(admin, b.raw.info.backend_pid, thread_b)
                writer.link_successor(con, second, successor, "2026-01-01T00:00:00")
            outcome[name] = "ok"
        except Exception as e:  # noqa: BLE001 - the outcome is what the test compares
            outcome[name] = f"{type(e).__name__}: {e}"

    thread_b = threading.Thread(target=lambda: (a_linked_x.wait(60), run("b", b, scopes_b, Y, X, B_NEW)))
    thread_a = threading.Thread(target=run, args=("a", a, scopes_a, X, Y, A_NEW))
    thread_a.start()
    thread_b.start()
    thread_a.join(120)
    thread_b.join(120)
    a.close()
    b.close()
    return outcome


X, Y, A_NEW, B_NEW = (f"{seq:012x}" for seq in (1, 2, 3, 4))


def _wait_until_blocked_or_done(admin, pid: int, thread: threading.Thread) -> None:
    """Until B's server process waits for a lock (a row's or a scope's), or B has finished: a state, no sleep."""
    while thread.is_alive() and not _waiting_for_lock(admin, pid):
        thread.join(0.01)


def test_captures_that_outdate_the_same_memories_of_other_scopes_wait_instead_of_deadlocking(pg, pg_url) -> None:
    """Issue 26, changed-fact links across namespaces: a capture in `decisions` and one in `learnings` both link
    X (`apis`) and Y (`config`) as outdated, in opposite orders. Locking only their own scopes, each holds one
    row the other wants: PostgreSQL ends one with a deadlock error (reproduced here). Locking the scopes
    `written_scopes` names (their own and the outdated memories'), in one order, the second waits at its start
    for the first to commit: both succeed."""
    from subcog_store.dedup.outdated import Outdated
    from subcog_store.dedup.write import written_scopes
    from subcog_store.inputs import Prepared

    rng = np.random.default_rng(11)
    for seq, namespace in ((1, "apis"), (2, "config"), (3, "decisions"), (4, "learnings")):
        add(pg, seq, unit(rng.standard_normal(384)), namespace=namespace)
    admin = connect(pg_url)
    own_only = _link_two_in_opposite_orders(pg_url, [("team", "decisions")], [("team", "learnings")], admin)
    assert sorted(own_only) == ["a", "b"]
    assert sum("deadlock" in v for v in own_only.values()) == 1 and "ok" in own_only.values(), own_only

    found = [Outdated(X, "apis", "x", 0.7, None), Outdated(Y, "config", "y", 0.7, None)]  # type: ignore[arg-type]

    def capture(namespace: str) -> Prepared:
        return Prepared("c", "h", namespace, "team", 0.5, [], None, None, None, None)
    scopes_a, scopes_b = written_scopes(capture("decisions"), found), written_scopes(capture("learnings"), found)
    assert scopes_a == [("team", "decisions"), ("team", "apis"), ("team", "config")]
    pg.execute("update memories set successor_id = null")
    assert _link_two_in_opposite_orders(pg_url, scopes_a, scopes_b, admin) == {"a": "ok", "b": "ok"}
    admin.close()
