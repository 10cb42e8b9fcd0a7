"""Opening a subcog-store on PostgreSQL: the connection string (a URL, libpq key=value, `service=`, PGPASSFILE
and the PG* environment all work, since libpq reads them), its display without the password, the extension,
the migrations of `sql/postgresql/schema/`, transactions and the per-scope write lock.

Transactions run at READ COMMITTED: a writer of a scope takes `pg_advisory_xact_lock` on the scope first, and
each statement after it sees what the previous holder committed, so check-then-write is safe without
SERIALIZABLE and no "could not serialize" error can reach a caller.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Mapping

from subcog_store import config
from subcog_store.db.sqlfiles import migrations, q
from subcog_store.errors import DatabaseError, NotASubcogDatabase
from subcog_store.postgres.vectors import register

if TYPE_CHECKING:
    import psycopg

    from subcog_store.postgres.deadline import Deadline

DIALECT = "postgresql"
CONNECT_TIMEOUT_SECS = 10
APPLICATION_NAME = "subcog-store"


def is_postgres(target: object) -> bool:
    """Whether a `--db` / SUBCOG_DB value names a PostgreSQL store (a URL or libpq key=value conninfo)."""
    return config.is_postgres(target)


def display(conninfo: str) -> str:
    """The connection string as it may be shown or logged: never the password (of the URL, of a key=value
    pair, or a `password` query parameter); unparsable input is shown as a fixed placeholder."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:  # noqa: BLE001 - a malformed string may still hold a password: show none of it
        return "postgresql://(unreadable connection string)"
    if set(parts) <= {"service"}:
        return f"service={parts.get('service', '')}"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = parts.get("host", "")
    host = f"[{host}]" if host.startswith("/") else host
    port = f":{parts['port']}" if parts.get("port") else ""
    service = f"?service={parts['service']}" if parts.get("service") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname', '')}{service}"


def _describe(conninfo: str, error: Exception) -> str:
    """A libpq or server error as one line naming the store, without the password."""
    import psycopg

    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    password = _password(conninfo)
    if password:
        text = text.replace(password, "****")
    where = display(conninfo)
    if isinstance(error, psycopg.OperationalError) and not getattr(error, "sqlstate", None):
        return f"{where}: the server cannot be reached ({text})"
    return f"{where}: {text}"


def _password(conninfo: str) -> str | None:
    from psycopg.conninfo import conninfo_to_dict

    try:
        return conninfo_to_dict(conninfo).get("password") or None
    except Exception:  # noqa: BLE001
        return None


def connect(conninfo: str, *, migrate: bool = True, connect_timeout: float = CONNECT_TIMEOUT_SECS,
            deadline: "Deadline | None" = None) -> "psycopg.Connection":
    """Open a subcog-store database on PostgreSQL (autocommit; transactions are explicit), check it is ours or
    empty, and migrate it to the latest schema. Errors are DatabaseError (exit 4) with the cause in words.
    `deadline` (a hook's): the connection opens before it or not at all, and is watched by it from then on."""
    try:
        import psycopg
    except ImportError:
        raise DatabaseError("PostgreSQL stores need psycopg 3 (pip install 'psycopg[binary]')") from None
    try:
        con = _open(conninfo, connect_timeout, None if deadline is None else deadline.left())
    except psycopg.Error as e:
        raise DatabaseError(_describe(conninfo, e)) from None
    except Exception as e:  # noqa: BLE001 - a malformed string: psycopg raises ProgrammingError or ValueError
        raise DatabaseError(f"{display(conninfo)}: not a usable connection string ({type(e).__name__})") from None
    if deadline is not None:
        deadline.arm(con)
    try:
        if migrate:
            migrate_to_latest(con, conninfo)
        else:
            check_version(con, conninfo)
        register(con)
    except BaseException as e:
        if deadline is not None:
            deadline.disarm()
        con.close()
        if deadline is not None and deadline.expired:
            raise DatabaseError(deadline.words(display(conninfo))) from None
        if isinstance(e, psycopg.errors.InsufficientPrivilege):
            raise DatabaseError(f"{display(conninfo)}: this role may not use the store ({_first(e)}); see the "
                                "README's role setup") from None
        if isinstance(e, psycopg.Error):
            raise DatabaseError(_describe(conninfo, e)) from None
        raise
    return con


def connect_timeout_of(conninfo: str, default: float = CONNECT_TIMEOUT_SECS,
                       environ: "Mapping[str, str] | None" = None) -> float:
    """The seconds a connection to `conninfo` may take to open, where libpq looks for it (here in fractions of a
    second too): the string's own `connect_timeout`, else its service's in the service file, else
    PGCONNECT_TIMEOUT, the first that is positive; else `default`. `environ` is the environment of the run
    (a hook's request through the warm worker: the client's, not the worker's)."""
    from psycopg.conninfo import conninfo_to_dict

    environ = os.environ if environ is None else environ
    try:
        params = conninfo_to_dict(conninfo)
    except Exception:  # noqa: BLE001 - a malformed string: connect() says so
        return default
    service = params.get("service") or environ.get("PGSERVICE")
    for value in (params.get("connect_timeout"), service and service_setting(service, "connect_timeout", environ),
                  environ.get("PGCONNECT_TIMEOUT")):
        if seconds := _positive(value):
            return seconds
    return default


def service_setting(service: str, key: str, environ: "Mapping[str, str]") -> str | None:
    """A setting of a connection service as libpq reads it: the user's service file (PGSERVICEFILE, else
    ~/.pg_service.conf) when it defines the service, else the system's (PGSYSCONFDIR/pg_service.conf)."""
    import configparser   # only for a service's store: every SQLite hook imports this module (db/connection)

    home = environ.get("HOME") or os.path.expanduser("~")
    files = [environ.get("PGSERVICEFILE") or os.path.join(home, ".pg_service.conf")]
    if environ.get("PGSYSCONFDIR"):
        files.append(os.path.join(environ["PGSYSCONFDIR"], "pg_service.conf"))
    for path in files:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError, OSError):
            continue   # libpq reports a broken file itself when it connects
        if parser.has_section(service):
            return parser.get(service, key, fallback=None)
    return None


def within(conninfo: str, seconds: float, environ: "Mapping[str, str] | None" = None) -> str:
    """`conninfo` opening in at most `seconds`, or the connect_timeout libpq would find for it (connect_timeout_of)
    when that is shorter: a hook derives `seconds` from its budget, so a server that never answers (a host
    dropping packets, a port that accepts and stays silent) cannot hold the hook past it."""
    from psycopg.conninfo import make_conninfo

    allowed = min(seconds, connect_timeout_of(conninfo, seconds, environ))
    return make_conninfo(conninfo, connect_timeout=f"{allowed:.3f}")


def _positive(value: object) -> float | None:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return seconds if seconds > 0 else None


def _open(conninfo: str, default_timeout: float, at_most: float | None = None) -> "psycopg.Connection":
    """A psycopg connection (autocommit) opened within the conninfo's connect_timeout (else `default_timeout`)
    seconds, and `at_most` seconds when given, to the fraction of a second: psycopg's own connect rounds it to
    whole seconds, at least 2, which is more than a short hook budget allows. libpq's non-blocking start and
    poll, psycopg's connection on top. A server silent past the time raises psycopg.errors.ConnectionTimeout."""
    import selectors
    import time

    import psycopg
    from psycopg import pq
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    seconds = connect_timeout_of(conninfo, default_timeout)
    seconds = seconds if at_most is None else min(seconds, at_most)
    params = {k: v for k, v in conninfo_to_dict(conninfo).items() if k != "connect_timeout"}
    params.setdefault("application_name", APPLICATION_NAME)
    deadline = time.monotonic() + seconds
    pgconn = pq.PGconn.connect_start(make_conninfo("", **params).encode())
    try:
        with selectors.DefaultSelector() as selector:
            while True:
                if pgconn.status == pq.ConnStatus.BAD:
                    raise psycopg.OperationalError(_libpq_message(pgconn))
                status = pgconn.connect_poll()
                if status == pq.PollingStatus.OK:
                    break
                if status == pq.PollingStatus.FAILED:
                    raise psycopg.OperationalError(_libpq_message(pgconn))
                wanted = selectors.EVENT_READ if status == pq.PollingStatus.READING else selectors.EVENT_WRITE
                selector.register(pgconn.socket, wanted)
                ready = selector.select(max(0.0, deadline - time.monotonic()))
                selector.unregister(pgconn.socket)
                if not ready:
                    raise psycopg.errors.ConnectionTimeout(
                        f"no answer in the {seconds:g} s its connect_timeout allows")
    except BaseException:
        pgconn.finish()
        raise
    pgconn.nonblocking = 1
    con = psycopg.Connection(pgconn)
    con.autocommit = True
    return con


def _libpq_message(pgconn) -> str:
    return pgconn.get_error_message().strip() or "connection failed"


def schema_version(con: "psycopg.Connection") -> int:
    """The highest migration applied (0 for an empty database)."""
    if con.execute(q("find_migrations_table", DIALECT)).fetchone()[0] is None:
        return 0
    return con.execute(q("schema_version", DIALECT)).fetchone()[0] or 0


def latest_version() -> int:
    return len(migrations(DIALECT))


def check_version(con: "psycopg.Connection", conninfo: str) -> int:
    """The schema version; a newer schema than this code knows is refused (DatabaseError)."""
    version = schema_version(con)
    if version > latest_version():
        raise DatabaseError(f"{display(conninfo)}: the database has schema version {version}, newer than this "
                            f"subcog-store knows ({latest_version()}): upgrade subcog-store")
    return version


def migrate_to_latest(con: "psycopg.Connection", conninfo: str = "") -> list[str]:
    """Apply the missing migrations in one transaction (serialised across processes by an advisory lock)."""
    import psycopg

    if check_version(con, conninfo) >= latest_version():
        return []
    applied = []
    try:
        with con.transaction():
            con.execute(q("lock_migrations", DIALECT))
            current = schema_version(con)  # re-read under the lock: another process may have migrated
            if current == 0:
                _prepare_empty(con, conninfo)
                con.execute(q("create_migrations_table", DIALECT))
            for step in migrations(DIALECT):
                if current < step.version:
                    con.execute(step.sql)
                    con.execute(q("record_migration", DIALECT), {"version": step.version, "name": step.name})
                    applied.append(step.name)
    except psycopg.errors.InsufficientPrivilege as e:
        raise DatabaseError(f"{display(conninfo)}: this role may not create the store's tables ({_first(e)}); "
                            "see the README's role setup") from None
    except psycopg.Error as e:
        raise DatabaseError(_describe(conninfo, e)) from None
    return applied


def _prepare_empty(con: "psycopg.Connection", conninfo: str) -> None:
    """Before the first migration: a UTF8 database, holding no tables of another program, with pgvector."""
    import psycopg

    encoding, foreign = con.execute(q("inspect_database", DIALECT)).fetchone()
    if encoding != "UTF8":
        raise DatabaseError(f"{display(conninfo)}: the database's encoding is {encoding}; a store needs UTF8 "
                            "(create database ... encoding 'UTF8' template template0)")
    if foreign:
        raise NotASubcogDatabase(f"{display(conninfo)}: the schema already holds tables of another program "
                                 "(left untouched); use an empty database or schema")
    if con.execute(q("find_vector_extension", DIALECT)).fetchone() is not None:
        return
    try:
        with con.transaction():
            con.execute(q("create_vector_extension", DIALECT))
    except psycopg.errors.InsufficientPrivilege:
        raise DatabaseError(f"{display(conninfo)}: the pgvector extension is not enabled in this database and "
                            "this role may not enable it: an administrator runs `create extension vector`") from None
    except (psycopg.errors.UndefinedFile, psycopg.errors.FeatureNotSupported, psycopg.errors.UndefinedObject):
        raise DatabaseError(f"{display(conninfo)}: the server has no pgvector extension installed "
                            "(https://github.com/pgvector/pgvector, 0.6 or later)") from None


def wait_at_most(con: "psycopg.Connection", seconds: float) -> None:
    """Bound every later statement of this connection, and every lock wait, by `seconds` (a hook keeps to its
    budget whatever the server does: a statement past it is cancelled, its transaction rolled back, and the
    caller gets a DatabaseError naming the timeout)."""
    milliseconds = max(2, int(seconds * 1000))
    # A lock wait gives up a little earlier than the statement waiting for it, so the error says which it was.
    con.execute(q("set_timeouts", DIALECT), {"statement_ms": milliseconds, "lock_ms": milliseconds * 9 // 10})


def describe_error(conninfo: str, error: Exception) -> "DatabaseError":
    """A psycopg error as the documented DatabaseError (exit 4): timeouts and lost connections in words."""
    import psycopg

    if isinstance(error, psycopg.errors.QueryCanceled):
        return DatabaseError(f"{display(conninfo)}: the server did not answer in time (statement timeout); "
                             "nothing was written")
    if isinstance(error, psycopg.errors.LockNotAvailable):
        return DatabaseError(f"{display(conninfo)}: another writer held the lock past the time allowed; "
                             "nothing was written")
    if isinstance(error, psycopg.OperationalError):
        return DatabaseError(f"{display(conninfo)}: the connection to the server was lost ({_first(error)}); "
                             "the transaction was not committed")
    return DatabaseError(_describe(conninfo, error))


def _first(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@contextmanager
def transaction(con: "psycopg.Connection", *scopes: tuple[str, str]) -> Iterator["psycopg.Connection"]:
    """A READ COMMITTED transaction holding the write lock of each (domain, namespace) scope, taken in a fixed
    order so two writers of the same scopes never deadlock, and the store's lock shared (as a capture through the
    data layer: a writer of the whole store waits for it); commits on success, rolls back on any error."""
    with con.transaction():
        con.execute(q("lock_store_shared", DIALECT))
        for domain, namespace in sorted(set(scopes)):
            con.execute(q("lock_scope", DIALECT), {"domain": domain, "namespace": namespace})
        yield con
