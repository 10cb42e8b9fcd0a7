"""The decision log: one row per decision (`dedup_log`) with the memories it touched (`decision_members`), its
review status, and the one undo format every decision uses (`Undo`: the snapshots of the memories it changed and
the state it left them in, so a later change is detected).

Writes run inside the caller's write transaction (`db.connection.immediate`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from subcog_store.db.connection import dict_row, dict_rows
from subcog_store.db.memories import Snapshot, get
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw

UNDO_VERSION = 2
# The decisions a copy or an import counts as "stored" (a verify policy's `verifier_keep` stores too but has never
# been counted there; the reports' figures are left as they were).
STORED_DECISIONS = ("stored", "changed_fact", "replaced", "merged")

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


def status_logged(con: "apsw.Connection", domain: str, hash_hex: str) -> bool:
    """A status line with this content hash is already in the domain's decision log."""
    return con.execute(q("status_logged"), {"domain": domain, "hash": hash_hex}).fetchone() is not None


def redact_decision(con: "apsw.Connection", decision_id: int, new_content: str | None, matched_content: str | None,
                    reasoning: str | None, undo: str | None) -> None:
    """A logged decision's texts (and undo snapshots) with secrets replaced (the `redact` command)."""
    con.execute(q("redact_decision"), {"id": decision_id, "new_content": new_content,
                                       "matched_content": matched_content, "reasoning": reasoning, "undo": undo})


def set_review_status(con: "apsw.Connection", decision_id: int, status: str, now: str) -> None:
    con.execute(q("set_review_status"), {"id": decision_id, "status": status, "now": now})




def changed_since(con: "apsw.Connection", undo: Undo) -> str | None:
    """The first memory whose state differs from what the decision left (a later decision changed it)."""
    for memory_id, (status, successor) in undo.after.items():
        now = get(con, memory_id)
        state = [now.status, now.successor_id] if now else [None, None]
        if status is None and now is None:
            continue
        if state[0] != status or (status is not None and state[1] != successor):
            return memory_id
    return None


def members(ids: Iterable[str], role: str) -> list[tuple[str, str]]:
    return [(memory_id, role) for memory_id in ids]


def get_row(con: "apsw.Connection", decision_id: int) -> dict | None:
    """One decision-log row by id, as a dict of its columns."""
    return dict_row(con.execute(q("get_decision"), {"id": decision_id}))


def unreviewed(con: "apsw.Connection", limit: int = 100, include_all: bool = False) -> list[dict]:
    """Decisions awaiting review (every decision with `include_all`), newest first."""
    return dict_rows(con.execute(q("list_decisions"), {"all": int(include_all), "limit": limit}))


def texts(con: "apsw.Connection") -> list[tuple]:
    """(id, new_content, matched_content, reasoning, undo) of every decision (the `redact` command)."""
    return con.execute(q("decision_texts")).fetchall()


def audit_sql() -> str:
    """The decision log as the stock sqlite3 shell shows it (`make demo`), one statement."""
    return q("audit_decisions").rstrip(";") + ";"
