"""The Store: the three-tier check, its result, settings, isolation, the recent window, failing open, bad input,
foreign files, read-only use, migrations, and the tables and views a capture leaves behind."""
from __future__ import annotations

import logging
import math
import os
import re
import shutil
from pathlib import Path

import apsw
import numpy as np
import pytest

BOTH_BACKENDS = True   # each test that opens a store runs on SQLite and on PostgreSQL (conftest.make_store)

from conftest import all_counts, count_rows
from subcog_store.db import connection as db
from subcog_store.config import MAX_CONTENT_BYTES
from subcog_store.doctor import diagnose
from subcog_store.model.embedder import Embedder
from subcog_store.errors import ConfigError, DatabaseError, InvalidInput, NotASubcogDatabase
from subcog_store.config import model_dir
from subcog_store.text.normalize import content_hash
from subcog_store.store import Store

# A semantic pair the guard accepts (same facts, other order): cosine ~0.965 with the int8 model.
A = "We decided to use PostgreSQL as the primary database for the billing service."
B = "For the billing service we decided to use PostgreSQL as the primary database."
UNRELATED = "The frontend team prefers React with TypeScript for all new user interface work."
SHORT = "Use WAL mode"
URN = re.compile(r"^subcog://(?P<domain>[^/]+)/(?P<namespace>[a-z-]+)/(?P<id>[0-9a-f]{12})$")


def vectors_per_active_memory(store: Store) -> dict[str, int]:
    vectors = "memory_vectors v where v.memory_seq" if getattr(store.con, "dialect", "") == "postgresql" else \
        "memory_vectors_rowids v where v.rowid"
    return dict(store.con.execute(
        f"select m.id, (select count(*) from {vectors} = m.seq) from memories m where m.status = 'active'"
    ).fetchall())


# ---------------------------------------------------------------------------------------------- tiers

def test_exact_tier_first(store) -> None:
    captured = store.capture(A, "decisions")
    assert captured.stored and captured.decision == "stored"
    store.record_capture(A, "decisions")  # the recent tier would match too: exact wins, and runs alone
    result = store.check_duplicate("  " + A.upper(), "decisions")
    assert result.is_duplicate and result.reason == "exact_match"
    assert result.method == "hash" and result.similarity_score == 1.0
    assert result.tiers_run == ["exact"]
    assert result.matched_memory_id == captured.memory_id
    assert result.matched_content == A


def test_semantic_tier_second(store, embedder) -> None:
    captured = store.capture(A, "decisions")
    store.record_capture(B, "decisions")  # recent would also match B: semantic comes first
    result = store.check_duplicate(B, "decisions")
    assert result.is_duplicate and result.reason == "semantic_similar"
    assert result.method == "embedding"
    assert result.tiers_run == ["exact", "semantic"]
    assert result.matched_memory_id == captured.memory_id
    assert result.threshold == pytest.approx(0.92)
    va, vb = embedder.embed_batch([A, B])
    assert result.similarity_score == pytest.approx(float(va @ vb), abs=1e-5)
    assert 0.92 <= result.similarity_score < 1.0


def test_recent_tier_last(store) -> None:
    store.record_capture(SHORT, "decisions")
    result = store.check_duplicate(SHORT, "decisions")
    assert result.is_duplicate and result.reason == "recent_capture" and result.method == "recent"
    assert result.tiers_run == ["exact", "semantic:skipped_short", "recent"]
    assert result.matched_memory_id is None  # recorded without a memory
    assert result.matched_urn == f"subcog://project/decisions/recent-{content_hash(SHORT)[:12]}"
    assert result.similarity_score == 1.0 and result.captured_seconds_ago == 0.0


def test_recent_capture_blocks_a_capture(store) -> None:
    store.record_capture(A, "decisions")
    result = store.capture(A, "decisions")
    assert not result.stored and result.decision == "recent_capture"
    assert result.check.tiers_run == ["exact", "semantic", "recent"]
    assert count_rows(store, "memories") == 0


def test_unique_runs_all_three_tiers(store, backend) -> None:
    store.capture(A, "decisions")
    result = store.check_duplicate(UNRELATED, "decisions")
    assert not result.is_duplicate and result.reason is None and result.matched_urn is None
    assert result.tiers_run == ["exact", "semantic", "recent"]
    assert result.tier_errors == {}
    assert set(result.tier_ms) == {"exact", "semantic", "recent"}
    assert all(n.similarity < 0.5 for n in result.neighbours)  # nothing near: only the floor's neighbours count
    assert result.knn == "complete"   # a few vectors: every one within the floor's Hamming bound re-scored


def test_a_check_writes_its_log_row_and_nothing_else(store) -> None:
    """On PostgreSQL the row goes in one autocommitted insert (no transaction, no lock); the same row either way."""
    store.capture(A, "decisions")
    before = all_counts(store)
    store.check_duplicate(UNRELATED, "decisions")
    assert all_counts(store) == {**before, "dedup_checks": before["dedup_checks"] + 1}
    row = store.con.execute("select namespace, result, content_fingerprint from dedup_checks order by id desc"
                            ).fetchone()
    assert tuple(row) == ("decisions", "unique", content_hash(UNRELATED)[:16])


def test_result_fields_and_urn(store) -> None:
    captured = store.capture(A, "decisions", "my-app", importance=0.7, tags=["db"], source="test", session_id="s1")
    assert URN.match(captured.urn).groupdict() == {"domain": "my-app", "namespace": "decisions",
                                                    "id": captured.memory_id}
    memory = store.get(captured.memory_id)
    assert (memory.domain, memory.namespace, memory.importance, memory.tags, memory.source, memory.session_id) == \
        ("my-app", "decisions", 0.7, ["db"], "test", "s1")
    assert memory.content_hash == content_hash(A) and memory.urn == captured.urn
    for text in (A, B):
        result = store.check_duplicate(text, "decisions", "my-app")
        assert result.is_duplicate
        assert result.matched_urn == captured.urn
        assert result.check_duration_ms > 0
        assert result.content_hash == content_hash(text)
        assert (result.domain, result.namespace) == ("my-app", "decisions")
    store.record_capture(SHORT, "decisions", "my-app")
    recent = store.check_duplicate(SHORT, "decisions", "my-app")
    assert recent.matched_urn and recent.matched_urn.startswith("subcog://my-app/decisions/")
    dup = store.capture(B, "decisions", "my-app")
    assert not dup.stored and dup.decision == "semantic_skip"
    assert dup.urn == captured.urn and dup.memory_id == captured.memory_id
    data = dup.to_dict()
    assert data["matched_urn"] == captured.urn and data["reason"] == "semantic_similar"


def test_default_thresholds_per_namespace(store) -> None:
    expected = {"decisions": 0.92, "patterns": 0.90, "learnings": 0.88, "context": 0.90, "tech-debt": 0.90}
    for namespace, threshold in expected.items():
        assert store.check_duplicate(UNRELATED, namespace).threshold == pytest.approx(threshold)


# ---------------------------------------------------------------------------------------------- threshold

def measured_similarity(make_store, tmp_path: Path) -> float:
    """The similarity the store itself computes for (A stored, B checked)."""
    probe = make_store(path=tmp_path / "probe.db", dedup_threshold_decisions="1.0")
    probe.capture(A, "decisions")
    result = probe.check_duplicate(B, "decisions")
    assert not result.is_duplicate
    return result.neighbours[0].similarity


def test_threshold_is_inclusive(make_store, tmp_path: Path, embedder) -> None:
    similarity = measured_similarity(make_store, tmp_path)
    va, vb = embedder.embed_batch([A, B])
    assert similarity == pytest.approx(float(va @ vb), abs=1e-5)

    exact = make_store(path=tmp_path / "exact.db", dedup_threshold_decisions=repr(similarity))
    assert exact.settings.threshold("decisions") == similarity
    exact.capture(A, "decisions")
    result = exact.check_duplicate(B, "decisions")
    assert result.is_duplicate and result.reason == "semantic_similar"
    assert result.similarity_score == similarity == result.threshold

    above = math.nextafter(similarity, 2.0)
    higher = make_store(path=tmp_path / "above.db", dedup_threshold_decisions=repr(above))
    higher.capture(A, "decisions")
    result = higher.check_duplicate(B, "decisions")
    assert not result.is_duplicate
    assert result.neighbours[0].similarity == similarity < result.threshold


def test_threshold_per_namespace_overrides_default(make_store) -> None:
    store = make_store(dedup_threshold_default="0.99", dedup_threshold_decisions="0.5")
    store.capture(A, "decisions")
    store.capture(A, "context")
    assert store.check_duplicate(B, "decisions").reason == "semantic_similar"
    assert not store.check_duplicate(B, "context").is_duplicate  # default 0.99 applies to context


def test_semantic_skipped_for_short_content(make_store) -> None:
    length = len(B)
    store = make_store(dedup_min_semantic_length=str(length + 1))
    store.capture(A, "decisions")
    result = store.check_duplicate(B, "decisions")
    assert not result.is_duplicate
    assert result.tiers_run == ["exact", "semantic:skipped_short", "recent"]
    assert result.neighbours == []

    at_limit = make_store(path=store.path + ".2", dedup_min_semantic_length=str(length))
    at_limit.capture(A, "decisions")
    assert at_limit.check_duplicate(B, "decisions").reason == "semantic_similar"


def test_short_content_is_still_stored_with_a_vector(store) -> None:
    result = store.capture(SHORT, "decisions")
    assert result.stored and "semantic:skipped_short" in result.check.tiers_run
    assert vectors_per_active_memory(store) == {result.memory_id: 1}


# ---------------------------------------------------------------------------------------------- isolation

def test_namespace_isolation(store) -> None:
    store.capture(A, "decisions")
    store.record_capture(SHORT, "decisions")
    for namespace in ("patterns", "learnings", "tech-debt"):
        for text in (A, B, SHORT):
            result = store.check_duplicate(text, namespace)
            assert not result.is_duplicate, (namespace, text, result.reason)
    stored = store.capture(A, "patterns")
    assert stored.stored and stored.memory_id != store.check_duplicate(A, "decisions").matched_memory_id


def test_domain_isolation(store) -> None:
    store.capture(A, "decisions", "alpha")
    store.record_capture(SHORT, "decisions", "alpha")
    for domain in (None, "beta", "Alpha-2"):
        for text in (A, B, SHORT):
            result = store.check_duplicate(text, "decisions", domain)
            assert not result.is_duplicate, (domain, text, result.reason)
    assert store.check_duplicate(B, "decisions", "alpha").reason == "semantic_similar"
    assert store.capture(A, "decisions", "beta").stored


@pytest.mark.parametrize("alias", ["techdebt", "tech_debt", "TECH-DEBT", "Tech-Debt", " tech-debt "])
def test_namespace_aliases(store, alias: str) -> None:
    captured = store.capture(A, "tech-debt")
    result = store.check_duplicate(A, alias)
    assert result.is_duplicate and result.namespace == "tech-debt"
    assert result.matched_urn == captured.urn == f"subcog://project/tech-debt/{captured.memory_id}"
    again = store.capture(A, alias)
    assert not again.stored and again.decision == "hash_exact"


def test_namespace_alias_threshold_env(make_store) -> None:
    store = make_store(dedup_threshold_tech_debt="0.99")
    assert store.check_duplicate(UNRELATED, "techdebt").threshold == pytest.approx(0.99)


# ---------------------------------------------------------------------------------------------- recent window

def test_recent_window_expires(make_store, clock) -> None:
    store = make_store(dedup_time_window_secs="60")
    store.record_capture(SHORT, "decisions")
    clock.advance(30)
    result = store.check_duplicate(SHORT, "decisions")
    assert result.reason == "recent_capture" and result.captured_seconds_ago == pytest.approx(30)
    clock.advance(31)
    assert not store.check_duplicate(SHORT, "decisions").is_duplicate
    assert store.capture(SHORT, "decisions").stored


def test_recent_rows_pruned_by_age(make_store, clock) -> None:
    store = make_store(dedup_time_window_secs="60")
    store.record_capture("first note", "decisions")
    clock.advance(61)
    store.record_capture("second note", "decisions")
    rows = store.con.execute("select content_hash from recent_captures").fetchall()
    assert rows == [(content_hash("second note"),)]


def test_recent_capacity_pruning(make_store, clock) -> None:
    store = make_store(dedup_cache_capacity="3")
    texts = [f"note number {i}" for i in range(5)]
    for text in texts:
        store.record_capture(text, "decisions")
        clock.advance(1)
    assert count_rows(store, "recent_captures") == 3
    assert [store.check_duplicate(t, "decisions").is_duplicate for t in texts] == [False, False, True, True, True]
    # The view shows the database's own setting: an environment override holds for its process only.
    window = store.con.execute("select entries, capacity from v_recent_window").fetchone()
    assert window == (3, 1000)


def test_capture_feeds_the_recent_window(make_store, clock) -> None:
    store = make_store(dedup_cache_capacity="3")
    for i in range(6):
        store.capture(f"captured short note {i}", "decisions")
        clock.advance(1)
    assert count_rows(store, "recent_captures") == 3
    assert count_rows(store, "memories") == 6


# ---------------------------------------------------------------------------------------------- fail open

def empty_model_dir(tmp_path: Path) -> Path:
    path = tmp_path / "no-model"
    path.mkdir()
    return path


def assert_text_tier_fallback(store: Store, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="subcog_store"):
        first = store.capture(A, "decisions")
    assert first.stored
    assert store.embedder_error
    assert any("semantic tier off" in r.getMessage() for r in caplog.records)
    assert count_rows(store, "memory_vectors") == 0  # stored without a vector: doctor reports, reembed fixes
    result = store.check_duplicate(B, "decisions")  # the same significant words, other order
    assert result.is_duplicate and result.reason == "semantic_similar" and result.method == "text"
    assert result.tiers_run == ["exact", "semantic:text"]
    assert result.threshold == pytest.approx(0.80)
    assert not store.capture(B, "decisions").stored
    assert store.check_duplicate(A, "decisions").method == "hash"
    unrelated = store.capture(UNRELATED, "decisions")
    assert unrelated.stored and unrelated.check.tiers_run == ["exact", "semantic:text", "recent"]
    findings = {f.check: f for f in diagnose(store.con)}
    assert not findings["active_memory_has_vector"].ok


def test_fail_open_model_dir_env_missing(make_store, tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("SUBCOG_MODEL_DIR", str(empty_model_dir(tmp_path)))
    store = make_store(use_shared_embedder=False)
    assert_text_tier_fallback(store, caplog)
    assert "missing" in store.embedder_error


def test_fail_open_model_missing_embedder_directory(make_store, tmp_path: Path, caplog) -> None:
    store = make_store(embedder_=Embedder(directory=empty_model_dir(tmp_path)))
    assert_text_tier_fallback(store, caplog)


def corrupt_model_dir(tmp_path: Path, same_size: bool) -> Path:
    path = tmp_path / "corrupt-model"
    path.mkdir()
    shutil.copy(model_dir() / "tokenizer.json", path / "tokenizer.json")
    size = (model_dir() / "model.onnx").stat().st_size
    (path / "model.onnx").write_bytes(os.urandom(size if same_size else 4096))
    return path


@pytest.mark.parametrize("same_size", [True, False], ids=["wrong-bytes", "wrong-size"])
def test_fail_open_corrupt_model(make_store, tmp_path: Path, monkeypatch, caplog, same_size: bool) -> None:
    monkeypatch.setenv("SUBCOG_MODEL_DIR", str(corrupt_model_dir(tmp_path, same_size)))
    store = make_store(use_shared_embedder=False)
    assert_text_tier_fallback(store, caplog)


def test_fail_open_when_onnxruntime_rejects_the_file(make_store, tmp_path: Path, caplog) -> None:
    # The checksum marker says the files are fine (same size and mtime), but the bytes are garbage: onnxruntime
    # itself fails, and the store still falls back to the text tier.
    import json

    from subcog_store.model.files import load_manifest

    path = corrupt_model_dir(tmp_path, same_size=True)
    (path / ".verified").write_text(json.dumps(
        {s.name: [(path / s.name).stat().st_mtime_ns, s.sha256] for s in load_manifest()}))
    store = make_store(embedder_=Embedder(directory=path))
    assert_text_tier_fallback(store, caplog)
    assert "protobuf" in store.embedder_error.lower() or "onnx" in store.embedder_error.lower()


def test_semantic_disabled_uses_text_tier(make_store) -> None:
    store = make_store(dedup_semantic_enabled="false")
    assert store.embedder is None
    store.capture(A, "decisions")
    result = store.check_duplicate(B, "decisions")
    assert result.method == "text" and result.tiers_run == ["exact", "semantic:text"]
    assert count_rows(store, "memory_vectors") == 0


def test_dedup_disabled(make_store) -> None:
    store = make_store(dedup_enabled="false")
    first = store.capture(A, "decisions")
    result = store.check_duplicate(A, "decisions")
    assert not result.is_duplicate and not result.enabled and result.tiers_run == []
    assert store.con.execute("select result from dedup_checks order by id desc limit 1").fetchone() == ("disabled",)
    near = store.capture(B, "decisions")
    assert near.stored  # no semantic check at all
    store.record_capture(SHORT, "decisions")
    assert not store.check_duplicate(SHORT, "decisions").is_duplicate
    # The one-active-per-hash invariant still holds: an identical text is not stored twice.
    again = store.capture(A, "decisions")
    assert not again.stored and again.memory_id == first.memory_id
    assert count_rows(store, "memories") == 2


# ---------------------------------------------------------------------------------------------- configuration

@pytest.mark.parametrize("variable, value", [
    ("SUBCOG_DEDUP_THRESHOLD_DEFAULT", "abc"),
    ("SUBCOG_DEDUP_THRESHOLD_DEFAULT", "1.5"),
    ("SUBCOG_DEDUP_THRESHOLD_DECISIONS", "-0.1"),
    ("SUBCOG_DEDUP_THRESHOLD_TECH_DEBT", "nan"),
    ("SUBCOG_DEDUP_ENABLED", "maybe"),
    ("SUBCOG_DEDUP_SEMANTIC_ENABLED", ""),
    ("SUBCOG_DEDUP_TIME_WINDOW_SECS", "-1"),
    ("SUBCOG_DEDUP_TIME_WINDOW_SECS", "1.5"),
    ("SUBCOG_DEDUP_CACHE_CAPACITY", "0"),
    ("SUBCOG_DEDUP_MIN_SEMANTIC_LENGTH", "ten"),
    ("SUBCOG_DEDUP_POLICY_DEFAULT", "delete"),
])
def test_bad_config_raises_config_error_naming_the_variable(tmp_path: Path, embedder, variable: str,
                                                             value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        Store(tmp_path / "m.db", embedder=embedder, environ={variable: value})


def test_good_config_values_parse(make_store) -> None:
    store = make_store(dedup_enabled="YES", dedup_time_window_secs="0", dedup_threshold_default=" 0.5 ",
                       dedup_cache_capacity="1")
    assert store.settings.dedup_enabled is True
    assert store.settings.dedup_time_window_secs == 0
    assert store.settings.threshold("context") == 0.5
    assert store.settings.origins["dedup_cache_capacity"] == "env"


def test_environ_dict_isolates_from_os_environ(make_store, monkeypatch) -> None:
    monkeypatch.setenv("SUBCOG_DEDUP_THRESHOLD_DEFAULT", "abc")
    store = make_store()  # environ={} given: os.environ is not read
    assert store.settings.threshold("context") == pytest.approx(0.90)


def test_environment_override_does_not_persist(make_store, tmp_path: Path) -> None:
    one_off = make_store(path=tmp_path / "m.db", dedup_time_window_secs="0", dedup_cache_capacity="3")
    one_off.capture(SHORT, "decisions")
    later = make_store(path=tmp_path / "m.db")  # no environment variables
    assert later.settings.dedup_time_window_secs == 300
    assert later.settings.dedup_cache_capacity == 1000


# ---------------------------------------------------------------------------------------------- bad input

BAD_INPUTS = {
    "empty": ("", "decisions"),
    "whitespace": (" \t\n\u3000 ", "decisions"),
    "unknown-namespace": (A, "gossip"),
    "invalid-utf8": (b"caf\xc3 \xff\xfe broken", "decisions"),
    "lone-surrogate": ("before \ud800 after", "decisions"),
    "oversized": ("a" * (MAX_CONTENT_BYTES + 1), "decisions"),
    "oversized-multibyte": ("é" * (MAX_CONTENT_BYTES // 2 + 1), "decisions"),
    "not-text": (12345, "decisions"),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_is_rejected_and_nothing_written(store, name: str) -> None:
    store.capture(A, "decisions")
    content, namespace = BAD_INPUTS[name]
    before = all_counts(store)
    with pytest.raises(InvalidInput):
        store.capture(content, namespace)
    with pytest.raises(InvalidInput):
        store.check_duplicate(content, namespace)
    with pytest.raises(InvalidInput):
        store.record_capture(content, namespace)
    assert all_counts(store) == before


@pytest.mark.parametrize("kwargs", [{"importance": 1.5}, {"importance": "high"}, {"importance": float("nan")},
                                    {"tags": ["ok", ""]}, {"policy": "yolo"}])
def test_bad_capture_options_rejected(store, kwargs: dict) -> None:
    before = all_counts(store)
    with pytest.raises(InvalidInput):
        store.capture(A, "decisions", **kwargs)
    assert all_counts(store) == before


@pytest.mark.parametrize("domain", ["   ", "a/b", "x" * 101])
def test_bad_domain_rejected(store, domain: str) -> None:
    with pytest.raises(InvalidInput):
        store.capture(A, "decisions", domain)


def test_tags_not_a_list_is_invalid_input(store) -> None:
    with pytest.raises(InvalidInput):
        store.capture(A, "decisions", tags=5)


def test_tags_string_is_not_split_into_characters(store) -> None:
    try:
        result = store.capture(A, "decisions", tags="urgent")
    except InvalidInput:
        return
    assert store.get(result.memory_id).tags == ["urgent"]


def test_domain_not_a_string_is_invalid_input(store) -> None:
    with pytest.raises(InvalidInput):
        store.capture(A, "decisions", 5)


def test_content_at_the_size_limit_is_accepted(store) -> None:
    content = "é" * (MAX_CONTENT_BYTES // 2)  # exactly 64 KiB of UTF-8 (32 Ki characters)
    assert len(content.encode()) == MAX_CONTENT_BYTES
    assert not store.check_duplicate(content, "decisions").is_duplicate
    assert store.capture(content, "decisions").stored


def test_bytes_content_is_decoded(store) -> None:
    captured = store.capture(A.encode("utf-8"), "decisions")
    assert store.get(captured.memory_id).content == A
    assert store.check_duplicate(A, "decisions").reason == "exact_match"


# ---------------------------------------------------------------------------------------------- foreign files

def test_random_bytes_file_is_not_a_subcog_database(tmp_path: Path, embedder) -> None:
    path = tmp_path / "random.db"
    data = os.urandom(8192)
    path.write_bytes(data)
    with pytest.raises(NotASubcogDatabase):
        Store(path, embedder=embedder, environ={})
    assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["random.db"]


def test_text_file_is_not_a_subcog_database(tmp_path: Path, embedder) -> None:
    path = tmp_path / "notes.txt"
    data = ("just some notes, not a database\n" * 200).encode()
    path.write_bytes(data)
    with pytest.raises(NotASubcogDatabase):
        Store(path, embedder=embedder, environ={})
    assert path.read_bytes() == data


@pytest.mark.parametrize("application_id", [0, 0x12345678])
def test_other_apps_sqlite_database_is_left_untouched(tmp_path: Path, embedder, application_id: int) -> None:
    path = tmp_path / "other.db"
    con = apsw.Connection(str(path))
    con.execute(f"pragma application_id = {application_id}")
    con.execute("create table notes (id integer primary key, body text)")
    con.execute("insert into notes (body) values ('hello')")
    con.close()
    data = path.read_bytes()
    with pytest.raises(NotASubcogDatabase):
        Store(path, embedder=embedder, environ={})
    assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_foreign_empty_database_with_application_id_is_rejected(tmp_path: Path, embedder) -> None:
    path = tmp_path / "other.db"
    con = apsw.Connection(str(path))
    con.execute("pragma application_id = 42")
    con.close()
    data = path.read_bytes()
    with pytest.raises(NotASubcogDatabase):
        Store(path, embedder=embedder, environ={})
    assert path.read_bytes() == data


def test_missing_directory_is_a_database_error(tmp_path: Path, embedder) -> None:
    with pytest.raises(DatabaseError, match="does not exist"):
        Store(tmp_path / "missing" / "m.db", embedder=embedder, environ={})
    assert not (tmp_path / "missing").exists()


@pytest.mark.sqlite_only("SQLite's user_version (PostgreSQL's: test_postgres_schema)")
def test_newer_schema_is_refused(tmp_path: Path, make_store) -> None:
    store = make_store()
    store.con.execute(f"pragma user_version = {db.latest_version() + 1}")
    store.close()
    with pytest.raises(DatabaseError, match="newer"):
        make_store()


# ---------------------------------------------------------------------------------------------- read-only

def seeded_db(make_store, tmp_path: Path) -> Path:
    store = make_store()
    store.capture(A, "decisions")
    store.close()
    return Path(store.path)


def test_readonly_store_checks_but_does_not_capture(make_store, tmp_path: Path) -> None:
    path = seeded_db(make_store, tmp_path)
    ro = make_store(path=path, readonly=True)
    before = all_counts(ro)
    assert ro.check_duplicate(A, "decisions").reason == "exact_match"
    assert ro.check_duplicate(B, "decisions").reason == "semantic_similar"
    assert not ro.check_duplicate(UNRELATED, "decisions").is_duplicate
    with pytest.raises(DatabaseError):
        ro.capture(UNRELATED, "decisions")
    assert all_counts(ro) == before


def test_readonly_store_record_capture_raises_database_error(make_store, tmp_path: Path) -> None:
    path = seeded_db(make_store, tmp_path)
    ro = make_store(path=path, readonly=True)
    with pytest.raises(DatabaseError):
        ro.record_capture(SHORT, "decisions")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root ignores file permissions (the readonly=True test covers read-only use)")
def test_readonly_file_permissions(make_store, tmp_path: Path) -> None:
    path = seeded_db(make_store, tmp_path)
    for extra in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if extra.exists():
            extra.unlink()
    path.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        try:
            store = make_store(path=path)
        except DatabaseError:
            return  # refusing to open read-write is acceptable; it must be a DatabaseError
        assert store.check_duplicate(A, "decisions").reason == "exact_match"
        with pytest.raises(DatabaseError):
            store.capture(UNRELATED, "decisions")
    finally:
        tmp_path.chmod(0o755)
        path.chmod(0o644)


# ---------------------------------------------------------------------------------------------- migrations

@pytest.mark.sqlite_only("SQLite's migrations")
def test_migration_from_version_1(tmp_path: Path, make_store) -> None:
    path = tmp_path / "old.db"
    con = db.connect(path, migrate=False)
    assert db.migrate_to_latest(con, target=1) == ["store"]
    assert db.schema_version(con) == 1
    con.execute("insert into memories (id, domain, namespace, content, created_at, updated_at) values "
                "('0123456789ab', 'project', 'decisions', ?, '2026-01-01T00:00:00.000Z', "
                "'2026-01-01T00:00:00.000Z')", (A,))
    tables = {r[0] for r in con.execute("select name from sqlite_master where type in ('table', 'view')")}
    assert "dedup_log" not in tables and "v_memories" not in tables
    con.close()

    store = make_store(path=path)
    assert db.schema_version(store.con) == db.latest_version()
    versions = [r[0] for r in store.con.execute("select version from schema_migrations order by version")]
    assert versions == list(range(1, db.latest_version() + 1))
    memory = store.get("0123456789ab")
    assert memory.content == A and memory.content_hash == content_hash(A)
    assert store.con.execute("select urn from v_memories").fetchall() == [("subcog://project/decisions/0123456789ab",)]
    assert store.check_duplicate(A, "decisions").matched_memory_id == "0123456789ab"
    assert store.capture(UNRELATED, "decisions").stored  # the new tables (decision log) work
    assert db.migrate_to_latest(store.con) == []  # idempotent


@pytest.mark.sqlite_only("SQLite's sign bits")
def test_migration_008_derives_the_sign_bits_of_every_vector(tmp_path: Path, make_store, embedder) -> None:
    """A store of version 7 has float vectors only: the migration adds their sign bits, so the semantic tier
    finds the same neighbour before and after, and doctor passes."""
    from subcog_store.doctor import diagnose

    path = tmp_path / "v7.db"
    con = db.connect(path, migrate=False)
    db.migrate_to_latest(con, target=7)
    vector = embedder.embed_batch([A])[0]
    seq = con.execute("insert into memories (id, domain, namespace, content, created_at, updated_at) values "
                      "('0123456789ab', 'project', 'decisions', ?, '2026-01-01T00:00:00.000Z', "
                      "'2026-01-01T00:00:00.000Z') returning seq", (A,)).fetchone()[0]
    con.execute("insert into memory_vectors (memory_seq, namespace, domain, embedding) values (?, 'decisions', "
                "'project', ?)", (seq, vector.tobytes()))
    con.close()

    store = make_store(path=path)
    assert count_rows(store, "memory_bits") == 1
    assert all(f.ok for f in diagnose(store.con))
    result = store.check_duplicate(B, "decisions")
    assert result.neighbours and result.neighbours[0].memory_id == "0123456789ab"
    assert result.knn == "complete"


# ---------------------------------------------------------------------------------------------- tables and views

def test_each_active_memory_has_exactly_one_vector(store) -> None:
    texts = [A, B, UNRELATED, SHORT, "Always run database migrations inside a single transaction."]
    for namespace in ("decisions", "patterns"):
        for text in texts:
            store.capture(text, namespace)
    store.capture(A.upper(), "decisions")
    # A replace retires the old memory: its vector leaves search.
    replaced = store.capture(B, "learnings")
    newer = store.capture(A, "learnings", policy="replace")
    assert newer.decision == "replaced" and newer.retired == [replaced.memory_id]
    counts = vectors_per_active_memory(store)
    assert counts and set(counts.values()) == {1}
    assert count_rows(store, "memory_vectors") == len(counts)
    assert all(f.ok for f in diagnose(store.con)), [f for f in diagnose(store.con) if not f.ok]
    stored_vector = store.con.execute(
        "select v.embedding from memory_vectors v join memories m on m.seq = v.memory_seq where m.id = ?",
        (newer.memory_id,)).fetchone()[0]
    assert np.allclose(np.frombuffer(stored_vector, dtype=np.float32), store.embed(A), atol=1e-6)


def test_check_log_and_views(store, clock) -> None:
    store.capture(A, "decisions")
    store.check_duplicate(A, "decisions")
    store.check_duplicate(B, "decisions")
    store.check_duplicate(UNRELATED, "decisions")
    store.record_capture(SHORT, "patterns")
    store.check_duplicate(SHORT, "patterns")
    store.check_duplicate(A, "decisions", log_check=False)
    rows = store.con.execute("select namespace, result, reason, method, tiers_run, content_fingerprint "
                             "from dedup_checks order by id").fetchall()
    assert len(rows) == 5  # one per capture and per logged check (not the log_check=False one)
    assert rows[1][:4] == ("decisions", "duplicate", "exact_match", "hash")
    assert rows[2][:4] == ("decisions", "duplicate", "semantic_similar", "embedding")
    assert rows[3][:3] == ("decisions", "unique", None)
    assert rows[4][:4] == ("patterns", "duplicate", "recent_capture", "recent")
    assert all(len(r[5]) == 16 and A not in r[5] for r in rows)  # a fingerprint, never the content
    assert all(A not in str(r) for r in store.con.execute("select * from dedup_checks"))

    counts = dict(((n, r), c) for n, r, c in store.con.execute("select * from v_check_counts"))
    assert counts == {("decisions", "duplicate"): 2, ("decisions", "unique"): 2, ("patterns", "duplicate"): 1}
    skips = dict(((n, r), c) for n, r, c in store.con.execute("select * from v_skip_counts"))
    assert skips == {("decisions", "exact_match"): 1, ("decisions", "semantic_similar"): 1,
                     ("patterns", "recent_capture"): 1}
    durations = {r[0]: r for r in store.con.execute(
        "select tier, checks, mean_ms, p50_ms, p95_ms, max_ms from v_check_durations")}
    assert set(durations) == {"exact", "semantic", "recent", "total"}
    assert durations["total"][1] == 5 and durations["exact"][1] == 5
    for tier, checks, mean, p50, p95, top in durations.values():
        assert 0 <= p50 <= p95 <= top and mean >= 0, tier
    window = store.con.execute("select entries, window_secs, capacity, lookups, hits, hit_rate "
                               "from v_recent_window").fetchone()
    assert window[0] == 2 and window[1:3] == (300, 1000)
    assert window[4] == 1 and window[5] == pytest.approx(1 / window[3], abs=1e-4)
    stats = store.stats()
    assert stats["recent_window"]["entries"] == 2 and stats["checks"] and stats["skips"] and stats["durations"]


def test_decision_log_rows(store) -> None:
    first = store.capture(A, "decisions")
    store.capture(A, "decisions")
    store.capture(B, "decisions")
    rows = store.con.execute("select decision, memory_id, matched_memory_id, review_status from dedup_log "
                             "order by id").fetchall()
    assert rows == [("stored", first.memory_id, None, "confirmed"),
                    ("hash_exact", None, first.memory_id, "confirmed"),
                    ("semantic_skip", None, first.memory_id, "unreviewed")]


def test_hash_hit_keeps_new_tags_and_higher_importance(store) -> None:
    first = store.capture(A, "decisions", tags=["db"], importance=0.3)
    store.capture(A, "decisions", tags=["postgres", "db"], importance=0.8)
    memory = store.get(first.memory_id)
    assert memory.tags == ["db", "postgres"] and memory.importance == 0.8


# ---------------------------------------------------------------------------------------------- races

class CommitsBetweenTiers(Embedder):
    """The real model; the first time it embeds `text`, another connection captures `text` first, i.e. another
    process commits the same content after this check's exact tier ran and before its semantic tier."""

    def __init__(self, loaded: Embedder, text: str, other: Store):
        super().__init__(loaded.directory)
        self._session, self._tokenizer, self._input_names = loaded._session, loaded._tokenizer, loaded._input_names
        self.text, self.other, self.fired = text, other, False

    def embed_batch(self, texts):
        if self.text in texts and not self.fired:
            self.fired = True
            self.other.capture(self.text, "decisions")
        return super().embed_batch(texts)


def test_identical_text_committed_between_tiers(make_store, embedder, tmp_path: Path) -> None:
    other = make_store(path=tmp_path / "race.db")
    racer = CommitsBetweenTiers(embedder, A, other)
    store = make_store(path=tmp_path / "race.db", embedder_=racer)
    result = store.capture(A, "decisions")
    assert racer.fired
    assert count_rows(store, "memories") == 1  # stored once either way
    assert not result.stored
    assert result.decision == "hash_exact", (result.decision, result.check.reason, result.check.similarity_score)


# ---------------------------------------------------------------------------------------------- tiers fail open

class BreaksAtRuntime(Embedder):
    """The real model loads fine, then inference fails (e.g. onnxruntime out of memory) for every text."""

    def __init__(self, loaded: Embedder):
        super().__init__(loaded.directory)
        self._session, self._tokenizer, self._input_names = loaded._session, loaded._tokenizer, loaded._input_names

    def embed_batch(self, texts):
        raise RuntimeError("inference failed")


def test_semantic_tier_error_fails_open(make_store, embedder, tmp_path: Path) -> None:
    healthy = make_store(path=tmp_path / "m.db")
    healthy.capture(A, "decisions")
    store = make_store(path=tmp_path / "m.db", embedder_=BreaksAtRuntime(embedder))
    store.record_capture(B, "decisions")
    result = store.check_duplicate(B, "decisions")
    assert result.tier_errors == {"semantic": "RuntimeError: inference failed"}
    assert result.tiers_run == ["exact", "semantic", "recent"]
    assert result.reason == "recent_capture"  # the next tier still ran
    captured = store.capture(UNRELATED, "decisions")
    assert captured.stored and any("not embedded" in w for w in captured.warnings)
    logged = store.con.execute("select tier_errors from dedup_checks order by id desc limit 1").fetchone()[0]
    assert "inference failed" in logged
    assert not {f.check: f.ok for f in diagnose(store.con)}["active_memory_has_vector"]


def test_exact_hit_never_loads_the_model(make_store, tmp_path: Path) -> None:
    make_store(path=tmp_path / "m.db").capture(A, "decisions")
    fresh = Embedder()  # not loaded
    store = make_store(path=tmp_path / "m.db", embedder_=fresh)
    assert store.check_duplicate("  " + A.lower(), "decisions").reason == "exact_match"
    assert not store.capture(A, "decisions").stored
    assert not fresh.loaded


@pytest.mark.sqlite_only("apsw's exec trace")
def test_identical_text_committed_between_semantic_and_recent_tiers(make_store, tmp_path: Path) -> None:
    """Another process commits the same (short) text after this check's exact tier and before its recent tier.

    An apsw exec trace on the real connection runs the other capture just before the recent-tier query."""
    other = make_store(path=tmp_path / "race.db")
    store = make_store(path=tmp_path / "race.db")
    fired = []

    def tracer(cursor, sql, bindings):
        if not fired and "from recent_captures" in sql and "content_hash = :content_hash" in sql:
            fired.append(other.capture(SHORT, "decisions").memory_id)
        return True

    store.con.exec_trace = tracer
    result = store.capture(SHORT, "decisions")
    store.con.exec_trace = None
    assert fired
    assert count_rows(store, "memories") == 1  # stored once either way
    assert not result.stored and result.memory_id == fired[0]
    assert result.decision == "hash_exact", (result.decision, result.check.reason)
