"""Opening a subcog-store database: the apsw connection, its SQL functions, sqlite-vec, and migrations."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import apsw

from subcog_store.db import locks
from subcog_store.db import files
from subcog_store.postgres import adapter
from subcog_store.postgres import connection as pg_connection
from subcog_store.postgres.connection import is_postgres
from subcog_store.errors import DatabaseError, NotASubcogDatabase, SubcogError
from subcog_store.text.normalize import content_hash
from subcog_store.db.sqlfiles import migrations, q

APPLICATION_ID = 0x53554243  # "SUBC"
# The backend's errors, as the layers above catch them (they never import apsw): any database error, and another
# process holding the write lock past the wait (`db/locks.py`).
Error = apsw.Error
Busy = apsw.BusyError
MMAP_BYTES = 1 << 30


_VEC0: list[str] = []   # found once per process (the worker opens a store for every hook)


def vec0_path() -> str:
    """Path of sqlite-vec's loadable extension (what the stock shell's `.load` takes).

    Found without importing the `sqlite_vec` package, whose import pulls in numpy (~0.25 s of cold start).
    """
    if _VEC0:
        return _VEC0[0]
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError("sqlite-vec is not installed")
    _VEC0.append(str(Path(next(iter(spec.submodule_search_locations))) / "vec0"))
    return _VEC0[0]


def _register(con: apsw.Connection) -> None:
    flags = getattr(apsw, "SQLITE_INNOCUOUS", 0)
    con.create_scalar_function("subcog_content_hash", content_hash, 1, deterministic=True, flags=flags)
    set_overrides(con, {})
    con.enable_load_extension(True)
    con.load_extension(vec0_path())
    con.enable_load_extension(False)


def set_overrides(con: apsw.Connection, overrides: dict[str, float]) -> None:
    """`subcog_setting(key)` in SQL: this process's override of a stored setting (the environment), else NULL.

    The pruning trigger of `recent_captures` reads it, so an override applies inside this process only and is
    never written to the shared `settings` table."""
    if adapter.is_postgres_connection(con):
        adapter.set_overrides(con, overrides)
        return
    flags = getattr(apsw, "SQLITE_INNOCUOUS", 0)
    values = dict(overrides)
    con.create_scalar_function("subcog_setting", lambda key: values.get(key), 1, flags=flags)


_SQLITE_MESSAGES = {
    "FullError": "the disk is full (or the database reached its size limit); nothing was written",
    "IOError": "an I/O error while reading or writing the database; nothing was written",
    "CorruptError": "the database file is corrupt",
    "NotADBError": "the file is not a SQLite database",
    "BusyError": "the database is locked by another process",
    "LockedError": "the database is locked by another connection",
    "ReadOnlyError": "the database is read-only",
    "CantOpenError": "the database file cannot be opened",
    "PermissionsError": "no permission to use the database file",
}


def database_error(error: BaseException, path: str = "") -> SubcogError | None:
    """A SQLite (apsw) error as the documented DatabaseError (exit 4), or None when it is not one."""
    if not isinstance(error, apsw.Error):
        return None
    if isinstance(error, adapter.PgError):   # its words already name the store (never its password)
        return DatabaseError(str(error))
    message = _SQLITE_MESSAGES.get(type(error).__name__)
    where = f"{path}: " if path else ""
    if message is None:
        return DatabaseError(f"{where}database error: {error}")
    return DatabaseError(f"{where}{message}")


def _disk_full(path: str) -> bool:
    """No space left for an unprivileged writer on the file system that holds `path`."""
    try:
        info = os.statvfs(Path(path).parent)
    except (OSError, ValueError):
        return False
    return info.f_bavail * info.f_frsize < 64 << 10


def _describe(path: str, error: Exception) -> str:
    parent = Path(path).parent
    if not parent.exists():
        return f"{path}: the directory {parent} does not exist"
    if isinstance(error, (apsw.FullError, apsw.IOError)) and _disk_full(path):
        return f"{path}: the disk is full; nothing was written"
    if isinstance(error, apsw.ReadOnlyError) or (Path(path).exists() and not os.access(path, os.W_OK)):
        return f"{path}: the database is read-only"
    if isinstance(error, apsw.BusyError):
        return f"{path}: the database is locked by another process (waited {locks.DEFAULT_SECS:g} s)"
    if isinstance(error, (apsw.NotADBError, apsw.CorruptError)):
        return f"{path}: the file is not a SQLite database or is corrupt"
    return f"{path}: {error}"


def connect(path: str | os.PathLike, *, readonly: bool = False, migrate: bool = True,
            deadline: float | None = None) -> apsw.Connection:
    """Open (creating if needed) a subcog-store database, check it is ours, and migrate it to the latest schema.

    A file that is not a subcog-store database raises NotASubcogDatabase and is left untouched. A PostgreSQL
    connection string (`postgresql://...`, `service=...`) opens that store (`postgres/adapter.py`); `deadline`
    (`time.monotonic()`, a hook's) is when it stops waiting for that server (SQLite's waits are the busy timeout).
    """
    path = str(path)
    if is_postgres(path):
        return adapter.connect(path, migrate=migrate and not readonly, deadline=deadline)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise DatabaseError(f"{path!r}: SQLite cannot open a path that is not valid UTF-8") from None
    if path != ":memory:" and not Path(path).parent.exists():
        raise DatabaseError(f"{path}: the directory {Path(path).parent} does not exist")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        con = apsw.Connection(path, flags=flags)
        locks.default(con)
        _register(con)
        with read_snapshot(con):  # one snapshot: another process may be creating this very file right now
            app_id = con.execute("pragma application_id").fetchone()[0]
            tables = con.execute(q("count_schema_objects")).fetchone()[0]
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
                _while_busy(lambda: con.execute("pragma journal_mode = wal"))
            con.execute("pragma synchronous = normal")
            if migrate:
                _while_busy(lambda: migrate_to_latest(con))
    except apsw.Error as e:
        con.close()
        raise DatabaseError(_describe(path, e)) from None
    return con


def let_go(con: apsw.Connection) -> None:
    """Close a connection whose file was deleted or replaced at its path since it was opened. Its WAL (the
    `-wal` file at the path, which SQLite leaves behind for such a file) is first checkpointed into the file it
    belongs to and emptied: a process opening the file now at the path would otherwise replay it onto that
    file (and with its first write, copy another database's pages into it)."""
    try:
        con.execute("pragma wal_checkpoint(TRUNCATE)")
    except apsw.Error:
        pass   # busy or gone: closing is all that is left
    con.close()


def _while_busy(action):
    """`action` again, for up to the busy timeout, while another process holds a lock SQLite reports at once
    instead of waiting for (processes setting up one new file together: switching it to WAL and migrating
    each want the whole file, and one of two such connections is told "busy" without its busy handler)."""
    import time

    deadline = time.monotonic() + locks.DEFAULT_SECS
    while True:
        try:
            return action()
        except apsw.BusyError:
            if time.monotonic() > deadline:
                raise
            import random   # only when the file is busy: its import is ~1 ms of every hook's start
            time.sleep(random.uniform(0.002, 0.02))


def rewrite_file(con: apsw.Connection) -> bool:
    """Rewrite the file compactly (VACUUM, then a truncating WAL checkpoint), so no deleted text stays in its free
    pages; False when another process holds the file (nothing is lost: free pages may keep old bytes).
    PostgreSQL: False (its own VACUUM and the server's storage are the administrator's business)."""
    if adapter.is_postgres_connection(con):
        return False
    try:
        con.execute(q("vacuum"))
        con.execute(q("checkpoint_truncate"))
    except apsw.BusyError:
        return False
    return True


def schema_version(con: apsw.Connection) -> int:
    if adapter.is_postgres_connection(con):
        return pg_connection.schema_version(con.raw)
    return con.execute("pragma user_version").fetchone()[0]


def latest_version(con: "apsw.Connection | None" = None) -> int:
    """The newest schema this code knows (of `con`'s backend: SQLite's when none is given)."""
    if con is not None and adapter.is_postgres_connection(con):
        return pg_connection.latest_version()
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
            con.execute(q("create_migrations_table"))
        for step in migrations():
            if current < step.version <= target:
                con.execute(step.sql)
                con.execute(q("record_migration"), {"version": step.version, "name": step.name})
                con.execute(f"pragma user_version = {step.version}")
                applied.append(step.name)
    return applied


@contextmanager
def immediate(con: apsw.Connection, *scopes: tuple[str, str]) -> Iterator[apsw.Connection]:
    """A write transaction that takes the write lock up front (BEGIN IMMEDIATE), so check-then-write is safe
    across processes; commits on success, rolls back on any exception. A file found damaged is never written
    (DatabaseDamaged, see `db.damage`), and an error in here that points to corruption records it so.
    `scopes`: the (domain, namespace) scopes the transaction writes, when that is all it writes (a capture): on
    PostgreSQL it then locks those scopes only, and writers of other scopes go on; SQLite has one lock."""
    if adapter.is_postgres_connection(con):
        with adapter.write_transaction(con, scopes):
            yield con
        return
    files.check_writable(con.filename)
    try:
        con.execute("begin immediate")
        # Foreign keys checked at commit: a retired memory may name its successor before that row is inserted.
        con.execute("pragma defer_foreign_keys = on")
        try:
            yield con
        except BaseException:
            if not con.getautocommit():
                con.execute("rollback")
            raise
        try:
            con.execute("commit")
        except BaseException:  # a commit that fails (disk full, I/O error) must not leave the transaction open
            try:
                if not con.getautocommit():
                    con.execute("rollback")
            except apsw.Error:
                pass  # the commit's own error is the one to report
            raise
    except apsw.Error as e:
        refused = files.note_damage(con.filename, e)
        if refused is not None:
            raise refused from e
        raise


@contextmanager
def read_snapshot(con: apsw.Connection) -> Iterator[None]:
    """A read transaction (WAL: one snapshot, no lock on writers), unless one is already open."""
    if adapter.is_postgres_connection(con):
        with adapter.read_transaction(con):
            yield
        return
    if not con.getautocommit():
        yield
        return
    con.execute("begin")
    try:
        yield
    finally:
        if not con.getautocommit():
            con.execute("commit")


def dict_rows(cursor: apsw.Cursor) -> list[dict]:
    """The rows of a cursor as dicts keyed by column name."""
    out, names = [], None
    for row in cursor:
        names = names or [d[0] for d in cursor.getdescription()]
        out.append(dict(zip(names, row)))
    return out


def dict_row(cursor: apsw.Cursor) -> dict | None:
    """The first row of a cursor as a dict, or None."""
    rows = dict_rows(cursor)
    return rows[0] if rows else None
