"""Memories and their vectors: the one writer of memory rows (insert, retire, link, rewrite, move, restore, hard
delete, the undo snapshot) and the reads of them.

Nothing else writes `memories`, `memory_vectors`, `memory_bits`, `retired_vectors` or a memory's
`recent_captures` rows. Writes run inside the caller's write transaction (`db.connection.immediate`); every
function takes plain values. The vectors' reads are `db/vectors.py`'s, the decision log `db/decisions.py`'s.
"""
# Lazy imports: the secret patterns compile only when a memory is shown.
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Sequence

from subcog_store.db import citations, recent
from subcog_store.db.connection import dict_row, dict_rows
from subcog_store.db.sqlfiles import q
from subcog_store.errors import DatabaseError, NotFound
from subcog_store.postgres.adapter import is_postgres_connection

if TYPE_CHECKING:
    import apsw

def urn(domain: str, namespace: str, memory_id: str) -> str:
    """`subcog://<domain>/<namespace>/<id>`: how a memory is named everywhere."""
    return f"subcog://{domain}/{namespace}/{memory_id}"


@dataclass
class Memory:
    """One row of `memories`."""

    id: str
    domain: str
    namespace: str
    content: str
    content_hash: str
    importance: float
    tags: list[str]
    status: str
    source: str | None
    session_id: str | None
    created_at: str
    updated_at: str
    successor_id: str | None
    seq: int

    @classmethod
    def from_row(cls, row: dict) -> "Memory":
        return cls(**{**row, "tags": json.loads(row["tags"])})

    @property
    def urn(self) -> str:
        return urn(self.domain, self.namespace, self.id)

    def to_dict(self) -> dict:
        """The memory as shown to people and tools (secrets redacted again on the way out)."""
        from subcog_store.text.redact import shown

        data = asdict(self)
        data.pop("seq")
        data["content"] = shown(self.content)
        data["urn"] = self.urn
        return data


def get(con: "apsw.Connection", memory_id: str) -> Memory | None:
    row = dict_row(con.execute(q("get_memory"), {"id": memory_id}))
    return Memory.from_row(row) if row else None


def _row(con: "apsw.Connection", memory_id: str) -> dict | None:
    return dict_row(con.execute(q("get_memory"), {"id": memory_id}))


# ------------------------------------------------------------------------------------------------ snapshots

@dataclass
class Snapshot:
    """A memory as it was: every column, its searchable and parked vectors, its recent-capture rows."""

    row: dict
    vector: bytes | None = None
    parked: bytes | None = None
    recent: list[dict] = field(default_factory=list)
    vector_was_parked: bool = False    # undo rows written before undo v2: the live vector is the parked one

    @property
    def id(self) -> str:
        return self.row["id"]

    def to_json(self) -> dict:
        return {"row": self.row, "vector": self.vector.hex() if self.vector else None,
                "parked": self.parked.hex() if self.parked else None, "recent": self.recent}

    @classmethod
    def from_json(cls, data: dict) -> "Snapshot":
        """Also reads the older formats: batch snapshots (`retired_vector`, `recent_captures`) and store-time
        rows without vectors (their vector was parked when they were retired)."""
        parked = data.get("parked", data.get("retired_vector"))
        legacy_plain = "vector" not in data
        return cls(data["row"], bytes.fromhex(data["vector"]) if data.get("vector") else None,
                   bytes.fromhex(parked) if parked else None, data.get("recent", data.get("recent_captures", [])),
                   vector_was_parked=legacy_plain)


def snapshot(con: "apsw.Connection", memory_id: str) -> Snapshot:
    row = _row(con, memory_id)
    if row is None:
        raise DatabaseError(f"memory {memory_id} vanished inside a write transaction")
    live = con.execute(q("select_vector"), {"seq": row["seq"]}).fetchone()
    parked = con.execute(q("parked_vector"), {"seq": row["seq"]}).fetchone()
    return Snapshot(row, bytes(live[0]) if live else None, bytes(parked[0]) if parked else None,
                    recent.of_memory(con, memory_id))


# ------------------------------------------------------------------------------------------------ writes

def new_id(con: "apsw.Connection") -> str:
    """A fresh 12-hex memory id."""
    for _ in range(8):
        memory_id = os.urandom(6).hex()
        if _row(con, memory_id) is None:
            return memory_id
    raise DatabaseError("could not allocate a memory id")


def insert(con: "apsw.Connection", *, memory_id: str, domain: str, namespace: str, content: str,
           importance: float, tags: list[str], source: str | None, session_id: str | None, created_at: str,
           now: str, captured_at: float, vector: bytes | None) -> tuple[int, str]:
    """A new active memory with its vector and recent-capture row; returns (seq, content_hash)."""
    seq, stored_hash = con.execute(q("insert_memory"), {
        "id": memory_id, "domain": domain, "namespace": namespace, "content": content, "importance": importance,
        "tags": json.dumps(tags), "source": source, "session_id": session_id, "created_at": created_at,
        "now": now}).fetchone()
    if vector is not None:
        add_vector(con, seq, namespace, domain, vector)
    recent.record(con, stored_hash, memory_id, namespace, domain, captured_at)
    return seq, stored_hash


def set_vector(con: "apsw.Connection", seq: int, namespace: str, domain: str, vector: bytes | None) -> None:
    """Replace a memory's searchable vector (None: out of vector search)."""
    _delete_vector(con, seq)
    if vector is not None:
        add_vector(con, seq, namespace, domain, vector)


def add_vector(con: "apsw.Connection", seq: int, namespace: str, domain: str, vector: bytes) -> None:
    """Make a memory searchable: its float vector and the sign bits derived from it."""
    params = {"seq": seq, "namespace": namespace, "domain": domain, "embedding": vector}
    con.execute(q("insert_vector"), params)
    con.execute(q("insert_bits"), params)
    con.execute(q("log_bits"), params)


def rebuild_bits(con: "apsw.Connection", seq: int) -> None:
    """Derive a memory's sign bits again from its vector (none when it has no vector)."""
    con.execute(q("delete_bits"), {"seq": seq})
    found = con.execute(q("vector_scope_of"), {"seq": seq}).fetchone()
    if found:
        con.execute(q("insert_bits"), {"seq": seq, "namespace": found[0], "domain": found[1],
                                       "embedding": found[2]})
        con.execute(q("log_bits"), {"seq": seq})


def _delete_vector(con: "apsw.Connection", seq: int) -> None:
    con.execute(q("delete_vector"), {"seq": seq})
    con.execute(q("delete_bits"), {"seq": seq})


def retire(con: "apsw.Connection", memory_id: str, status: str, now: str, successor_id: str | None = None
           ) -> Snapshot:
    """Take a memory out of search (superseded, merged, deleted): its vector is parked for an undo."""
    before = snapshot(con, memory_id)
    if before.vector is not None:
        con.execute(q("park_vector"), {"seq": before.row["seq"], "embedding": before.vector})
        _delete_vector(con, before.row["seq"])
    con.execute(q("set_memory_status"), {"id": memory_id, "status": status, "successor_id": successor_id,
                                         "now": now})
    return before


def link_successor(con: "apsw.Connection", memory_id: str, successor_id: str | None, now: str) -> Snapshot:
    """Mark an active memory as outdated by a newer one (it stays searchable, ranked below its successor);
    None: current again."""
    before = snapshot(con, memory_id)
    con.execute(q("set_successor"), {"id": memory_id, "successor_id": successor_id, "now": now})
    return before


def touch(con: "apsw.Connection", memory_id: str, tags: list[str], importance: float, now: str) -> None:
    """A repeat may bring new tags or a higher importance: keep them on the existing memory."""
    row = _row(con, memory_id)
    if row is None:
        return
    old_tags = json.loads(row["tags"])
    merged = list(dict.fromkeys(old_tags + tags))
    best = max(row["importance"], importance)
    if merged != old_tags or best != row["importance"]:
        con.execute(q("touch_memory"), {"id": memory_id, "tags": json.dumps(merged), "importance": best,
                                        "now": now})


def rewrite(con: "apsw.Connection", memory: Memory, *, content: str, importance: float, tags: list[str],
            created_at: str, now: str, vector: bytes | None) -> None:
    """A batch survivor takes the merged text (and its vector, when the text changed)."""
    con.execute(q("rewrite_memory"), {"id": memory.id, "content": content, "importance": importance,
                                      "tags": json.dumps(tags), "created_at": created_at, "now": now})
    if content != memory.content:
        set_vector(con, memory.seq, memory.namespace, memory.domain, vector)


def move(con: "apsw.Connection", memory_id: str, domain: str, now: str) -> Snapshot:
    """Move a memory (row, vector, recent captures) to another domain; returns it as it was."""
    before = snapshot(con, memory_id)
    con.execute(q("move_memory"), {"id": memory_id, "domain": domain, "now": now})
    con.execute(q("move_vector"), {"seq": before.row["seq"], "domain": domain})
    con.execute(q("move_bits"), {"seq": before.row["seq"], "domain": domain})
    con.execute(q("log_bits"), {"seq": before.row["seq"]})
    recent.move(con, memory_id, domain)
    citations.move_domain(con, memory_id, domain)
    return before


def hard_delete(con: "apsw.Connection", memory_id: str) -> list[Snapshot]:
    """Delete a memory and, first, what points at it (retired predecessors, recent captures); returns their
    snapshots in deletion order. Each memory is visited once: a loop of successor links (a store written before
    links closing a loop were refused) or a chain of any length ends (no recursion)."""
    order: list[str] = []
    seen = {memory_id}
    stack: list[tuple[str, list[str]]] = [(memory_id, _predecessors(con, memory_id, seen))]
    while stack:   # depth first: every predecessor is deleted before what it points at
        current, pending = stack[-1]
        if pending:
            pred = pending.pop()
            seen.add(pred)
            stack.append((pred, _predecessors(con, pred, seen)))
        else:
            order.append(stack.pop()[0])
    deleted: list[Snapshot] = []
    for mid in order:
        snap = snapshot(con, mid)
        deleted.append(snap)
        recent.forget(con, mid)
        _delete_vector(con, snap.row["seq"])
        con.execute(q("delete_memory"), {"id": mid})
    return deleted


def _predecessors(con: "apsw.Connection", memory_id: str, seen: set[str]) -> list[str]:
    """The memories that name `memory_id` as their successor and are not yet visited, last to be taken first."""
    found = [pred for (pred,) in con.execute(q("predecessors"), {"id": memory_id}).fetchall() if pred not in seen]
    return list(reversed(found))


def restore(con: "apsw.Connection", snap: Snapshot) -> None:
    """Put a memory back exactly as the snapshot has it: every column, the searchable and parked vectors."""
    row = snap.row
    params = {k: v for k, v in row.items() if k != "content_hash"}
    if _row(con, row["id"]) is None:
        con.execute(q("reinsert_memory"), params)
        recent.put_back(con, snap.recent)
    else:
        con.execute(q("restore_memory"), params)
        recent.move(con, row["id"], row["domain"])
        citations.move_domain(con, row["id"], row["domain"])
    live, parked = snap.vector, snap.parked
    if snap.vector_was_parked:
        found = con.execute(q("parked_vector"), {"seq": row["seq"]}).fetchone()
        live, parked = (bytes(found[0]) if found else None), None
    con.execute(q("unpark_vector"), {"seq": row["seq"]})
    if parked is not None:
        con.execute(q("park_vector"), {"seq": row["seq"], "embedding": parked})
    set_vector(con, row["seq"], row["namespace"], row["domain"], live if row["status"] == "active" else None)

def active_owner(con: "apsw.Connection", domain: str, namespace: str, content_hash: str) -> str | None:
    """The id of the active memory of a scope with this normalized content, if any."""
    found = exact_match(con, content_hash, namespace, domain)
    return found[0] if found else None


# ------------------------------------------------------------------------------------------------ reads

def exact_match(con: "apsw.Connection", content_hash: str, namespace: str, domain: str) -> tuple[str, str] | None:
    """(id, content) of the active memory of a scope with this normalized content (the exact tier), or None."""
    row = con.execute(q("find_exact_match"),
                      {"content_hash": content_hash, "namespace": namespace, "domain": domain}).fetchone()
    return (row[0], row[1]) if row else None


def newest_seq(con: "apsw.Connection", namespaces: Sequence[str] = (), domain: str | None = None) -> int:
    """The newest memory row (its seq; 0 for none): a check remembers it, and its re-check under the write lock
    looks at the rows written after it (`written_since`, `vectors.written_since`). On PostgreSQL, where writers of
    other scopes commit meanwhile (`immediate` with scopes), the newest of the check's scopes, `namespaces` of
    `domain` (the smallest of theirs): every row of those scopes up to it was committed."""
    if namespaces and domain is not None and is_postgres_connection(con):
        return con.execute(q("newest_seq_of_scopes", "postgresql"),
                           {"namespaces": list(namespaces), "domain": domain}).fetchone()[0]
    return con.execute(q("max_memory_seq")).fetchone()[0]


def written_since(con: "apsw.Connection", seq: int, namespace: str, domain: str) -> list[tuple[str, str]]:
    """(id, content) of the active memories of a scope written after row `seq`."""
    return con.execute(q("new_memories_in_scope"), {"after": seq, "namespace": namespace, "domain": domain}
                       ).fetchall()


def listed(con: "apsw.Connection", namespace: str | None = None, domain: str | None = None,
           status: str | None = "active", limit: int = 100) -> list[Memory]:
    """Memories, newest first, filtered by whichever of namespace, domain and status is given."""
    params = {"namespace": namespace, "domain": domain, "status": status, "limit": limit}
    return [Memory.from_row(r) for r in dict_rows(con.execute(q("list_memories"), params))]


def by_ids(con: "apsw.Connection", ids: list[str]) -> dict[str, Memory]:
    """The memories with these ids (any status), by id."""
    if not ids:
        return {}
    rows = dict_rows(con.execute(q("memories_by_ids"), {"ids": json.dumps(ids)}))
    return {r["id"]: Memory.from_row(r) for r in rows}


def most_important(con: "apsw.Connection", domain: str, limit: int) -> list[Memory]:
    """A domain's active memories in ranking order (importance first): the session-start index's candidates."""
    return [Memory.from_row(r) for r in dict_rows(con.execute(q("top_memories"), {"domain": domain,
                                                                                  "limit": limit}))]


def namespaces_in_use(con: "apsw.Connection", domain: str, namespaces: list[str]) -> tuple[str, ...]:
    """Those of `namespaces` holding an active memory of `domain`."""
    return tuple(r[0] for r in con.execute(q("namespaces_in_use"), {"namespaces": json.dumps(namespaces),
                                                                     "domain": domain}))


def scopes(con: "apsw.Connection", namespace: str | None, domain: str | None) -> list[tuple[str, str, int]]:
    """(namespace, domain, active memories) of every scope with active memories, filtered when given."""
    return con.execute(q("active_scopes"), {"namespace": namespace, "domain": domain}).fetchall()


def in_scope(con: "apsw.Connection", namespace: str, domain: str) -> list[Memory]:
    """The active memories of one scope."""
    return [Memory.from_row(r) for r in dict_rows(con.execute(q("scope_memories"),
                                                              {"namespace": namespace, "domain": domain}))]


def count_active(con: "apsw.Connection", namespace: str | None, domain: str | None) -> int:
    return con.execute(q("count_active"), {"namespace": namespace, "domain": domain}).fetchone()[0]


def active_in_domain(con: "apsw.Connection", domain: str) -> int:
    """How many active memories `domain` holds."""
    return con.execute(q("active_in_domain"), {"domain": domain}).fetchone()[0]


def ids_in_domain(con: "apsw.Connection", domain: str) -> list[str]:
    """Every memory of a domain, whatever its status."""
    return [r[0] for r in con.execute(q("domain_memory_ids"), {"domain": domain}).fetchall()]


def hashes(con: "apsw.Connection") -> list[tuple[str, str, str]]:
    """(id, content, stored content hash) of every memory."""
    return con.execute(q("all_hashes")).fetchall()


def purge_text_index(con: "apsw.Connection") -> None:
    """Rebuild the full-text index from the memories (no replaced text stays in it)."""
    con.execute(q("purge_fts"))


def require(con: "apsw.Connection", memory_id: str) -> Memory:
    """A memory by id (any status); NotFound when there is none (or the id cannot be one)."""
    if not isinstance(memory_id, str) or len(memory_id) > 100:
        raise NotFound(f"no memory with id {str(memory_id)[:100]!r}")
    memory = get(con, memory_id)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id!r}")
    return memory


def produced_by(con: "apsw.Connection", domain: str, session_id: str | None, source: str | None
                ) -> list[tuple[str, str]]:
    """(id, namespace) of the active memories of a domain one session or one source produced."""
    return con.execute(q("produced_by"), {"domain": domain, "session_id": session_id, "source": source}).fetchall()


def outdated_by_any(con: "apsw.Connection", memory_ids: list[str]) -> list[str]:
    """The active memories one of these memories marked as outdated (a changed fact)."""
    return [r[0] for r in con.execute(q("outdated_by_any"), {"ids": json.dumps(memory_ids)})]
