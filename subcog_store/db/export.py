"""What `subcog-store export` reads (named queries in sql/queries/transfer.sql): the memories of a domain (or of
every domain), one row at a time, and for the Markdown document the current facts with what each replaced."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from subcog_store.db.connection import dict_rows
from subcog_store.db.memories import Memory
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw


def count(con: "apsw.Connection", domain: str | None, include_all: bool) -> int:
    return con.execute(q("count_export_memories"), {"domain": domain, "all": include_all}).fetchone()[0]


def _memories(cursor) -> Iterator[Memory]:
    names = [d[0] for d in cursor.getdescription()]
    for row in cursor:
        yield Memory.from_row(dict(zip(names, row)))


def memories(con: "apsw.Connection", domain: str | None, include_all: bool) -> Iterator[Memory]:
    """The memories to export, oldest first, one row at a time."""
    return _memories(con.execute(q("export_memories"), {"domain": domain, "all": include_all}))


def current(con: "apsw.Connection", domain: str | None) -> Iterator[Memory]:
    """The current facts, by domain and namespace, one row at a time."""
    return _memories(con.execute(q("export_current"), {"domain": domain}))


def outdated(con: "apsw.Connection", domain: str | None) -> list[dict]:
    """The memories a newer one replaced (with `successor_id`)."""
    return dict_rows(con.execute(q("export_outdated"), {"domain": domain}))
