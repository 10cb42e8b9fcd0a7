"""The warm worker's backlog (worker/backlog.py): the sessions' text a capture stored without vectors is embedded
between requests, a few texts at a time beside the run lock, giving way to any request that wants the worker."""
from __future__ import annotations

import threading

import pytest

from subcog_store.capture.session_text import keep_session_text, waiting
from subcog_store.extraction.transcript import AssistantText
from subcog_store.store import Store
from subcog_store.worker import backlog as backlog_module
from subcog_store.worker.backlog import Backlog


@pytest.fixture
def db(tmp_path):
    """A store holding 20 session texts, none embedded yet (as a capture hook leaves them)."""
    path = tmp_path / "m.db"
    with Store(path) as store:
        texts = [AssistantText(f"Turn {i}: the export job number {i} streams its archive to disk in chunks of {i} MB.",
                               f"u{i}", None, "sess", i, False, kind="user") for i in range(20)]
        assert keep_session_text(store.core, "shop", "sess", texts) == 20
    return path


def noted(db) -> Backlog:
    b = Backlog()
    b.note({"event": "session-end", "env": {"SUBCOG_DB": str(db)}, "cwd": "/"})
    return b


def left(db) -> int:
    with Store(db) as store:
        return waiting(store.core)


def test_it_embeds_every_waiting_text_when_nothing_else_wants_the_worker(db):
    b, lock = noted(db), threading.Lock()
    b.drain(lock, lambda: True)
    assert left(db) == 0 and b.embedded == 20 and b.stores == {}   # done: the store leaves the backlog
    assert not lock.locked()


def test_it_gives_way_after_one_batch_when_a_request_waits(db):
    b, lock = noted(db), threading.Lock()
    b.drain(lock, lambda: b.embedded == 0)     # free until the first batch is embedded, then a request arrives
    assert b.embedded == backlog_module.BATCH and left(db) == 20 - backlog_module.BATCH
    assert list(b.stores) == [str(db)] and not lock.locked()        # still noted: the next idle moment goes on


def test_it_embeds_nothing_while_a_request_holds_the_run_lock(db):   # (its store is opened under it)
    b, lock = noted(db), threading.Lock()
    with lock:
        b.drain(lock, lambda: True)
    assert b.embedded == 0 and left(db) == 20 and list(b.stores) == [str(db)]


def test_a_recall_hook_notes_a_store_once_a_capture_hook_every_time(db, tmp_path):
    b = Backlog()
    env = {"SUBCOG_DB": str(db)}
    b.note({"event": "user-prompt-submit", "env": env})
    assert list(b.stores) == [str(db)]          # first seen: texts captured in process may wait there
    b.stores.clear()
    b.note({"event": "user-prompt-submit", "env": env})
    assert b.stores == {}                       # seen before: a prompt adds no text
    b.note({"event": "pre-compact", "env": env})
    assert list(b.stores) == [str(db)]
    b.note({"event": "pre-compact", "env": {"SUBCOG_DB": "postgresql://db.example/team"}})
    b.note({"event": "pre-compact", "env": env, "dry_run": True})
    b.note({"event": "pre-compact", "env": {"SUBCOG_DB": "relative.db"}, "cwd": str(tmp_path)})
    assert sorted(b.stores) == sorted([str(db), str(tmp_path / "relative.db")])   # never a PostgreSQL store


def test_a_store_that_is_gone_leaves_the_backlog(tmp_path):
    b, lock = noted(tmp_path / "gone.db"), threading.Lock()
    b.drain(lock, lambda: True)
    assert b.stores == {} and b.embedded == 0 and not (tmp_path / "gone.db").exists()
