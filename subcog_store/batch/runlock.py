"""One `dedup` run at a time, and a killed run's 'running' row marked interrupted by whoever opens the store next.

A run holds an exclusive `flock` on `<db>.dedup-lock` from before its `dedup_runs` row is written until it ends; the
kernel drops the lock when the process dies, even by SIGKILL. So a 'running' row whose lock is free belongs to a
dead run. (A sidecar file, not the database: SQLite's own locks must not meet ours.)
"""
from __future__ import annotations

import fcntl
import logging
import os
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from subcog_store.db import batch_runs, locks
from subcog_store.db.connection import Error as DbError, immediate
from subcog_store.errors import DatabaseError

if TYPE_CHECKING:
    from subcog_store.core import Core

log = logging.getLogger("subcog_store.batch")
LOCK_TRIES = 20   # 1 s


def lock_path(store: "Core") -> str | None:
    return None if store.path == ":memory:" else store.path + ".dedup-lock"


def _try_lock(path: str) -> int | None:
    """The locked file descriptor, or None when another process holds the lock."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _release(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


@contextmanager
def run_lock(store: "Core") -> Iterator[None]:
    """Held for a whole `dedup` run; raises DatabaseError when another run holds it."""
    path = lock_path(store)
    if path is None:
        yield
        return
    fd = None
    for _ in range(LOCK_TRIES):   # another process may hold it for a moment to mark a dead run
        try:
            fd = _try_lock(path)
        except OSError as e:
            raise DatabaseError(f"{path}: cannot create the batch run lock: {e.strerror or e}") from None
        if fd is not None:
            break
        time.sleep(0.05)
    if fd is None:
        raise DatabaseError(f"{store.path}: another `subcog-store dedup` is running on this database; "
                            "try again when it has finished")
    try:
        yield
    finally:
        _release(fd)


def reap_stale_runs(store: "Core") -> int:
    """Mark 'running' rows of killed runs interrupted; best effort (never raises). Returns the rows marked."""
    path = lock_path(store)
    try:
        if path is None or not batch_runs.running(store.con):
            return 0
        fd = _try_lock(path)
    except (OSError, DbError):
        return 0
    if fd is None:  # a live run holds it
        return 0
    try:
        with locks.best_effort(store.con), immediate(store.con):
            marked = batch_runs.mark_interrupted(store.con)
        return marked
    except DbError as e:
        log.warning("could not mark an interrupted batch run: %s", e)
        return 0
    finally:
        _release(fd)
