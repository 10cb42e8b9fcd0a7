"""Review of the decision log: list unreviewed decisions, confirm them, or reverse them (no decision is final).

One reverse for every decision, store-time or batch: a rejected text is stored; a decision that changed
memories puts each back exactly as its undo snapshot has it (rows, vectors, recent captures) and retires the
memory it created. A memory changed again by a later decision blocks the reverse (undo that one first).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from subcog_store.clock import iso
from subcog_store.db import decisions, memories as writer
from subcog_store.db.connection import immediate
from subcog_store.dedup.policies import REJECTIONS
from subcog_store.errors import InvalidInput, NotFound
from subcog_store.text.normalize import content_hash

if TYPE_CHECKING:
    from subcog_store.core import Core


@dataclass
class ReverseReport:
    decision_id: int
    changed: bool
    message: str
    restored: list[str] = field(default_factory=list)   # back in the status they had before the decision
    retired: list[str] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)   # otherwise put back (a survivor's text, a link, a row)
    stored: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def decision(store: "Core", decision_id: int) -> dict:
    row = decisions.get_row(store.con, _decision_id(decision_id))
    if row is None:
        raise NotFound(f"no decision with id {decision_id}")
    return row


def _decision_id(value: object) -> int:
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise InvalidInput(f"decision id {value!r} is not a number") from None
    if not 1 <= number < 1 << 63:
        raise NotFound(f"no decision with id {value}")
    return number


def unreviewed(store: "Core", limit: int = 100, include_all: bool = False) -> list[dict]:
    return decisions.unreviewed(store.con, limit, include_all)


def confirm(store: "Core", decision_id: int) -> dict:
    entry = decision(store, decision_id)
    if entry["review_status"] == "reversed":
        raise InvalidInput(f"decision {decision_id} was reversed; it cannot be confirmed")
    with immediate(store.con):
        decisions.set_review_status(store.con, entry["id"], "confirmed", iso(store.clock()))
    return decision(store, decision_id)


def reverse(store: "Core", decision_id: int, *, batch_only: bool = False) -> ReverseReport:
    """Undo a decision: store a rejected text, or put back the memories it changed and retire what it stored.

    `batch_only` (the `unmerge` command) refuses anything but a batch merge."""
    entry = decision(store, decision_id)
    if batch_only and (entry["policy"] != "batch" or entry["decision"] != "merged"):
        raise InvalidInput(f"decision {entry['id']} is not a batch merge ({entry['policy'] or 'no policy'}/"
                           f"{entry['decision']}); only `subcog-store dedup` merges can be unmerged")
    if entry["decision"] == "redacted":
        raise InvalidInput(f"decision {entry['id']} is a redaction; reversing it would put the secret back")
    if entry["review_status"] == "reversed":
        if batch_only:
            raise InvalidInput(f"decision {entry['id']} was already reversed")
        return ReverseReport(entry["id"], False, f"decision {entry['id']} is already reversed")
    undo = decisions.Undo.from_json(entry["undo"])
    now = iso(store.clock())
    with immediate(store.con):
        if entry["decision"] in REJECTIONS or entry["decision"] == "in_batch":
            report = _store_rejected(store, entry, undo, now)
        else:
            report = _undo_write(store, entry, undo, now, strict=batch_only)
        if report.changed:
            decisions.set_review_status(store.con, entry["id"], "reversed", now)
    return report


def _store_rejected(store: "Core", entry: dict, undo: decisions.Undo, now: str) -> ReverseReport:
    candidate = undo.candidate or {"content": entry["new_content"]}
    content = candidate["content"]
    owner = writer.active_owner(store.con, entry["domain"], entry["namespace"], content_hash(content))
    if owner:
        return ReverseReport(entry["id"], False, f"not stored: an active memory with the same content exists "
                                                 f"({writer.urn(entry['domain'], entry['namespace'], owner)})")
    vector = store.vectors.embed(content) if store.settings.dedup_semantic_enabled else None
    memory_id = writer.new_id(store.con)
    writer.insert(store.con, memory_id=memory_id, domain=entry["domain"], namespace=entry["namespace"],
                  content=content, importance=candidate.get("importance", 0.5), tags=candidate.get("tags", []),
                  source=candidate.get("source"), session_id=candidate.get("session_id"),
                  created_at=candidate.get("created_at") or now, now=now, captured_at=store.clock(),
                  vector=vector.tobytes() if vector is not None else None)
    return ReverseReport(entry["id"], True, f"stored the rejected text as "
                                            f"{writer.urn(entry['domain'], entry['namespace'], memory_id)}",
                         stored=memory_id)


def _refuse(entry: dict, strict: bool, message: str) -> ReverseReport:
    if strict:
        raise InvalidInput(f"decision {entry['id']}: {message}")
    return ReverseReport(entry["id"], False, message)


def _undo_write(store: "Core", entry: dict, undo: decisions.Undo, now: str, strict: bool) -> ReverseReport:
    con = store.con
    touched = {s.id for s in undo.before} | ({undo.stored} if undo.stored else set())
    for snap in undo.before:
        if snap.row["status"] != "active":
            continue
        owner = writer.active_owner(con, snap.row["domain"], snap.row["namespace"], snap.row["content_hash"])
        if owner and owner not in touched:
            return _refuse(entry, strict, f"not reversed: restoring {snap.id} would make its text active twice "
                                          f"(memory {owner} holds the same text now); nothing was changed")
    changed = decisions.changed_since(con, undo)
    if changed:
        return _refuse(entry, strict, f"not reversed: memory {changed} changed after decision {entry['id']} (by a "
                                      "later decision); reverse that one first; nothing was changed")
    retired = []
    stored = writer.get(con, undo.stored) if undo.stored else None
    if stored and stored.status == "active" and stored.id not in {s.id for s in undo.before}:
        writer.retire(con, stored.id, "deleted", now)
        retired.append(stored.id)
    for snap in undo.before:  # in order: a batch survivor before its members, a member before its predecessors
        writer.restore(con, snap)
    restored = [s.id for s in undo.before if s.id in undo.after and undo.after[s.id][0] != s.row["status"]]
    reverted = [s.id for s in undo.before if s.id not in restored]
    what = f"restored {', '.join(restored)}" if restored else "nothing to restore"
    if reverted:
        what += f"; put back as they were {', '.join(reverted)}"
    return ReverseReport(entry["id"], True, f"{what}; retired {', '.join(retired) or 'nothing'}",
                         restored=restored, retired=retired, reverted=reverted)
