"""The one writer of memory rows: insert, retire, link, rewrite, restore, hard delete, the undo snapshot and the
decision log.

Nothing else writes `memories`, `memory_vectors`, `retired_vectors`, a memory's `recent_captures` rows,
`dedup_log` or `decision_members`. Every function runs inside the caller's write transaction
(`db.connection.immediate`) and takes plain values. One undo format serves every decision: the snapshots of
the memories it changed, as they were, and the state it left them in (so a later change is detected).
"""
# Lazy imports: the secret patterns compile only when a memory is shown.
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Iterable

from subcog_store.db.connection import dict_row, dict_rows
from subcog_store.db.sqlfiles import q
from subcog_store.errors import DatabaseError

if TYPE_CHECKING:
    import apsw

UNDO_VERSION = 2


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
    vector_was_parked: bool = False    # undo rows written before UNDO_VERSION 2: the live vector is the parked one

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
    recent = dict_rows(con.execute(q("recent_captures_of"), {"id": memory_id}))
    return Snapshot(row, bytes(live[0]) if live else None, bytes(parked[0]) if parked else None, recent)


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
    con.execute(q("insert_recent_capture"), {"content_hash": stored_hash, "memory_id": memory_id,
                                             "namespace": namespace, "domain": domain, "captured_at": captured_at})
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


def link_successor(con: "apsw.Connection", memory_id: str, successor_id: str, now: str) -> Snapshot:
    """Mark an active memory as outdated by a newer one (it stays searchable, ranked below its successor)."""
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
    con.execute(q("move_recent_captures"), {"id": memory_id, "domain": domain})
    return before


def hard_delete(con: "apsw.Connection", memory_id: str) -> list[Snapshot]:
    """Delete a memory and, first, what points at it (retired predecessors, recent captures); returns their
    snapshots in deletion order."""
    deleted: list[Snapshot] = []
    for (pred,) in con.execute(q("predecessors"), {"id": memory_id}).fetchall():
        deleted += hard_delete(con, pred)
    snap = snapshot(con, memory_id)
    deleted.append(snap)
    con.execute(q("delete_recent_captures_of"), {"id": memory_id})
    _delete_vector(con, snap.row["seq"])
    con.execute(q("delete_memory"), {"id": memory_id})
    return deleted


def restore(con: "apsw.Connection", snap: Snapshot) -> None:
    """Put a memory back exactly as the snapshot has it: every column, the searchable and parked vectors."""
    row = snap.row
    params = {k: v for k, v in row.items() if k != "content_hash"}
    if _row(con, row["id"]) is None:
        con.execute(q("reinsert_memory"), params)
        for capture in snap.recent:
            con.execute(q("reinsert_recent_capture"), capture)
    else:
        con.execute(q("restore_memory"), params)
        con.execute(q("move_recent_captures"), {"id": row["id"], "domain": row["domain"]})
    live, parked = snap.vector, snap.parked
    if snap.vector_was_parked:
        found = con.execute(q("parked_vector"), {"seq": row["seq"]}).fetchone()
        live, parked = (bytes(found[0]) if found else None), None
    con.execute(q("unpark_vector"), {"seq": row["seq"]})
    if parked is not None:
        con.execute(q("park_vector"), {"seq": row["seq"], "embedding": parked})
    set_vector(con, row["seq"], row["namespace"], row["domain"], live if row["status"] == "active" else None)


# ------------------------------------------------------------------------------------------------ decisions

@dataclass
class Undo:
    """How to reverse a decision: the text it did not store, the memories it changed (as they were), the
    memory it created, and the state it left each memory in (a later change blocks the undo)."""

    candidate: dict | None = None
    before: list[Snapshot] = field(default_factory=list)
    stored: str | None = None
    after: dict[str, list] = field(default_factory=dict)   # id -> [status, successor_id]; [None, None]: deleted

    def expect(self, memory_id: str, status: str | None, successor_id: str | None = None) -> None:
        self.after[memory_id] = [status, successor_id]

    def to_json(self) -> str:
        return json.dumps({"v": UNDO_VERSION, "candidate": self.candidate,
                           "before": [s.to_json() for s in self.before], "stored": self.stored,
                           "after": self.after})

    @classmethod
    def from_json(cls, text: str | None) -> "Undo":
        """Reads every format this project wrote: v2, the store-time `retired` rows, the batch snapshots."""
        data = json.loads(text or "{}")
        if data.get("v") == UNDO_VERSION:
            return cls(data.get("candidate"), [Snapshot.from_json(s) for s in data["before"]], data.get("stored"),
                       data.get("after", {}))
        if "survivor" in data:  # a batch merge before v2
            survivor = data["survivor"]["row"]["id"]
            undo = cls(None, [Snapshot.from_json(data["survivor"])])
            undo.expect(survivor, "active", data["survivor"]["row"]["successor_id"])
            deleted = {s["row"]["id"] for s in data.get("deleted", [])}
            for snap in data["members"]:
                undo.before.append(Snapshot.from_json(snap))
                undo.expect(snap["row"]["id"], None if snap["row"]["id"] in deleted else "merged", survivor)
            # predecessors of hard-deleted members, restored after what they point at
            undo.before += [Snapshot.from_json(s) for s in reversed(data.get("deleted", []))
                            if s["row"]["id"] not in {b.id for b in undo.before}]
            return undo
        return cls(data.get("candidate"), [Snapshot.from_json(r) for r in data.get("retired", [])],
                   data.get("stored"))


@dataclass
class Decision:
    """One row of the decision log, with the memories it touched (`members`: (memory id, role))."""

    decided_at: str
    domain: str
    namespace: str
    policy: str | None
    decision: str
    new_content: str | None = None
    new_hash: str | None = None
    matched_memory_id: str | None = None
    matched_content: str | None = None
    similarity: float | None = None
    memory_id: str | None = None
    reasoning: str | None = None
    confirmed: bool = False
    undo: Undo | None = None
    members: list[tuple[str, str]] = field(default_factory=list)


def log_decision(con: "apsw.Connection", d: Decision) -> int:
    decision_id = con.execute(q("log_decision"), {
        "decided_at": d.decided_at, "domain": d.domain, "namespace": d.namespace, "policy": d.policy,
        "decision": d.decision, "new_content": d.new_content, "new_hash": d.new_hash,
        "matched_memory_id": d.matched_memory_id, "matched_content": d.matched_content,
        "similarity": d.similarity, "memory_id": d.memory_id, "reasoning": d.reasoning,
        "review_status": "confirmed" if d.confirmed else "unreviewed",
        "reviewed_at": d.decided_at if d.confirmed else None,
        "undo": d.undo.to_json() if d.undo else None}).fetchone()[0]
    for memory_id, role in d.members:
        con.execute(q("add_decision_member"), {"decision_id": decision_id, "memory_id": memory_id, "role": role})
    return decision_id


def redact_decision(con: "apsw.Connection", decision_id: int, new_content: str | None, matched_content: str | None,
                    reasoning: str | None, undo: str | None) -> None:
    """A logged decision's texts (and undo snapshots) with secrets replaced (the `redact` command)."""
    con.execute(q("redact_decision"), {"id": decision_id, "new_content": new_content,
                                       "matched_content": matched_content, "reasoning": reasoning, "undo": undo})


def set_review_status(con: "apsw.Connection", decision_id: int, status: str, now: str) -> None:
    con.execute(q("set_review_status"), {"id": decision_id, "status": status, "now": now})


def active_owner(con: "apsw.Connection", domain: str, namespace: str, content_hash: str) -> str | None:
    """The active memory of a scope with this normalized content, if any."""
    row = con.execute(q("find_exact_match"), {"content_hash": content_hash, "domain": domain,
                                              "namespace": namespace}).fetchone()
    return row[0] if row else None


def changed_since(con: "apsw.Connection", undo: Undo) -> str | None:
    """The first memory whose state differs from what the decision left (a later decision changed it)."""
    for memory_id, (status, successor) in undo.after.items():
        now = _row(con, memory_id)
        state = [now["status"], now["successor_id"]] if now else [None, None]
        if status is None and now is None:
            continue
        if state[0] != status or (status is not None and state[1] != successor):
            return memory_id
    return None


def members(ids: Iterable[str], role: str) -> list[tuple[str, str]]:
    return [(memory_id, role) for memory_id in ids]
