"""Bookkeeping that never costs an answer: the writes a recall hook makes after it has answered (its recall_log
row, the compaction it saw, the report it delivered) wait for another process's write lock only briefly; when the
lock stays taken they are kept in a spool file beside the database (`<db>-deferred.jsonl`, one JSON object a
line, fingerprints and ids only, never content) and written by the next hook that gets the lock.

Until then the spooled rows count as written for the session they belong to (`spooled`): a memory handed over
while the store was locked is not handed over again, and the session's token budget sees its tokens. Each line
names the database file it belongs to (device and inode): a spool left beside a file that was deleted or
replaced since is never applied to the new one. Written rows are guarded against a second application (a
process killed between the commit and the spool's truncation).
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import apsw

from subcog_store.config import is_postgres
from subcog_store.db import locks
from subcog_store.db.connection import immediate
from subcog_store.db.files import file_id
from subcog_store.db.sqlfiles import q
from subcog_store.errors import DatabaseDamaged

log = logging.getLogger("subcog_store.deferred")
# what may be deferred -> the statement that applies a spooled row (each safe to apply twice)
DEFERRABLE = {"log_recall": "log_recall_once", "record_compaction": "record_compaction",
              "mark_hook_run_delivered": "mark_hook_run_delivered"}
MAX_SPOOL_BYTES = 4 << 20     # a store locked for days: older bookkeeping is dropped past this (logged)
SPOOL_LOCK_SECS = 0.05        # how long an append waits for a flush in progress


@dataclass
class Write:
    name: str
    params: dict


def report_delivered(session_id: str, run_id: int, now: str) -> Write:
    """The write that marks a session's capture reports up to `run_id` delivered."""
    return Write("mark_hook_run_delivered", {"session_id": session_id, "now": now, "upto": run_id})


def write_now(con: apsw.Connection, writes: list[Write]) -> None:
    """Write `writes` in the caller's write transaction."""
    for w in writes:
        con.execute(q(w.name), w.params)


def spool_path(db: str | os.PathLike) -> Path | None:
    """The spool beside the database (None for an in-memory one, and for PostgreSQL: its writers do not hold
    up a reader, and a row it cannot write at once is dropped, with a line in the log)."""
    return None if str(db) in ("", ":memory:") or is_postgres(db) else Path(f"{db}-deferred.jsonl")


def write_or_defer(con: apsw.Connection, db: str | os.PathLike, writes: list[Write], wait_secs: float) -> str:
    """Write `writes` (and any spooled ones) in one transaction, waiting at most `wait_secs` for the lock;
    when it stays taken, spool them. Returns "written", "deferred" or "dropped" (nothing could keep them)."""
    locks.at_most(con, wait_secs)
    claim = None
    try:
        with immediate(con):
            claim = _Claim.take(db)
            if claim is not None:
                claim.apply(con, db)
            for w in writes:
                con.execute(q(w.name), w.params)
        if claim is not None:
            claim.done()
        return "written"
    except apsw.BusyError:
        pass
    except DatabaseDamaged as e:   # never written again: the answer stands, the reason is in the log already
        log.warning("bookkeeping not written: %s", str(e).split(";")[0])
        return "dropped"
    finally:
        locks.default(con)
        if claim is not None:
            claim.release()
    if _append(db, writes):
        log.info("store busy: %d bookkeeping row(s) deferred to the next hook", len(writes))
        return "deferred"
    return "dropped"


def spooled(db: str | os.PathLike, session_id: str | None) -> list[Write]:
    """The spooled writes of `session_id` for the file now at `db` (not yet in the database)."""
    path = spool_path(db)
    if not session_id or path is None or not path.exists():
        return []
    me = file_id(db)
    return [w for w, owner in _read(path) if owner == me and w.params.get("session_id") == session_id]


class _Claim:
    """The spool, locked by the hook writing it into the database: removed once that transaction committed,
    left in place when it did not."""

    def __init__(self, fd: int, path: Path, rows: list):
        self.fd, self.path, self.rows = fd, path, rows

    @classmethod
    def take(cls, db: str | os.PathLike) -> "_Claim | None":
        path = spool_path(db)
        if path is None or not path.exists():
            return None
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:   # not flushed and removed meanwhile
                with os.fdopen(os.dup(fd), "rb") as f:
                    return cls(fd, path, _parse(f.read(MAX_SPOOL_BYTES + 1)))
        except OSError:
            pass   # in use (another hook is flushing or appending), or gone: left to the next hook
        os.close(fd)
        return None

    def apply(self, con: apsw.Connection, db: str | os.PathLike) -> None:
        me = file_id(db)
        for w, owner in self.rows:
            if owner != me:
                continue
            try:
                con.execute(q(DEFERRABLE[w.name]), w.params)
            except (apsw.ConstraintError, apsw.BindingsError, apsw.SQLError) as e:   # a row made by hand
                log.warning("a deferred %s row not written: %s", w.name, e)
        log.info("%d deferred bookkeeping row(s) written", len(self.rows))

    def done(self) -> None:
        """Committed: the spool goes (under the lock: an appender that opened it before finds it gone)."""
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _append(db: str | os.PathLike, writes: list[Write]) -> bool:
    path = spool_path(db)
    owner = file_id(db)
    if path is None or owner is None:
        return False
    data = "".join(json.dumps({"q": w.name, "p": w.params, "file": list(owner)}) + "\n" for w in writes).encode()
    deadline = time.monotonic() + SPOOL_LOCK_SECS
    try:
        while True:
            fd = _locked_spool(path)
            if fd is not None:
                break
            if time.monotonic() > deadline:
                log.warning("bookkeeping not deferred: the spool is in use")
                return False
            time.sleep(0.002)
        try:
            if os.fstat(fd).st_size + len(data) > MAX_SPOOL_BYTES:
                log.warning("bookkeeping not deferred: the spool is full (%d bytes)", MAX_SPOOL_BYTES)
                return False
            os.write(fd, data)
            return True
        finally:
            os.close(fd)
    except OSError as e:
        log.warning("bookkeeping not deferred: %s", e.strerror)
        return False


def _locked_spool(path: Path) -> int | None:
    """The spool opened for appending and locked, or None while a flush holds it (or just removed it)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino == os.stat(path).st_ino:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _read(path: Path) -> list[tuple[Write, tuple[int, int] | None]]:
    try:
        with open(path, "rb") as f:
            return _parse(f.read(MAX_SPOOL_BYTES + 1))
    except OSError:
        return []


def _parse(data: bytes) -> list[tuple[Write, tuple[int, int] | None]]:
    """The spool's lines as (write, file id); a line that does not parse is skipped (a torn last line)."""
    out = []
    for raw in data.splitlines():
        try:
            item = json.loads(raw)
            name, params, owner = item["q"], item["p"], item["file"]
            if name in DEFERRABLE and isinstance(params, dict):
                out.append((Write(name, params), (int(owner[0]), int(owner[1]))))
        except (ValueError, KeyError, TypeError, IndexError):
            continue
    return out
