"""Review of the decision log: list unreviewed decisions, confirm them, or reverse them (no decision is final)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from subcog_store.dedup.check import urn
from subcog_store.clock import iso
from subcog_store.db.connection import immediate
from subcog_store.errors import InvalidInput, NotFound
from subcog_store.text.normalize import content_hash
from subcog_store.dedup.policies import REJECTIONS
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    from subcog_store.store import Store

LOG_COLUMNS = ("id", "decided_at", "domain", "namespace", "policy", "decision", "new_content", "new_hash",
               "matched_memory_id", "matched_content", "similarity", "memory_id", "reasoning", "review_status",
               "reviewed_at", "undo")


@dataclass
class ReverseReport:
    decision_id: int
    changed: bool
    message: str
    restored: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    stored: str | None = None


def decision(store: "Store", decision_id: int) -> dict:
    row = store.con.execute(q("get_decision"), {"id": decision_id}).fetchone()
    if row is None:
        raise NotFound(f"no decision with id {decision_id}")
    return dict(zip(LOG_COLUMNS, row))


def unreviewed(store: "Store", limit: int = 100, include_all: bool = False) -> list[dict]:
    rows = store.con.execute(q("list_decisions"), {"all": int(include_all), "limit": limit})
    return [dict(zip(LOG_COLUMNS, r)) for r in rows]


def confirm(store: "Store", decision_id: int) -> dict:
    entry = decision(store, decision_id)
    if entry["review_status"] == "reversed":
        raise InvalidInput(f"decision {decision_id} was reversed; it cannot be confirmed")
    with immediate(store.con):
        store.con.execute(q("set_review_status"), {"id": decision_id, "status": "confirmed",
                                                   "now": iso(store.clock())})
    return decision(store, decision_id)


def reverse(store: "Store", decision_id: int) -> ReverseReport:
    """Undo a decision: store a rejected text, restore replaced or merged memories, or retire a kept one."""
    entry = decision(store, decision_id)
    if entry["review_status"] == "reversed":
        return ReverseReport(decision_id, False, f"decision {decision_id} is already reversed")
    if entry["policy"] == "batch":
        from subcog_store.batch.run import unmerge
        unmerge(store, decision_id)
        return ReverseReport(decision_id, True, f"unmerged batch decision {decision_id}")
    undo = json.loads(entry["undo"] or "{}")
    now = iso(store.clock())
    with immediate(store.con):
        if entry["decision"] in REJECTIONS:
            report = _store_rejected(store, entry, undo)
        else:
            report = _undo_write(store, entry, undo, now)
        if report.changed:
            store.con.execute(q("set_review_status"), {"id": decision_id, "status": "reversed", "now": now})
    return report


def _store_rejected(store: "Store", entry: dict, undo: dict) -> ReverseReport:
    candidate = undo.get("candidate") or {"content": entry["new_content"]}
    content = candidate["content"]
    hit = store.con.execute(q("find_exact_match"), {"content_hash": content_hash(content),
                                                    "domain": entry["domain"], "namespace": entry["namespace"]})
    found = hit.fetchone()
    if found:
        return ReverseReport(entry["id"], False, f"not stored: an active memory with the same content exists "
                                                 f"({urn(entry['domain'], entry['namespace'], found[0])})")
    from subcog_store.dedup.check import CheckInputs
    inputs = CheckInputs(content, content_hash(content), entry["namespace"], entry["domain"], store.clock())
    meta = {"importance": candidate.get("importance", 0.5), "tags": candidate.get("tags", []),
            "source": candidate.get("source"), "session_id": candidate.get("session_id")}
    vector = store.embed(content) if store.settings.dedup_semantic_enabled else None
    memory_id = store._insert_memory(inputs, content, meta, vector, iso(inputs.now))
    return ReverseReport(entry["id"], True, f"stored the rejected text as "
                                            f"{urn(entry['domain'], entry['namespace'], memory_id)}",
                         stored=memory_id)


def _undo_write(store: "Store", entry: dict, undo: dict, now: str) -> ReverseReport:
    retired_rows = [r["row"] for r in undo.get("retired", [])]
    result_id = undo.get("stored") or entry["memory_id"]
    for row in retired_rows:
        clash = store.con.execute(q("find_exact_match"), {"content_hash": row["content_hash"],
                                                          "domain": row["domain"], "namespace": row["namespace"]})
        found = clash.fetchone()
        if found and found[0] != result_id:
            return ReverseReport(entry["id"], False, f"not reversed: restoring {row['id']} would duplicate the "
                                                     f"active memory {found[0]}")
    retired = []
    if result_id and store._status(result_id) == "active":
        store._retire(result_id, "deleted", now)
        retired.append(result_id)
    for row in retired_rows:
        _restore(store, row)
    restored = [row["id"] for row in retired_rows]
    what = f"restored {', '.join(restored)}" if restored else "nothing to restore"
    return ReverseReport(entry["id"], True, f"{what}; retired {', '.join(retired) or 'nothing'}",
                         restored=restored, retired=retired)


def _restore(store: "Store", row: dict) -> None:
    """Put a retired memory back exactly as it was, with its vector back in search."""
    store.con.execute(q("restore_memory"), {k: row[k] for k in ("id", "status", "updated_at", "successor_id",
                                                                 "importance", "tags")})
    vector = store.con.execute("select embedding from retired_vectors where memory_seq = ?", (row["seq"],)).fetchone()
    if vector and row["status"] == "active":
        store.con.execute(q("delete_vector"), {"seq": row["seq"]})
        store.con.execute(q("insert_vector"), {"seq": row["seq"], "namespace": row["namespace"],
                                               "domain": row["domain"], "embedding": vector[0]})
        store.con.execute("delete from retired_vectors where memory_seq = ?", (row["seq"],))
