"""Maintenance: embed memories that lack a vector, forget a memory (or everything one session or source
produced), move memories between domains, redact secrets stored before a rule existed."""
# Lazy imports: the secret patterns compile only for `redact`.
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from subcog_store.db import decisions, hook_state, memories as writer, vectors
from subcog_store.db.connection import immediate, rewrite_file
from subcog_store.clock import iso
from subcog_store.errors import InvalidInput, SubcogError
from subcog_store.text.namespaces import canonical_domain
from subcog_store.text.normalize import content_hash

if TYPE_CHECKING:
    from subcog_store.core import Core

Progress = Callable[[int, int], None]   # (done, total): a command's progress bar


def _quiet(done: int, total: int) -> None:
    pass


def reembed(store: "Core", batch: int = 256, progress: Progress = _quiet) -> int:
    """Embed every active memory without a vector (and rebuild stale sign bits); returns how many were embedded."""
    with immediate(store.con):
        for seq in vectors.stale_bits(store.con):
            writer.rebuild_bits(store.con, seq)
    if store.vectors.embedder is None:
        raise SubcogError(f"the model is not available: {store.vectors.error or 'semantic tier disabled'}")
    missing = vectors.missing(store.con)
    done = 0
    for start in range(0, len(missing), batch):
        progress(start, len(missing))
        memories = [writer.require(store.con, mid) for mid in missing[start:start + batch]]
        embedded = store.vectors.embedder.embed_batch([m.content for m in memories])
        with immediate(store.con):
            for memory, vector in zip(memories, embedded):
                if writer.require(store.con, memory.id).status == "active":
                    writer.set_vector(store.con, memory.seq, memory.namespace, memory.domain, vector.tobytes())
                    done += 1
    progress(len(missing), len(missing))
    return done


def forget(store: "Core", memory_id: str, reason: str | None = None) -> int:
    """Retire a memory (status deleted, out of search), logged and reversible with `reverse`; returns the
    decision id."""
    memory = writer.require(store.con, memory_id)
    if memory.status != "active":
        raise InvalidInput(f"memory {memory.id} is {memory.status}, not active; nothing to forget")
    now = iso(store.clock())
    with immediate(store.con):
        undo = decisions.Undo(before=[writer.retire(store.con, memory.id, "deleted", now)])
        undo.expect(memory.id, "deleted", None)
        return decisions.log_decision(store.con, decisions.Decision(
            decided_at=now, domain=memory.domain, namespace=memory.namespace, policy="forget",
            decision="forgotten", new_content=memory.content, new_hash=memory.content_hash,
            matched_memory_id=memory.id, matched_content=memory.content, memory_id=memory.id,
            reasoning=reason or "forgotten on request", undo=undo))

def forget_produced(store: "Core", domain: str, *, session_id: str | None = None, source: str | None = None,
                    reason: str | None = None, dry_run: bool = False) -> dict:
    """Retire every active memory of `domain` that one session or one source produced, in one logged decision
    that `reverse` undoes whole; the facts they had marked as outdated are current again (and outdated again
    on reverse). Returns what was (dry run: would be) forgotten."""
    if not session_id and not source:
        raise InvalidInput("name the session (--session ID) or the source (--source S) whose memories to forget")
    what = " and ".join(x for x in (f"session {session_id}" if session_id else "",
                                    f"source {source}" if source else "") if x)
    now = iso(store.clock())
    with immediate(store.con):
        found = writer.produced_by(store.con, domain, session_id, source)
        ids = [mid for mid, _ in found]
        current_again = [mid for mid in writer.outdated_by_any(store.con, ids) if mid not in set(ids)] if ids else []
        result = {"domain": domain, "what": what, "forgotten": ids, "current_again": current_again,
                  "decision_id": None, "dry_run": dry_run}
        if dry_run or not ids:
            return result
        undo = decisions.Undo()
        for memory_id in ids:
            undo.before.append(writer.retire(store.con, memory_id, "deleted", now))
            undo.expect(memory_id, "deleted", None)
        for memory_id in current_again:
            undo.before.append(writer.link_successor(store.con, memory_id, None, now))
            undo.expect(memory_id, "active", None)
        namespaces = sorted({ns for _, ns in found})
        result["decision_id"] = decisions.log_decision(store.con, decisions.Decision(
            decided_at=now, domain=domain, namespace=namespaces[0] if len(namespaces) == 1 else "several",
            policy="forget", decision="forgotten", new_content=f"{len(ids)} memories of {what}",
            reasoning=(reason or f"everything {what} produced was forgotten on request")
            + (f"; {len(current_again)} facts they had updated are current again" if current_again else ""),
            undo=undo, members=decisions.members(ids, "retired") + decisions.members(current_again, "outdated")))
    return result


def move_domain(store: "Core", source: str, target: str, progress: Progress = _quiet) -> dict:
    """Move every memory of domain `source` to `target` (one logged, reversible decision each). A memory
    whose text is already active in `target` is merged into that one."""
    source, target = canonical_domain(source), canonical_domain(target)
    if source == target:
        raise InvalidInput("the source and target domains are the same")
    ids = writer.ids_in_domain(store.con, source)
    moved = merged = 0
    for n, memory_id in enumerate(ids):
        progress(n, len(ids))
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
            undo = decisions.Undo(before=[first or moved_from])
            undo.expect(memory.id, "merged" if owner else memory.status, owner or memory.successor_id)
            merged += bool(owner)
            decisions.log_decision(store.con, decisions.Decision(
                decided_at=now, domain=target, namespace=memory.namespace, policy="maintenance",
                decision="moved", new_content=memory.content, new_hash=memory.content_hash,
                matched_memory_id=owner, memory_id=memory.id, confirmed=True, undo=undo,
                reasoning=f"moved from domain {source} to {target}" + (f"; its text is already active "
                                                                       f"there as {owner}" if owner else "")))
            moved += 1
    return {"source": source, "target": target, "moved": moved, "merged": merged}


TEXT_KEYS = frozenset({"content", "new_content", "matched_content", "text"})  # where logged JSON holds texts


def redact_store(store: "Core", dry_run: bool = False, progress: Progress = _quiet) -> dict:
    """Apply the current secret rules to everything stored: memory texts (a text that becomes the same as another
    active memory of its scope is merged into it), the decision log with its undo snapshots, and hook run
    reports; then purge the full-text index and rewrite the file, so no replaced secret stays in its pages.
    Each changed memory gets a `redacted` decision (confirmed, with no undo: reversing would restore the secret).
    Returns the counts."""
    from subcog_store.text.redact import redact

    counts = {"secrets": 0, "memories": 0, "merged": 0, "decisions": 0, "hook_runs": 0, "dry_run": dry_run}
    con = store.con
    memories, texts_of_decisions, runs = writer.hashes(con), decisions.texts(con), hook_state.run_reports(con)
    total = len(memories) + len(texts_of_decisions) + len(runs)
    for i, (memory_id, content, _) in enumerate(memories):
        progress(i, total)
        text, n = redact(content)
        if not n:
            continue
        counts["secrets"] += n
        counts["memories"] += 1
        if not dry_run:
            counts["merged"] += _redact_memory(store, memory_id, text, content_hash(text), n)
    for i, (decision_id, new_content, matched_content, reasoning, undo) in enumerate(texts_of_decisions,
                                                                                      len(memories)):
        progress(i, total)
        texts = [_redact_text(new_content), _redact_text(matched_content), _redact_text(reasoning),
                 _redact_json(undo)]
        if any(n for _, n in texts):
            counts["decisions"] += 1
            if not dry_run:
                with immediate(con):
                    decisions.redact_decision(con, decision_id, *(t for t, _ in texts))
    for i, (run_id, report) in enumerate(runs, len(memories) + len(texts_of_decisions)):
        progress(i, total)
        text, n = _redact_json(report)
        if n:
            counts["hook_runs"] += 1
            if not dry_run:
                with immediate(con):
                    hook_state.rewrite_report(con, run_id, text)
    counts["vacuumed"] = False
    if not dry_run and (counts["memories"] or counts["decisions"] or counts["hook_runs"]):
        writer.purge_text_index(con)
        # another process holding the file: the texts are replaced, free pages may remain
        counts["vacuumed"] = rewrite_file(con)
    return counts


def _redact_memory(store: "Core", memory_id: str, text: str, new_hash: str, secrets: int) -> int:
    """Replace one memory's text; returns 1 when it merged into an identical active memory of its scope."""
    now = iso(store.clock())
    vector = store.vectors.embed(text, new_hash) if store.vectors.embedder is not None else None
    with immediate(store.con):
        memory = writer.get(store.con, memory_id)
        owner = writer.active_owner(store.con, memory.domain, memory.namespace, new_hash) \
            if memory.status == "active" else None
        if owner == memory.id:
            owner = None
        if owner:
            writer.retire(store.con, memory.id, "merged", now, successor_id=owner)
        old = writer.get(store.con, memory.id)
        blob = vector.tobytes() if vector is not None else \
            vectors.searchable(store.con, memory.seq)
        writer.rewrite(store.con, old, content=text, importance=old.importance, tags=old.tags,
                       created_at=old.created_at, now=now, vector=blob if old.status == "active" else None)
        decisions.log_decision(store.con, decisions.Decision(
            decided_at=now, domain=memory.domain, namespace=memory.namespace, policy="maintenance",
            decision="redacted", new_content=text, new_hash=new_hash, matched_memory_id=owner,
            memory_id=memory.id, confirmed=True,
            reasoning=f"{secrets} secret{'s' if secrets != 1 else ''} redacted by the current rules"
                      + (f"; the text is now the same as {owner}, so it was merged into it" if owner else "")))
    return 1 if owner else 0


def _redact_text(text: str | None) -> tuple[str | None, int]:
    if not text:
        return text, 0
    from subcog_store.text.redact import redact

    return redact(text)


def _redact_json(text: str | None) -> tuple[str | None, int]:
    """Secrets in the texts of a JSON document (undo snapshots, hook reports): only values under TEXT_KEYS, so
    ids, hashes and hex vectors are never touched."""
    import json

    if not text:
        return text, 0
    found = [0]

    def walk(value, key=None):
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if key in TEXT_KEYS and isinstance(value, str):
            cleaned, n = _redact_text(value)
            found[0] += n
            return cleaned
        return value

    try:
        cleaned = walk(json.loads(text))
    except ValueError:
        return _redact_text(text)
    return (json.dumps(cleaned), found[0]) if found[0] else (text, 0)
