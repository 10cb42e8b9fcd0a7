"""`doctor`: passes on a healthy store, names each deliberately broken invariant; the CLI exits 6 / 0."""
from __future__ import annotations

import subprocess
from pathlib import Path

import apsw
import numpy as np
import pytest

from helpers import run_cli
from subcog_store.db import connection as db
from subcog_store.doctor import diagnose
from subcog_store.text.normalize import content_hash

TEXTS = [
    "We decided to use PostgreSQL as the primary database for the billing service.",
    "The frontend team prefers React with TypeScript for all new user interface work.",
    "Use WAL mode",
]


def failed(con) -> dict[str, list[str]]:
    return {f.check: f.examples for f in diagnose(con) if not f.ok}


@pytest.fixture
def store(make_store, tiny_embedder):
    """Doctor checks storage, not meaning: vectors from the tiny deterministic embedder."""
    return make_store(embedder_=tiny_embedder)


@pytest.fixture
def seeded(store):
    ids = [store.capture(text, "decisions").memory_id for text in TEXTS]
    store.capture(TEXTS[0], "patterns")
    return store, ids


def seq_of(store, memory_id: str) -> int:
    return store.con.execute("select seq from memories where id = ?", (memory_id,)).fetchone()[0]


def raw_connection(path: str, hash_function=None) -> apsw.Connection:
    """A plain connection with vec0 and, when given, a (wrong) subcog_content_hash of our choosing."""
    con = apsw.Connection(path)
    con.setbusytimeout(5000)
    if hash_function is not None:
        con.create_scalar_function("subcog_content_hash", hash_function, 1, deterministic=True)
    con.enable_load_extension(True)
    con.load_extension(db.vec0_path())
    return con


def drop_vector(con, seq: int) -> None:
    con.execute("delete from memory_vectors where memory_seq = ?", (seq,))
    con.execute("delete from memory_bits where memory_seq = ?", (seq,))


def add_vector(con, seq: int, namespace: str, domain: str, blob: bytes) -> None:
    con.execute("insert into memory_vectors (memory_seq, namespace, domain, embedding) values (?, ?, ?, ?)",
                (seq, namespace, domain, blob))
    con.execute("insert into memory_bits (memory_seq, namespace, domain, bits) values (?, ?, ?, "
                "vec_quantize_binary(?))", (seq, namespace, domain, blob))


def test_fresh_store_passes(store) -> None:
    findings = diagnose(store.con)
    assert all(f.ok for f in findings)
    assert {f.check for f in findings} == {
        "schema_version", "sqlite_integrity", "active_memory_has_vector", "vector_has_active_memory",
        "vector_scope_matches", "vector_bits_match", "stored_hash_matches_content", "one_active_per_hash",
        "successor_exists", "no_capture_left_pending", "no_unreadable_pending_capture"}


def test_a_capture_left_pending_is_reported_once_stale(store) -> None:
    from subcog_store.capture import pending

    pending.mark(store, "s1", "/t/a.jsonl", {"session_id": "s1", "transcript_path": "/t/a.jsonl"})
    assert failed(store.con) == {}   # just recorded: its worker may still be on it
    store.con.execute("update hook_pending set queued_at = '2000-01-01T00:00:00.000Z'")
    assert failed(store.con) == {"no_capture_left_pending": ["s1 /t/a.jsonl"]}
    pending.clear(store, "s1", "/t/a.jsonl")
    assert failed(store.con) == {}


def test_store_with_captures_passes(seeded) -> None:
    store, _ = seeded
    store.capture(TEXTS[0], "decisions")  # a duplicate: nothing new
    assert failed(store.con) == {}


def test_missing_vector(seeded) -> None:
    store, ids = seeded
    drop_vector(store.con, seq_of(store, ids[1]))
    assert failed(store.con) == {"active_memory_has_vector": [ids[1]]}


def test_orphan_vector(seeded) -> None:
    store, _ = seeded
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 1.0
    add_vector(store.con, 9999, "decisions", "project", vector.tobytes())
    assert failed(store.con) == {"vector_has_active_memory": ["9999"]}


def test_vector_of_a_retired_memory(seeded) -> None:
    store, ids = seeded
    store.con.execute("update memories set status = 'deleted' where id = ?", (ids[0],))
    assert failed(store.con) == {"vector_has_active_memory": [str(seq_of(store, ids[0]))]}


def test_vector_in_the_wrong_namespace(seeded) -> None:
    store, ids = seeded
    seq = seq_of(store, ids[0])
    blob = store.con.execute("select embedding from memory_vectors where memory_seq = ?", (seq,)).fetchone()[0]
    drop_vector(store.con, seq)
    add_vector(store.con, seq, "learnings", "project", blob)
    assert failed(store.con) == {"vector_scope_matches": [ids[0]]}


def test_stale_or_missing_sign_bits(seeded) -> None:
    """The sign bits the KNN finds candidates by must mirror the vectors; reembed derives them again."""
    from subcog_store.maintenance import reembed

    store, ids = seeded
    first, second = seq_of(store, ids[0]), seq_of(store, ids[1])
    store.con.execute("delete from memory_bits where memory_seq = ?", (first,))
    store.con.execute("delete from memory_bits where memory_seq = ?", (second,))
    store.con.execute("insert into memory_bits (memory_seq, namespace, domain, bits) values (?, 'decisions', "
                      "'project', vec_quantize_binary(?))", (second, (-np.ones(384, dtype=np.float32)).tobytes()))
    found = failed(store.con)
    assert set(found) == {"vector_bits_match"} and sorted(found["vector_bits_match"]) == sorted([str(first), str(second)])
    reembed(store)
    assert failed(store.con) == {}


def test_tampered_stored_hash(seeded) -> None:
    store, ids = seeded
    # A generated column cannot be updated; a connection with a different subcog_content_hash recomputes it wrongly.
    con = raw_connection(store.path, lambda text: "0" * 64)
    con.execute("update memories set content = ? where id = ?", ("We use MySQL now.", ids[2]))
    con.close()
    assert failed(store.con) == {"stored_hash_matches_content": [ids[2]]}


def test_dangling_successor(seeded) -> None:
    store, ids = seeded
    con = raw_connection(store.path, content_hash)  # foreign keys off: the broken reference can be written
    con.execute("update memories set status = 'superseded', successor_id = 'ffffffffffff' where id = ?", (ids[2],))
    drop_vector(con, seq_of(store, ids[2]))
    con.close()
    assert failed(store.con) == {"successor_exists": [ids[2]]}


def test_old_schema_version_reported(seeded) -> None:
    store, _ = seeded
    store.con.execute("pragma user_version = 3")
    assert set(failed(store.con)) == {"schema_version"}


def run_doctor(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("doctor", *extra, db=path, timeout=60, text=True)


def test_cli_doctor_exit_codes(seeded) -> None:
    import json

    store, ids = seeded
    path = Path(store.path)
    ok = run_doctor(path)
    assert ok.returncode == 0, ok.stderr
    assert "FAIL" not in ok.stdout and "stored_hash_matches_content" in ok.stdout

    drop_vector(store.con, seq_of(store, ids[0]))
    bad = run_doctor(path)
    assert bad.returncode == 6
    assert "FAIL active_memory_has_vector: 1 active memories without a vector" in bad.stdout and ids[0] in bad.stdout

    as_json = run_doctor(path, "--json")
    assert as_json.returncode == 6
    data = json.loads(as_json.stdout)
    assert data["ok"] is False
    assert [f["check"] for f in data["findings"] if not f["ok"]] == ["active_memory_has_vector"]
