"""Verifier and merger as real scripted commands (tests/plugins/*.py): success, garbage output, non-zero exit,
timeout; what the command receives on stdin; the fallbacks; and what the decision log keeps of it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from subcog_store.dedup import plugins
from subcog_store.clock import iso
from subcog_store.doctor import diagnose
from subcog_store.store import Store
from policy_texts import NS, NEAR, GRAY, MERGEABLE, FAR, cmd

TIMEOUT = 3.0        # the sleeping plugins' timeout: they sleep 30 s, so they are cut off whatever the load
START_BOUND = 120.0  # the other plugins': a cold Python start on a busy machine never reaches it


def assert_doctor(store: Store) -> None:
    bad = [f for f in diagnose(store.con) if not f.ok]
    assert not bad, bad


LOG_COLUMNS = ("id", "policy", "decision", "new_content", "matched_memory_id", "matched_content", "similarity",
               "memory_id", "reasoning", "review_status")


def last_log(store: Store) -> dict:
    row = store.con.execute(f"select {', '.join(LOG_COLUMNS)} from dedup_log order by id desc limit 1").fetchone()
    return dict(zip(LOG_COLUMNS, row))


@pytest.fixture
def record(tmp_path: Path, monkeypatch) -> Path:
    """The file the scripted command writes its stdin to."""
    path = tmp_path / "stdin.json"
    monkeypatch.setenv("SUBCOG_TEST_PLUGIN_RECORD", str(path))
    return path


@pytest.fixture
def open_store(tmp_path: Path, embedder, clock):
    opened: list[Store] = []

    def make(**settings: object) -> Store:
        environ = {"SUBCOG_PLUGIN_TIMEOUT_SECS": str(START_BOUND)}
        environ.update({"SUBCOG_" + k.upper(): str(v) for k, v in settings.items()})
        store = Store(tmp_path / f"p{len(opened)}.db", embedder=embedder, clock=clock, environ=environ)
        opened.append(store)
        return store
    yield make
    for store in opened:
        store.close()


def capture_pair(store: Store, pair: tuple[str, str], policy: str, clock=None, domain: str | None = None, **kw):
    first = store.capture(pair[0], NS, domain, policy=policy, importance=0.9, tags=["db"])
    assert_doctor(store)
    if clock is not None:
        clock.advance(3600)
    second = store.capture(pair[1], NS, domain, policy=policy, **kw)
    assert_doctor(store)
    return first, second


# ------------------------------------------------------------------------------------------------ verifier

@pytest.mark.parametrize("mode,decision,stored", [("duplicate", "verifier_reject", False),
                                                   ("keep", "verifier_keep", True)])
def test_verifier_decides_the_gray_zone(open_store, record, clock, mode, decision, stored) -> None:
    store = open_store(verify_cmd=cmd("verifier.py", mode))
    first, second = capture_pair(store, GRAY, "verify", clock)
    sim = second.check.neighbours[0].similarity
    assert 0.88 <= sim < 0.98
    assert second.decision == decision and second.stored == stored
    assert second.reasoning.startswith("scripted:")
    contents = {m.content for m in store.memories()}
    assert contents == ({GRAY[0], GRAY[1]} if stored else {GRAY[0]})
    row = last_log(store)
    assert (row["policy"], row["decision"], row["reasoning"]) == ("verify", decision, second.reasoning)
    assert row["matched_memory_id"] == first.memory_id and row["similarity"] == sim
    assert row["review_status"] == "unreviewed"
    # what the command received on stdin
    request = json.loads(record.read_text())
    assert request["task"] == "verify" and request["namespace"] == NS
    assert request["similarity"] == round(sim, 4)
    assert request["older"] == {"content": GRAY[0], "created_at": store.get(first.memory_id).created_at}
    assert request["newer"] == {"content": GRAY[1], "created_at": iso(clock.now)}
    assert request["older"]["created_at"] < request["newer"]["created_at"]
    if mode == "duplicate":
        assert f"{round(sim, 4)}" in second.reasoning
    # the stock views show the verifier's words
    assert store.con.execute("select reasoning from v_decisions where id = ?", (row["id"],)).fetchone()[0] == \
        second.reasoning


FAILURES = [
    ("garbage", "keep", "stdout is not JSON"),
    ("exit3", "reject", "exited 3"),
    ("sleep", "keep", f"timed out after {TIMEOUT:g} s"),
    ("sleep", "reject", "timed out"),
    ("nobool", "reject", 'lacks a boolean "duplicate"'),
    ("list", "keep", "not a JSON object"),
]


@pytest.mark.parametrize("mode,fallback,why", FAILURES, ids=[f"{m}-{f}" for m, f, _ in FAILURES])
def test_failing_verifier_falls_back(open_store, record, mode, fallback, why) -> None:
    store = open_store(verify_cmd=cmd("verifier.py", mode), verify_fallback=fallback,
                       plugin_timeout_secs=TIMEOUT if mode == "sleep" else START_BOUND)
    _, second = capture_pair(store, GRAY, "verify")   # the 30 s sleeper: cut off ("timed out after 3 s")
    assert record.exists()  # it was really run
    assert second.decision == f"fallback_{fallback}" and second.stored == (fallback == "keep")
    assert why in second.reasoning and second.reasoning.startswith("verifier ")
    row = last_log(store)
    assert row["decision"] == f"fallback_{fallback}" and why in row["reasoning"]
    assert len(store.memories()) == (2 if fallback == "keep" else 1)


def test_missing_verifier_command_falls_back(open_store, tmp_path: Path) -> None:
    store = open_store(verify_cmd=str(tmp_path / "no-such-verifier"), verify_fallback="reject")
    _, second = capture_pair(store, GRAY, "verify")
    assert second.decision == "fallback_reject" and "could not run" in second.reasoning


def test_verifier_only_asked_in_the_gray_zone(open_store, record) -> None:
    store = open_store(verify_cmd=cmd("verifier.py", "duplicate"))
    _, second = capture_pair(store, NEAR, "verify", domain="near")
    assert second.decision == "auto_reject" and not record.exists()
    _, second = capture_pair(store, FAR, "verify", domain="far")
    assert second.decision == "stored" and not record.exists()
    _, second = capture_pair(store, GRAY, "verify", domain="gray")
    assert second.decision == "verifier_reject" and record.exists()


def test_run_command_directly() -> None:
    pair = plugins.Pair("old text", "new text", "2027-01-01T00:00:00.000Z", None, 0.91234567, "patterns")
    assert plugins.verify(cmd("verifier.py", "keep"), pair, 5) == (False,
                                                                   "scripted: the newer text adds information")
    duplicate, reasoning = plugins.verify(cmd("verifier.py", "duplicate"), pair, 5)
    assert duplicate is True and "0.9123" in reasoning
    assert plugins.merge(cmd("merger.py", "ok"), pair, 5) == "MERGED: new text + old text"
    assert plugins.merge(None, pair, 5) == plugins.builtin_merge("old text", "new text")
    with pytest.raises(plugins.PluginError, match="timed out"):
        plugins.verify(cmd("verifier.py", "sleep"), pair, 0.3)
    with pytest.raises(plugins.PluginError, match="exited 3"):
        plugins.merge(cmd("merger.py", "exit3"), pair, 5)
    with pytest.raises(plugins.PluginError, match='string "content"'):
        plugins.merge(cmd("merger.py", "nocontent"), pair, 5)
    payload = pair.payload("merge")
    assert payload["similarity"] == 0.9123 and payload["prompt"] == plugins.MERGE_PROMPT
    assert "prompt" not in pair.payload("verify")


# -------------------------------------------------------------------------------------------------- merger

@pytest.mark.parametrize("policy,pair", [("merge", GRAY), ("replace", MERGEABLE)])
def test_merger_command_produces_the_merged_memory(open_store, record, clock, policy, pair) -> None:
    store = open_store(merge_cmd=cmd("merger.py", "ok"))
    first, second = capture_pair(store, pair, policy, clock, importance=0.3, tags=["new"], source="s2")
    sim = second.check.neighbours[0].similarity
    assert 0.90 <= sim < (0.95 if policy == "replace" else 2)
    expected = f"MERGED: {pair[1]} + {pair[0]}"
    assert second.decision == "merged" and second.reasoning == "merged by SUBCOG_MERGE_CMD"
    merged = store.get(second.memory_id)
    assert merged.content == expected
    assert (merged.importance, merged.tags, merged.source) == (0.9, ["db", "new"], "s2")
    old = store.get(first.memory_id)
    assert old.status == "merged" and old.successor_id == merged.id
    assert [m.content for m in store.memories()] == [expected]
    request = json.loads(record.read_text())
    assert request["task"] == "merge" and request["namespace"] == NS and request["prompt"]
    assert request["similarity"] == round(sim, 4)
    assert request["older"] == {"content": pair[0], "created_at": old.created_at}
    assert request["newer"] == {"content": pair[1], "created_at": iso(clock.now)}
    row = last_log(store)
    assert (row["decision"], row["new_content"], row["memory_id"]) == ("merged", pair[1], merged.id)


MERGE_FAILURES = [
    ("empty", "merger returned nothing; replaced instead", "empty result"),
    ("blank", "merger returned nothing; replaced instead", "empty result"),
    ("garbage", "stdout is not JSON", "merger failed"),
    ("nocontent", 'lacks a string "content"', "merger failed"),
    ("exit3", "exited 3", "merger failed"),
    ("sleep", "timed out", "merger failed"),
]


@pytest.mark.parametrize("mode,why,warning", MERGE_FAILURES, ids=[m for m, _, _ in MERGE_FAILURES])
def test_failing_or_empty_merger_falls_back_to_replace(open_store, record, mode, why, warning) -> None:
    store = open_store(merge_cmd=cmd("merger.py", mode),
                       plugin_timeout_secs=TIMEOUT if mode == "sleep" else START_BOUND)
    first, second = capture_pair(store, GRAY, "merge")   # the 30 s sleeper: cut off ("timed out")
    assert record.exists()
    assert second.decision == "replaced" and second.stored and second.retired == [first.memory_id]
    assert why in second.reasoning and "replaced instead" in second.reasoning
    assert any(warning in w for w in second.warnings), second.warnings
    assert store.get(second.memory_id).content == GRAY[1]  # the newer text, not an empty or garbage one
    old = store.get(first.memory_id)
    assert old.status == "superseded" and old.successor_id == second.memory_id
    assert [m.content for m in store.memories()] == [GRAY[1]]
    row = last_log(store)
    assert row["decision"] == "replaced" and why in row["reasoning"] and row["policy"] == "merge"


def test_merger_not_asked_in_the_replace_zone(open_store, record) -> None:
    store = open_store(merge_cmd=cmd("merger.py", "ok"))
    _, second = capture_pair(store, NEAR, "replace")
    assert second.decision == "replaced" and not record.exists()
