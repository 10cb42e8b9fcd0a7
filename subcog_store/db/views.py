"""What the pages of `subcog-store ui` read (named queries in sql/queries/ui.sql): projects and namespaces with
their counts, a page of memories, a memory's history, the decision log, the sessions."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from subcog_store.db.connection import dict_rows
from subcog_store.db.memories import Memory
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw


def projects(con: "apsw.Connection") -> list[dict[str, Any]]:
    return dict_rows(con.execute(q("ui_projects")))


def namespaces(con: "apsw.Connection", domain: str) -> list[dict[str, Any]]:
    return dict_rows(con.execute(q("ui_namespaces"), {"domain": domain}))


def memories(con: "apsw.Connection", domain: str, namespace: str | None, state: str, limit: int, offset: int
             ) -> list[Memory]:
    rows = dict_rows(con.execute(q("ui_memories"), {"domain": domain, "namespace": namespace, "state": state,
                                                     "limit": limit, "offset": offset}))
    return [Memory.from_row(r) for r in rows]


def predecessors(con: "apsw.Connection", memory_id: str) -> list[dict[str, Any]]:
    return dict_rows(con.execute(q("ui_predecessors"), {"id": memory_id}))


def memory_decisions(con: "apsw.Connection", memory_id: str) -> list[dict[str, Any]]:
    return dict_rows(con.execute(q("ui_memory_decisions"), {"id": memory_id}))


def decisions(con: "apsw.Connection", show_all: bool, domain: str | None, limit: int, offset: int
              ) -> list[dict[str, Any]]:
    return dict_rows(con.execute(q("ui_decisions"), {"all": int(show_all), "domain": domain, "limit": limit,
                                                      "offset": offset}))


def sessions(con: "apsw.Connection", limit: int) -> list[dict[str, Any]]:
    return dict_rows(con.execute(q("ui_sessions"), {"limit": limit}))
