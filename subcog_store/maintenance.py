"""Maintenance: embed memories that lack a vector, forget a memory, move memories between domains."""
from __future__ import annotations

from typing import TYPE_CHECKING

from subcog_store.db import memories as writer
from subcog_store.db.connection import immediate
from subcog_store.clock import iso
from subcog_store.db.sqlfiles import q
from subcog_store.errors import InvalidInput, SubcogError
from subcog_store.text.namespaces import canonical_domain

if TYPE_CHECKING:
    from subcog_store.store import Store


def reembed(store: "Store", batch: int = 256) -> int:
    """Embed every active memory without a vector (and rebuild stale sign bits); returns how many were embedded."""
    with immediate(store.con):
        for (seq,) in store.con.execute(q("bits_mismatch")).fetchall():
            writer.rebuild_bits(store.con, seq)
    if store.embedder is None:
        raise SubcogError(f"the model is not available: {store.embedder_error or 'semantic tier disabled'}")
    missing = [r[0] for r in store.con.execute(q("active_without_vector"))]
    done = 0
    for start in range(0, len(missing), batch):
        memories = [store.get(mid) for mid in missing[start:start + batch]]
        vectors = store.embedder.embed_batch([m.content for m in memories])
        with immediate(store.con):
            for memory, vector in zip(memories, vectors):
                if store.get(memory.id).status == "active":
                    writer.set_vector(store.con, memory.seq, memory.namespace, memory.domain, vector.tobytes())
                    done += 1
    return done


def forget(store: "Store", memory_id: str, reason: str | None = None) -> int:
    """Retire a memory (status deleted, out of search), logged and reversible with `reverse`; returns the
    decision id."""
    memory = store.get(memory_id)
    if memory.status != "active":
        raise InvalidInput(f"memory {memory.id} is {memory.status}, not active; nothing to forget")
    now = iso(store.clock())
    with immediate(store.con):
        undo = writer.Undo(before=[writer.retire(store.con, memory.id, "deleted", now)])
        undo.expect(memory.id, "deleted", None)
        return writer.log_decision(store.con, writer.Decision(
            decided_at=now, domain=memory.domain, namespace=memory.namespace, policy="forget",
            decision="forgotten", new_content=memory.content, new_hash=memory.content_hash,
            matched_memory_id=memory.id, matched_content=memory.content, memory_id=memory.id,
            reasoning=reason or "forgotten on request", undo=undo))

def move_domain(store: "Store", source: str, target: str) -> dict:
    """Move every memory of domain `source` to `target` (one logged, reversible decision each). A memory
    whose text is already active in `target` is merged into that one."""
    source, target = canonical_domain(source), canonical_domain(target)
    if source == target:
        raise InvalidInput("the source and target domains are the same")
    ids = [r[0] for r in store.con.execute(q("domain_memory_ids"), {"domain": source}).fetchall()]
    moved = merged = 0
    for memory_id in ids:
        now = iso(store.clock())
        with immediate(store.con):
            memory = writer.get(store.con, memory_id)
            if memory is None or memory.domain != source:
                continue
            owner = writer.active_owner(store.con, target, memory.namespace, memory.content_hash) \
                if memory.status == "active" else None
            # the snapshot before anything changed: retire() takes it when the text merges into `owner`
            first = writer.retire(store.con, memory.id, "merged", now, successor_id=owner) if owner else None
            moved_from = writer.move(store.con, memory.id, target, now)
            undo = writer.Undo(before=[first or moved_from])
            undo.expect(memory.id, "merged" if owner else memory.status, owner or memory.successor_id)
            merged += bool(owner)
            writer.log_decision(store.con, writer.Decision(
                decided_at=now, domain=target, namespace=memory.namespace, policy="maintenance",
                decision="moved", new_content=memory.content, new_hash=memory.content_hash,
                matched_memory_id=owner, memory_id=memory.id, confirmed=True, undo=undo,
                reasoning=f"moved from domain {source} to {target}" + (f"; its text is already active "
                                                                       f"there as {owner}" if owner else "")))
            moved += 1
    return {"source": source, "target": target, "moved": moved, "merged": merged}
