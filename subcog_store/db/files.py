"""Which file a path names (device and inode), and whether that file was found damaged.

A long-lived process compares `file_id(path)` with the one it opened (one stat per call) to notice a file
deleted or replaced under it. A file found damaged is never written again until it is repaired or replaced:
whoever meets an error that points to corruption (SQLITE_CORRUPT, a vector blob that cannot be read, `doctor`'s
integrity check failing) records it beside the database (`<db>-damaged`: which file, by device and inode, when,
and the error); from then on every write transaction on that file refuses with `DatabaseDamaged` (exit 8),
which names `doctor` and the recovery path (`salvage`). Reads go on as far as they can. The record belongs to
that one file: a file restored or replaced at the path is not refused, and `doctor` clears the record once the
file passes its integrity check again.
"""
from __future__ import annotations

import json
import logging
import os
import time
from functools import lru_cache
from pathlib import Path

from subcog_store.config import is_postgres
from subcog_store.errors import DatabaseDamaged, points_to_corruption

log = logging.getLogger("subcog_store.damage")


def file_id(path: str | os.PathLike) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, None when there is none: which file a path names right now."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def marker_path(db: str | os.PathLike) -> Path | None:
    """`<db>-damaged`; None for a store that is no file (in memory, on PostgreSQL: the server keeps its own)."""
    marker = _marker(str(db))
    return None if marker is None else Path(marker)


@lru_cache(maxsize=64)
def _marker(db: str) -> str | None:
    # Cached by the database's name: every write transaction asks (`damaged`), and building the Path each time
    # cost several times the stat itself.
    return None if db in ("", ":memory:") or is_postgres(db) else f"{db}-damaged"


def note_damage(db: str | os.PathLike, error: BaseException) -> DatabaseDamaged | None:
    """When `error` points to corruption: record the file as damaged and return the error to raise instead."""
    if not points_to_corruption(error):
        return None
    detail = f"{type(error).__name__}: {error}"[:300]
    record_damage(db, detail)
    return refusal(db, detail)


def record_damage(db: str | os.PathLike, detail: str) -> None:
    """Record the file now at `db` as damaged (atomically; best effort: an unwritable directory only loses it)."""
    path, owner = marker_path(db), file_id(db)
    if path is None or owner is None:
        return
    if damaged(db) is None:
        log.info("%s: damaged (%s): writes to it stop; run `subcog-store doctor`", db, detail)
    tmp = Path(f"{path}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps({"file": list(owner), "at": time.time(), "error": detail}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        log.warning("%s: could not record the damage: %s", db, e.strerror)
        tmp.unlink(missing_ok=True)


def damaged(db: str | os.PathLike) -> str | None:
    """The recorded error when the file now at `db` was found damaged, else None (one stat when there is none)."""
    marker = _marker(str(db))
    if marker is None:
        return None
    if not os.access(marker, os.F_OK, follow_symlinks=False):
        return None   # the usual answer, no record: lstat's test without the cost of its FileNotFoundError
    try:
        with open(marker, encoding="utf-8") as f:
            data = json.loads(f.read())
        owner = (int(data["file"][0]), int(data["file"][1]))
        detail = str(data["error"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return "recorded as damaged"   # a record we cannot read: refuse rather than write into a bad file
    return detail if owner == file_id(db) else None


def clear_damage(db: str | os.PathLike) -> bool:
    """`doctor` found the file sound: writes may go on (True when there was a record)."""
    path = marker_path(db)
    if path is None or not path.exists():
        return False
    path.unlink(missing_ok=True)
    log.warning("%s: passes its integrity check again: writes resume", db)
    return True


def refusal(db: str | os.PathLike, detail: str) -> DatabaseDamaged:
    return DatabaseDamaged(
        f"{db}: the database file is damaged ({detail}); nothing more is written to it. `subcog-store doctor` "
        f"shows what is wrong; `subcog-store --db {db} salvage > memories.jsonl` saves every memory that can "
        f"still be read, and `subcog-store --db NEW.db capture --jsonl < memories.jsonl` puts them in a new store")


def check_writable(db: str | os.PathLike) -> None:
    """Raise DatabaseDamaged when the file now at `db` was found damaged (every write transaction asks)."""
    detail = damaged(db)
    if detail is not None:
        raise refusal(db, detail)
