"""The warm worker's backlog, worked on while it has nothing else to do, so no hook pays for it: first the captures
a budget stopped early (a huge record on a busy machine), finished in turns from where they stopped
(capture/deferred.py), then the sessions' text a capture hook stored without vectors (capture/session_text.py).

A store is noted after a capture hook names it (and the first time any hook does: captures run in process before
the worker started leave texts waiting too). When the worker is idle, one thread works, only while no request runs
or waits. A capture turn writes memories, so it holds the run lock (a request's working directory and log set-up
are the process's) and gives way within a short step once a request waits. The embedding runs beside the run
lock, two texts at a time, and stops after the texts in hand as soon as a request arrives. A store with nothing
left to do (or that cannot be opened) leaves the backlog until a hook names it again.
"""
# Lazy imports: the worker listens before it loads the store and the model (server.py's preload).
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Callable

log = logging.getLogger("subcog_store.worker")
BATCH = 2                       # texts embedded between two looks at `free()` (about 300 word pieces each)
NOTED_EVENTS = ("pre-compact", "session-end", "post-compact")


class Backlog:
    """The stores that may hold session text waiting for vectors (by database path: the environment of the last
    hook that named it), and the one thread that embeds them."""

    def __init__(self) -> None:
        self.stores: dict[str, dict[str, str]] = {}
        self.seen: set[str] = set()
        self.guard = threading.Lock()
        self.thread: threading.Thread | None = None
        self.embedded = 0
        self.turns = 0                # capture turns taken on deferred captures
        self.capturing = False        # a turn holds the run lock now (a request queued behind it waits longer)

    def note(self, header: dict) -> None:
        """After a hook request: the store it named, if it may hold texts waiting for vectors."""
        env, event = header.get("env"), header.get("event")
        if not isinstance(env, dict) or header.get("dry_run"):
            return
        path = _db_file(header.get("db"), env, header.get("cwd"))
        if path is None:
            return
        with self.guard:
            if event in NOTED_EVENTS or path not in self.seen:
                self.stores[path] = dict(env)
            self.seen.add(path)

    def start(self, run_lock: threading.Lock, free: Callable[[], bool]) -> bool:
        """Start embedding (a thread) if a store is noted and no such thread runs; `free()` says, before each
        batch, that no request waits. Returns whether a thread was started."""
        with self.guard:
            if not self.stores or (self.thread is not None and self.thread.is_alive()):
                return False
            self.thread = threading.Thread(target=self.drain, args=(run_lock, free), name="subcog-backlog",
                                           daemon=True)
        self.thread.start()
        return True

    def wait(self, secs: float) -> None:
        """Let the embedding thread finish its batch (it stops once `free()` says no), at most `secs`."""
        thread = self.thread
        if thread is not None and thread.is_alive():
            thread.join(secs)

    def drain(self, run_lock: threading.Lock, free: Callable[[], bool]) -> None:
        """Embed the noted stores' waiting texts until all are done or a request wants the worker."""
        while free():
            with self.guard:
                if not self.stores:
                    return
                path, env = next(iter(self.stores.items()))
            finished = self._drain_store(path, env, run_lock, free)
            if not finished:
                return
            with self.guard:
                if self.stores.get(path) is env:
                    del self.stores[path]

    def _drain_store(self, path: str, env: dict[str, str], run_lock: threading.Lock,
                     free: Callable[[], bool]) -> bool:
        """Embed one store's waiting texts, BATCH at a time while `free()`; True once none waits (or the store
        cannot be used), False when it gave way to a request. The store is opened under the run lock (what a
        hook's store opening touches stays one at a time); the embedding runs beside it, so a hook never waits
        for it (the ONNX session and the tokenizer run from any thread)."""
        from subcog_store.capture.session_text import embed_waiting
        from subcog_store.model import provider
        from subcog_store.store import Store

        if not self._finish_captures(path, env, run_lock, free):
            return False
        store = None
        try:
            if not run_lock.acquire(blocking=False):
                return False
            try:
                if not Path(path).exists():
                    return True
                store = Store(path, environ=env, embedders=provider.SHARED, fetch_model=False)
                if not store.settings.session_text_enabled:
                    return True
            finally:
                run_lock.release()
            while free():
                turns = iter([True])
                done = embed_waiting(store.core, lambda: next(turns, False), BATCH)
                self.embedded += done
                if done == 0:
                    return True
            return False
        except Exception as e:  # noqa: BLE001 - the texts stay findable by their words; a later hook notes it again
            log.info("worker %d: session text not embedded: %s: %s", os.getpid(), type(e).__name__, e)
            return True
        finally:
            if store is not None:
                store.close()


    def _finish_captures(self, path: str, env: dict[str, str], run_lock: threading.Lock,
                         free: Callable[[], bool]) -> bool:
        """Take turns on the store's deferred captures (capture/deferred.py), each under the run lock, while
        `free()`; True once no turn has more to do, False when it gave way to a request."""
        from subcog_store.capture.deferred import finish_turn

        while free():
            if not run_lock.acquire(blocking=False):
                return False
            self.capturing = True
            try:
                if not Path(path).exists():
                    return True
                more = finish_turn(path, env, wanted=lambda: not free())
            except Exception as e:  # noqa: BLE001 - the next capture hook on the store goes on with it
                log.info("worker %d: deferred capture not finished: %s: %s", os.getpid(), type(e).__name__, e)
                return True
            finally:
                self.capturing = False
                run_lock.release()
            self.turns += 1
            if not more:
                return True
        return False


def _db_file(db: object, env: dict[str, str], cwd: object) -> str | None:
    """The SQLite file a hook request names (its --db, else its environment's SUBCOG_DB or the default), as an
    absolute path; None for a PostgreSQL store (its sessions' text is not kept) or what cannot be resolved."""
    from subcog_store.config import db_path, db_target

    try:
        target = db_target(db) if isinstance(db, str) and db else db_path(env)
    except Exception:  # noqa: BLE001 - a setting the hook itself reported
        return None
    if not isinstance(target, Path):
        return None
    if not target.is_absolute():
        if not isinstance(cwd, str):
            return None
        target = Path(cwd) / target
    return str(target)
