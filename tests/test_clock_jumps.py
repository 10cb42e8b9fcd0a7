"""Issue 29, item 4: a clock that jumps. The recent window ignores rows stamped in the future (and says so in the
log), and the capacity prune keeps the newest rows by insertion order, not by a clock that can go back."""
from __future__ import annotations

import logging

from subcog_store.text.normalize import content_hash

X = "We decided to run the database migrations from the deploy job, never from the application at start-up."
MINUTE, HOUR = 60.0, 3600.0


def recent_hashes(store) -> list[str]:
    return [r[0] for r in store.con.execute("select content_hash from recent_captures order by id")]


def test_a_clock_that_went_back_does_not_refuse_a_capture(store, clock, caplog):
    first = store.capture(X, "decisions")
    clock.advance(15 * MINUTE)
    store.forget(first.memory_id)
    clock.advance(-HOUR)                       # NTP, a laptop's suspend, a VM restored from a snapshot
    with caplog.at_level(logging.WARNING, logger="subcog_store"):
        again = store.capture(X, "decisions")
    assert again.stored and again.decision == "stored", again.to_dict()
    assert "stamped in the future" in caplog.text
    assert content_hash(X)[:16] in caplog.text and X not in caplog.text


def test_a_row_within_the_window_is_still_recent(store, clock):
    store.record_capture(X, "decisions")
    clock.advance(2 * MINUTE)
    check = store.check_duplicate(X, "decisions")
    assert check.is_duplicate and check.reason == "recent_capture" and check.captured_seconds_ago == 120


def test_pruning_keeps_the_newest_by_insertion_order(make_store, clock):
    store = make_store(dedup_cache_capacity=3)
    texts = [f"{X} (service {name})" for name in ("auth", "billing", "catalog", "delivery", "email")]
    for text in texts[:3]:
        store.record_capture(text, "decisions")
        clock.advance(1)
    clock.advance(-2 * MINUTE)                 # back, by less than the window
    for text in texts[3:]:
        store.record_capture(text, "decisions")
        clock.advance(1)
    assert recent_hashes(store) == [content_hash(t) for t in texts[2:]]
    assert store.check_duplicate(texts[4], "decisions").reason == "recent_capture"


def test_rows_stamped_a_window_ahead_are_pruned(make_store, clock):
    store = make_store(dedup_time_window_secs=300)
    store.record_capture(X, "decisions")
    clock.advance(-HOUR)
    store.record_capture(f"{X} (again)", "decisions")
    assert recent_hashes(store) == [content_hash(f"{X} (again)")]
