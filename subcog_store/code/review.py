"""Review of the memories the code no longer bears out: list them with their reasons, and act on one.

- still true: the claims the code contradicts are no longer checked (the file, symbol or value may have moved
  on while the memory's point still holds); its mark is cleared;
- forget it: `subcog-store forget` (logged, reversible);
- record the new fact: the new text is captured as any memory is (duplicate check, decision log), the old one is
  superseded by it in a decision of its own (`reverse` brings it back), and the new one is cited at once.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from subcog_store.clock import iso
from subcog_store.code.record import cite_captured
from subcog_store.db import citations, decisions, memories as writer
from subcog_store.db.connection import immediate
from subcog_store.dedup import write
from subcog_store.errors import InvalidInput
from subcog_store.inputs import CaptureRequest, prepare

if TYPE_CHECKING:
    from subcog_store.core import Core

NEW_FACT_SOURCE = "verify"


def listed(store: "Core", domain: str, limit: int = 100) -> list[dict]:
    """The active memories of `domain` the code no longer bears out, with URN and reason, latest marked first."""
    rows = citations.outdated(store.con, domain, limit)
    for row in rows:
        row["urn"] = writer.urn(domain, row["namespace"], row["id"])
    return rows


def _marked(store: "Core", memory_id: str):
    memory = writer.require(store.con, memory_id)
    if memory.status != "active":
        raise InvalidInput(f"memory {memory.id} is {memory.status}, not active; nothing to review")
    code = citations.of_memory(store.con, memory.id)
    if not code or not code["outdated"]:
        raise InvalidInput(f"memory {memory.id} is not marked as possibly outdated")
    return memory, code


def still_true(store: "Core", memory_id: str) -> dict:
    """The user confirms a marked memory: its contradicted claims are dropped, its mark cleared."""
    memory, code = _marked(store, memory_id)
    with immediate(store.con):
        dropped = citations.confirm(store.con, memory.id, iso(store.clock()))
    return {"id": memory.id, "urn": memory.urn, "was": code["outdated"], "claims_dropped": dropped}


def new_fact(store: "Core", memory_id: str, text: str, root: Path | None) -> dict:
    """Record the fact that replaces a marked memory: capture `text` in its scope, supersede the old one by it
    (one reversible decision), cite the new one against the project at `root` (when given)."""
    memory, code = _marked(store, memory_id)
    result = write.capture_prepared(store, prepare(CaptureRequest(
        text, memory.namespace, memory.domain, memory.importance, memory.tags, NEW_FACT_SOURCE)))
    successor = result.memory_id
    if not successor or successor == memory.id:
        raise InvalidInput(f"the new fact was not stored ({result.decision}); memory {memory.id} is unchanged")
    now = iso(store.clock())
    with immediate(store.con):
        current = writer.get(store.con, memory.id)
        if current is None or current.status != "active":
            raise InvalidInput(f"memory {memory.id} changed meanwhile; nothing superseded")
        undo = decisions.Undo(before=[writer.retire(store.con, memory.id, "superseded", now, successor_id=successor)])
        undo.expect(memory.id, "superseded", successor)
        decision = decisions.log_decision(store.con, decisions.Decision(
            decided_at=now, domain=memory.domain, namespace=memory.namespace, policy="verify", decision="replaced",
            new_content=text, matched_memory_id=memory.id, matched_content=memory.content, memory_id=successor,
            reasoning=f"the code no longer bore it out ({code['outdated']}); the new fact was recorded on review",
            confirmed=True, undo=undo, members=decisions.members([memory.id], "retired")))
    cited = None
    if root is not None and result.stored:
        cited = cite_captured(store, [successor], root, memory.domain, time.monotonic() + 10.0).to_dict()
    return {"old": memory.urn, "new": writer.urn(memory.domain, memory.namespace, successor),
            "capture": result.decision, "decision_id": decision, "citations": cited}
