"""A throwaway PostgreSQL 16 + pgvector for the tests and benchmarks: the `pgserver` wheel's own binaries, in a
temporary directory, listening on a Unix socket only; or the server `SUBCOG_TEST_POSTGRES_URL` names.

As root the wheel runs the server as its own system user (`pgserver`, created on first use), since PostgreSQL
refuses to run as root. `start()` returns a handle whose `url` is a superuser's; `database()` makes a fresh,
empty database on it; `stop()` stops the server and removes its directory (a server given by URL is left
alone, only the databases made on it are dropped).
"""
from __future__ import annotations

import shutil
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from subcog_store.db.sqlfiles import q
from subcog_store.postgres.connection import connect

URL_VARIABLE = "SUBCOG_TEST_POSTGRES_URL"   # config.SPECS' test_postgres_url
# Durability is not what a test measures: no fsync, and a server that starts in about two seconds.
TEST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


class ServerUnavailable(Exception):
    """No PostgreSQL could be started or reached; the message says why (a test skips with it)."""


@dataclass
class LocalServer:
    url: str
    owned: object | None = None          # the pgserver handle when we started it
    directory: str | None = None
    made: list[str] = field(default_factory=list)

    template: str | None = None          # a store migrated once, copied by database(migrated=True)

    def database(self, prefix: str = "subcog", migrated: bool = False) -> str:
        """A new empty database (or, `migrated`, a copy of a store migrated to the latest schema: a copy is much
        faster than migrating); returns its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        if migrated and self.template is None:
            template = self.database("subcog_template")
            connect(template).close()
            self.template = conninfo_to_dict(template)["dbname"]
        with psycopg.connect(self.url, autocommit=True) as con:
            if migrated:
                con.execute(_composed("copy_test_database", name=name, template=self.template))
            else:
                con.execute(_composed("create_test_database", name=name))
        self.made.append(name)
        return with_database(self.url, name)

    def drop(self, url: str) -> None:
        """Drop a database made by `database()` (its connections are ended first)."""
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        name = conninfo_to_dict(url)["dbname"]
        with psycopg.connect(self.url, autocommit=True) as con:
            con.execute(_composed("drop_test_database", name=name))
        if name in self.made:
            self.made.remove(name)

    def stop(self) -> None:
        for url in [with_database(self.url, name) for name in reversed(self.made)]:
            try:
                self.drop(url)
            except Exception:  # noqa: BLE001 - stopping must go on
                pass
        if self.owned is not None:
            self.owned.cleanup()
            self.owned = None
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)


def _composed(query: str, **parts: str):
    """A named query whose {name} is an identifier and {value} a literal (statements that take no parameters)."""
    from psycopg import sql

    composed = {k: sql.Literal(v) if k == "value" else sql.Identifier(v) for k, v in parts.items()}
    return sql.SQL(q(query, "postgresql")).format(**composed)


def conninfo_to_dict(url: str) -> dict:
    from psycopg.conninfo import conninfo_to_dict as parse

    return parse(url)


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name` instead."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    return make_conninfo(**(conninfo_to_dict(url) | {"dbname": name}))


def start() -> LocalServer:
    """The server of SUBCOG_TEST_POSTGRES_URL, else a new one from the pgserver wheel (ServerUnavailable when
    neither works, saying why)."""
    try:
        import psycopg
    except ImportError as e:
        raise ServerUnavailable(f"psycopg is not installed ({e})") from None
    from subcog_store.config import process_setting   # here: only the tests and benchmarks start a server

    given = process_setting("test_postgres_url")
    if given:
        try:
            with psycopg.connect(given, autocommit=True, connect_timeout=10):
                pass
        except psycopg.Error as e:
            raise ServerUnavailable(f"{URL_VARIABLE} is set but its server cannot be reached: {e}") from None
        return LocalServer(given)
    try:
        import pgserver
    except ImportError as e:
        raise ServerUnavailable(f"the pgserver wheel is not installed ({e}) and {URL_VARIABLE} is not set") from None
    directory = tempfile.mkdtemp(prefix="subcog-pg-")
    try:
        with _quiet_runtime_dir():
            handle = pgserver.get_server(directory, cleanup_mode="delete")
    except Exception as e:  # noqa: BLE001 - any failure to start is a reason to skip, given in full
        shutil.rmtree(directory, ignore_errors=True)
        raise ServerUnavailable(f"the bundled PostgreSQL did not start: {type(e).__name__}: {e}") from None
    server = LocalServer(handle.get_uri(), handle, directory)
    try:
        with psycopg.connect(server.url, autocommit=True) as con:
            for key, value in TEST_SETTINGS.items():
                con.execute(_composed("tune_test_server", name=key, value=value))
            con.execute(q("reload_configuration", "postgresql"))
    except Exception:
        server.stop()
        raise
    return server


@contextmanager
def _quiet_runtime_dir() -> Iterator[None]:
    """pgserver keeps its lock file in the user's runtime directory and warns when XDG_RUNTIME_DIR is unset."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
