"""A store on PostgreSQL behind the data layer's own calls: the connection `db/` modules are handed answers
`execute(query, params)` with cursors that fetch, iterate and describe themselves, as SQLite's does, so every
`db/` function runs on either backend and nothing above `db/` knows which one it talks to.

A named query (`db.sqlfiles.Query`) runs as its PostgreSQL text when `sql/postgresql/queries/` defines that name
(written in psycopg's `%(name)s` style); otherwise its SQLite text runs with `:name` parameters rewritten (the
portable queries, most of them). Parameters are bound on the client (psycopg's ClientCursor), so SQLite's
untyped `:x is null` works alike. Vectors cross as float32 little-endian bytes both ways (a parameter named
`embedding`, a `vector` column read back), as in SQLite. `LIMIT -1` (SQLite's "no limit") is sent as NULL.

Errors come out as the data layer's own (`db.connection.Error`, `Busy` for a lock wait past its time), each
with words that never hold the password. Writers take advisory locks in `write_transaction` (SQLite's BEGIN
IMMEDIATE): a writer of the whole store the store's lock; a capture only its (domain, namespace) scope's lock
(and the store's, shared), so teammates capturing in different scopes do not wait for each other, while the
writers of one scope take turns: a check-then-write is as safe as on SQLite, at READ COMMITTED, so no "could
not serialize" can reach a caller.
"""
# Lazy imports: psycopg loads only when a PostgreSQL store is opened (SQLite hooks never pay for it).
from __future__ import annotations

import re
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import apsw

from subcog_store.config import TRIGGER_SETTINGS
from subcog_store.db.sqlfiles import q, queries
from subcog_store.errors import DatabaseError
from subcog_store.postgres import connection as pg
from subcog_store.postgres.deadline import Deadline
from subcog_store.postgres.vectors import Vector, from_wire

if TYPE_CHECKING:
    import psycopg

DIALECT = "postgresql"
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|(?<!:):([A-Za-z_][A-Za-z0-9_]*)|%|\?")


class PgError(apsw.Error):
    """A PostgreSQL error, as the layers above catch a database error (`message` is safe to show)."""


class PgBusy(PgError, apsw.BusyError):
    """Another writer held the lock past the time this connection waits."""


class PgConstraint(PgError, apsw.ConstraintError):
    """A constraint refused the write (a unique index, a check, a foreign key)."""


class PgSqlError(PgError, apsw.SQLError):
    """The statement itself failed (a missing table or column, bad syntax)."""


def is_postgres_connection(con: object) -> bool:
    return getattr(con, "dialect", "sqlite") == DIALECT


def translated(sql: str) -> str:
    """SQLite text in psycopg's parameter style: `:name` -> `%(name)s`, `?` -> `%s`, a literal `%` doubled."""
    return _TOKENS.sub(lambda m: m.group(0).replace("%", "%%") if m.group(0)[0] in "'\"" else
                       "%%" if m.group(0) == "%" else "%s" if m.group(0) == "?" else f"%({m.group(1)})s", sql)


@lru_cache(maxsize=None)
def postgres_text(name: str | None, sql: str) -> str:
    """The text PostgreSQL runs for a query: its own of that name, else the SQLite text translated."""
    own = queries(DIALECT).get(name) if name else None
    return str(own) if own is not None else translated(sql)


class Cursor:
    """The rows of one statement, read as the data layer reads an apsw cursor."""

    def __init__(self, cursor: "psycopg.Cursor", con: "PgConnection"):
        self._cursor, self._con = cursor, con

    def fetchone(self):
        return self._con.guarded(self._cursor.fetchone) if self._cursor.description else None

    def fetchall(self) -> list:
        return self._con.guarded(self._cursor.fetchall) if self._cursor.description else []

    def __iter__(self):
        return iter(self.fetchall())

    def getdescription(self) -> list[tuple[str, str]]:
        return [(c.name, str(c.type_code)) for c in self._cursor.description or ()]


class PgConnection:
    """An open store on PostgreSQL (autocommit; `write_transaction` and `read_transaction` make transactions)."""

    dialect = DIALECT

    def __init__(self, raw: "psycopg.Connection", conninfo: str, deadline: "Deadline | None" = None):
        self.raw, self.conninfo, self.deadline = raw, conninfo, deadline
        self.filename = ""        # no file: the file-level safeguards (damage marker, spool) do not apply
        self.shown = pg.display(conninfo)
        self.lock_ms = 10_000     # how long the next write transaction waits for the store's lock
        self.beginning: str | None = None   # a write transaction's first statements, sent with its next one

    def execute(self, sql: str, params: dict | tuple | None = None) -> Cursor:
        text = postgres_text(getattr(sql, "name", None), str(sql))
        cursor = self.raw.cursor()
        if text == str(q("nothing", DIALECT)):   # SQLite-only work (the sign bits): no round trip
            return Cursor(cursor, self)
        if self.beginning is not None:   # a write transaction's begin and lock go with its first statement
            begin, self.beginning = self.beginning, None
            self.guarded(lambda: cursor.execute(begin + "\n" + cursor.mogrify(text, _params(params))))
            while cursor.nextset():      # the rows are the last statement's
                pass
        else:
            self.guarded(lambda: cursor.execute(text, _params(params)))
        return Cursor(cursor, self)

    def guarded(self, action):
        """`action()`, its psycopg error raised as the data layer's."""
        import psycopg

        try:
            return action()
        except psycopg.Error as e:
            raise self.error(e) from e

    def error(self, e: Exception) -> PgError:
        import psycopg.errors as errors

        if self.deadline is not None and self.deadline.expired:
            return PgError(self.deadline.words(self.shown))
        message = str(pg.describe_error(self.conninfo, e))
        if isinstance(e, errors.LockNotAvailable):
            return PgBusy(message)
        if isinstance(e, errors.IntegrityError):
            return PgConstraint(message)
        if isinstance(e, (errors.SyntaxErrorOrAccessRuleViolation, errors.DataError)) and \
                not isinstance(e, errors.InsufficientPrivilege):
            return PgSqlError(message)
        return PgError(message)

    @property
    def lost(self) -> bool:
        """The server ended this connection (a restart, a failover, an administrator): it can only be opened
        anew."""
        return bool(self.raw.closed or self.raw.broken)

    def getautocommit(self) -> bool:
        """True outside a transaction (as apsw's)."""
        from psycopg.pq import TransactionStatus

        return self.beginning is None and self.raw.info.transaction_status == TransactionStatus.IDLE

    def setbusytimeout(self, milliseconds: int) -> None:
        """How long a write waits for another writer's lock: PostgreSQL's lock_timeout, set by the next write
        transaction as it begins (no round trip of its own)."""
        self.lock_ms = max(1, int(milliseconds))

    def close(self) -> None:
        if self.deadline is not None:
            self.deadline.disarm()
        self.raw.close()


def _params(params: dict | tuple | None) -> Any:
    if not isinstance(params, dict):
        return params
    out = dict(params)
    if isinstance(out.get("embedding"), (bytes, bytearray, memoryview)):
        out["embedding"] = Vector(out["embedding"])
    if isinstance(out.get("limit"), int) and out["limit"] < 0:
        out["limit"] = None
    return out


def connect(conninfo: str, *, migrate: bool = True, connect_timeout: float = pg.CONNECT_TIMEOUT_SECS,
            deadline: float | None = None) -> PgConnection:
    """Open a store on PostgreSQL for the data layer (see postgres/connection.py for what is checked).
    `deadline` (`time.monotonic()`, a hook's): the connection never waits for the server past it
    (postgres/deadline.py); a statement it cut short raises PgError saying so."""
    import psycopg
    from psycopg import ClientCursor

    watch = None if deadline is None else Deadline(deadline)
    raw = pg.connect(conninfo, migrate=migrate, connect_timeout=connect_timeout, deadline=watch)
    con = PgConnection(raw, conninfo, watch)
    raw.cursor_factory = ClientCursor
    try:
        _register_bytes_vectors(raw)
    except psycopg.Error as e:
        con.close()
        raise DatabaseError(str(con.error(e))) from None
    return con


def _register_bytes_vectors(raw: "psycopg.Connection") -> None:
    """`vector` values read as float32 little-endian bytes (SQLite's blobs); Vector sent as a literal."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(raw, "vector")
    if info is None:   # a database that is not a store yet (doctor opens without migrating)
        return

    class VectorLiteral(Dumper):
        oid = info.oid

        def dump(self, obj: Vector) -> bytes:
            return ("[" + ",".join(map(repr, obj.values.astype(float).tolist())) + "]").encode()

        def quote(self, obj: Vector) -> bytes:
            return b"'" + self.dump(obj) + b"'::vector"

    class BytesLoader(Loader):
        format = Format.BINARY

        def load(self, data) -> bytes:
            return from_wire(data).tobytes()

    class BytesTextLoader(Loader):
        def load(self, data) -> bytes:
            import numpy as np

            return np.array([float(x) for x in bytes(data).decode()[1:-1].split(",")], dtype="<f4").tobytes()

    raw.adapters.register_dumper(Vector, VectorLiteral)
    raw.adapters.register_loader(info.oid, BytesLoader)
    raw.adapters.register_loader(info.oid, BytesTextLoader)


@contextmanager
def write_transaction(con: PgConnection, scopes: "Iterable[tuple[str, str]]" = ()) -> Iterator[PgConnection]:
    """SQLite's BEGIN IMMEDIATE on PostgreSQL: a READ COMMITTED transaction that first takes the store's write
    lock (an advisory lock, waiting at most the lock timeout); commits on success, rolls back on any error.
    Given the (domain, namespace) `scopes` it writes in, it holds the lock of each (in a fixed order: no
    deadlock) and the store's lock shared only: writers of other scopes go on meanwhile."""
    if not con.getautocommit():   # nested: the outer transaction holds the lock already
        yield con
        return
    # begin, lock_timeout and the locks go with the transaction's first statement: one round trip for all
    cursor = con.raw.cursor()
    scopes = sorted(set(scopes))
    con.beginning = "\n".join(
        [cursor.mogrify(q("begin_scoped_write" if scopes else "begin_write", DIALECT), {"ms": con.lock_ms})]
        + [cursor.mogrify(q("lock_scope", DIALECT), {"domain": d, "namespace": n}) for d, n in scopes])
    try:
        yield con
    except BaseException:
        con.beginning = None
        _rollback(con)
        raise
    if con.beginning is not None:   # nothing was written
        con.beginning = None
        return
    try:
        con.execute(q("commit", DIALECT))
    except BaseException:
        _rollback(con)
        raise


@contextmanager
def read_transaction(con: PgConnection) -> Iterator[None]:
    """SQLite's read snapshot: on PostgreSQL each read statement sees what was committed when it started (READ
    COMMITTED, as a transaction at that level would: never blocks a writer, never fails to serialise), so no
    transaction is opened (two round trips saved on every check)."""
    yield


def _rollback(con: PgConnection) -> None:
    try:
        con.raw.execute("rollback")
    except Exception:  # noqa: BLE001 - a lost connection: nothing was committed, the first error is the one to report
        pass


def set_overrides(con: PgConnection, overrides: dict[str, float]) -> None:
    """This process's overrides of the stored settings the recent window's trigger reads (session settings
    `subcog.<key>`; a key without one is reset, so the table's value applies)."""
    for key in TRIGGER_SETTINGS:
        value = overrides.get(key)
        con.execute(q("set_override", DIALECT), {"key": f"subcog.{key}",
                                                 "value": "" if value is None else repr(float(value))})
