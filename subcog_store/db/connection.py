"""Opening a subcog-store database: the apsw connection, its SQL functions, sqlite-vec, and migrations."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import apsw

from subcog_store.errors import DatabaseError, NotASubcogDatabase
from subcog_store.text.normalize import content_hash
from subcog_store.db.sqlfiles import migrations

APPLICATION_ID = 0x53554243  # "SUBC"
BUSY_TIMEOUT_MS = 10_000
MMAP_BYTES = 1 << 30


def vec0_path() -> str:
    """Path of sqlite-vec's loadable extension (what the stock shell's `.load` takes).

    Found without importing the `sqlite_vec` package, whose import pulls in numpy (~0.25 s of cold start).
    """
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError("sqlite-vec is not installed")
    return str(Path(next(iter(spec.submodule_search_locations))) / "vec0")


def _register(con: apsw.Connection) -> None:
    flags = getattr(apsw, "SQLITE_INNOCUOUS", 0)
    con.create_scalar_function("subcog_content_hash", content_hash, 1, deterministic=True, flags=flags)
    con.enable_load_extension(True)
    con.load_extension(vec0_path())
    con.enable_load_extension(False)


def _describe(path: str, error: Exception) -> str:
    parent = Path(path).parent
    if not parent.exists():
        return f"{path}: the directory {parent} does not exist"
    if isinstance(error, apsw.ReadOnlyError) or (Path(path).exists() and not os.access(path, os.W_OK)):
        return f"{path}: the database is read-only"
    if isinstance(error, apsw.BusyError):
        return f"{path}: the database is locked by another process (waited {BUSY_TIMEOUT_MS // 1000} s)"
    if isinstance(error, (apsw.NotADBError, apsw.CorruptError)):
        return f"{path}: the file is not a SQLite database or is corrupt"
    return f"{path}: {error}"


def connect(path: str | os.PathLike, *, readonly: bool = False, migrate: bool = True) -> apsw.Connection:
    """Open (creating if needed) a subcog-store database, check it is ours, and migrate it to the latest schema.

    A file that is not a subcog-store database raises NotASubcogDatabase and is left untouched.
    """
    path = str(path)
    if path != ":memory:" and not Path(path).parent.exists():
        raise DatabaseError(f"{path}: the directory {Path(path).parent} does not exist")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        con = apsw.Connection(path, flags=flags)
        con.setbusytimeout(BUSY_TIMEOUT_MS)
        _register(con)
        app_id = con.execute("pragma application_id").fetchone()[0]
        tables = con.execute("select count(*) from sqlite_master").fetchone()[0]
    except (apsw.NotADBError, apsw.CorruptError):
        raise NotASubcogDatabase(f"{path} is not a SQLite database, or is corrupt (left untouched)") from None
    except apsw.Error as e:
        raise DatabaseError(_describe(path, e)) from None
    if app_id != APPLICATION_ID and (app_id != 0 or tables != 0):
        con.close()
        raise NotASubcogDatabase(f"{path} is not a subcog-store database (left untouched)")
    try:
        con.execute("pragma foreign_keys = on")
        # Read vec0's vector chunks through a memory map, not the page cache: the KNN scans every vector of a
        # namespace, and mmap reads made it 1.2-1.7x faster (bench/RESULTS.md). Address space only.
        con.execute(f"pragma mmap_size = {MMAP_BYTES}")
        if not readonly:
            if path != ":memory:":
                con.execute("pragma journal_mode = wal")
            con.execute("pragma synchronous = normal")
            if migrate:
                migrate_to_latest(con)
    except apsw.Error as e:
        con.close()
        raise DatabaseError(_describe(path, e)) from None
    return con


def schema_version(con: apsw.Connection) -> int:
    return con.execute("pragma user_version").fetchone()[0]


def latest_version() -> int:
    return len(migrations())


def migrate_to_latest(con: apsw.Connection, target: int | None = None) -> list[str]:
    """Apply the missing migrations in one transaction; returns the names applied."""
    target = latest_version() if target is None else target
    if schema_version(con) >= target:
        if schema_version(con) > latest_version():
            raise DatabaseError(f"the database has schema version {schema_version(con)}, newer than this "
                                f"subcog-store knows ({latest_version()}): upgrade subcog-store")
        return []
    applied = []
    with immediate(con):
        current = schema_version(con)  # re-read under the write lock: another process may have migrated
        if current == 0:
            con.execute(f"pragma application_id = {APPLICATION_ID}")
            con.execute("create table schema_migrations (version integer primary key, name text not null, "
                        "applied_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))")
        for step in migrations():
            if current < step.version <= target:
                con.execute(step.sql)
                con.execute("insert into schema_migrations (version, name) values (?, ?)", (step.version, step.name))
                con.execute(f"pragma user_version = {step.version}")
                applied.append(step.name)
    return applied


@contextmanager
def immediate(con: apsw.Connection) -> Iterator[apsw.Connection]:
    """A write transaction that takes the write lock up front (BEGIN IMMEDIATE), so check-then-write is safe
    across processes; commits on success, rolls back on any exception."""
    con.execute("begin immediate")
    try:
        yield con
    except BaseException:
        if not con.getautocommit():
            con.execute("rollback")
        raise
    else:
        con.execute("commit")
