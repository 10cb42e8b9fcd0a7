"""One capture: check, plan by the namespace's policy, write (memory, vector, recent-capture row, check row and
decision in one BEGIN IMMEDIATE transaction that re-checks the exact tier, and the semantic tier over the rows
written since the check, under the write lock, so several processes capturing the same text, or rewordings of
it, store it once). Also the check alone, an in-batch repeat's decision, a status line's decision and a
recent capture without a memory. Every function takes the `Core`; none knows the `Store`."""
from __future__ import annotations

import logging
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from subcog_store.clock import iso
from subcog_store.core import Core
from subcog_store.db import checks, decisions, locks, memories as writer, recent
from subcog_store.db.connection import Busy, Error as DbError, immediate
from subcog_store.db.memories import urn
from subcog_store.dedup import policies, session_repeat
from subcog_store.dedup.check import CheckInputs, CheckResult, NearMemoryWritten, apply_guard, check_row, \
    guard_floor, revalidate, run_check
from subcog_store.errors import DatabaseError
from subcog_store.inputs import Prepared, validate_content
from subcog_store.text.namespaces import canonical_domain, canonical_namespace
from subcog_store.text.normalize import content_hash

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np

    from subcog_store.dedup.outdated import Outdated
    from subcog_store.dedup.policies import Plan

log = logging.getLogger("subcog_store")
RECHECKS = 3   # a capture checked again after another process stored a near memory meanwhile, at most


@dataclass
class CaptureResult:
    stored: bool
    decision: str
    memory_id: str | None
    urn: str | None
    check: CheckResult
    decision_id: int | None = None
    retired: list[str] = field(default_factory=list)
    reasoning: str | None = None
    warnings: list[str] = field(default_factory=list)
    outdated: list[str] = field(default_factory=list)   # memories this capture marked as outdated
    redacted: int = 0                                     # secrets replaced by [REDACTED] before storing

    def to_dict(self) -> dict:
        data = {k: v for k, v in asdict(self).items() if k != "check"}
        data.update({k: v for k, v in self.check.to_dict().items() if k not in data})
        return data


def _inputs(core: Core, content: object, namespace: str, domain: str | None, hash_hex: str | None = None
            ) -> CheckInputs:
    text = validate_content(content)
    return CheckInputs(text, hash_hex or content_hash(text), canonical_namespace(namespace),
                       canonical_domain(domain), core.clock())


def _check(core: Core, inputs: CheckInputs, before_write: bool = True) -> CheckResult:
    return run_check(core.con, inputs, core.settings, core.vectors.embed, core.vectors.phrase_similarity(),
                     before_write=before_write)


def check_duplicate(core: Core, content: str, namespace: str, domain: str | None = None, *,
                    log_check: bool = True) -> CheckResult:
    """Is `content` a duplicate in its (domain, namespace)? Runs exact, semantic, recent; first hit wins."""
    inputs = _inputs(core, content, namespace, domain)
    result = _check(core, inputs, before_write=False)
    if log_check and not core.readonly:
        # The log row is best effort: a check on a read-only or busy file still answers, without waiting
        # long behind another process's capture.
        try:
            with locks.best_effort(core.con):
                checks.log(core.con, check_row(result, iso(inputs.now), inputs.content_hash[:16]),
                           (inputs.domain, inputs.namespace))
        except DbError as e:
            log.warning("check not logged: %s", e)
    return result


def capture_prepared(core: Core, p: Prepared) -> CaptureResult:
    """`capture` of a request already validated (`inputs.prepare`): the content hash is computed once."""
    if core.readonly:
        raise DatabaseError(f"{core.path}: opened read-only")
    for attempt in range(RECHECKS + 1):   # a near memory written meanwhile rolls it back: check, plan again
        with suppress(NearMemoryWritten):
            return _capture_once(core, p, recheck=attempt < RECHECKS)
    raise AssertionError("the last attempt does not check again")


def _capture_once(core: Core, p: Prepared, recheck: bool) -> CaptureResult:
    inputs = CheckInputs(p.content, p.content_hash, p.namespace, p.domain, core.clock(),
                         session_repeat.other_namespaces(core.con, p) if p.project_wide else ())
    check = _check(core, inputs)
    floor = guard_floor(check, core.settings)
    apply_guard(p.content, [n for n in check.neighbours if n.similarity >= floor], core.vectors.phrase_similarity())
    if p.project_wide and p.session_id and not check.is_duplicate:
        session_repeat.mark_repeat(core.con, p, check, core.vectors.phrase_similarity())
    best = max(check.neighbours, key=lambda n: n.similarity, default=None)
    if best is not None and best.namespace not in (None, p.namespace) and best.similarity >= floor:
        p.namespace = inputs.namespace = best.namespace  # one subject, one namespace: where it was first stored
    policy = p.policy or core.settings.policy(p.namespace)
    matched = writer.get(core.con, best.memory_id) if best else None
    plan = policies.plan(check, p.content, policy, core.settings, iso(inputs.now),
                         matched.created_at if matched else None)
    vector = None
    if plan.store and core.settings.dedup_semantic_enabled:
        try:
            vector = core.vectors.embed(plan.content, p.content_hash if plan.content == p.content else None)
        except Exception as e:  # fail open: store without a vector; doctor reports it, reembed fixes it
            plan.warnings.append(f"not embedded: {type(e).__name__}: {e}")
    # changed facts by subject: the older memories of the project this one outdates (dedup/outdated.py)
    found = _outdated(core, p, vector, inputs) \
        if plan.store and vector is not None and plan.content == p.content and core.settings.dedup_enabled else []
    try:
        return _apply(core, p, inputs, check, plan, vector, found, recheck)
    except Busy:
        raise DatabaseError(f"{core.path}: the database is locked by another process") from None


def _outdated(core: Core, p: Prepared, vector: "np.ndarray", inputs: CheckInputs) -> "list[Outdated]":
    # here: its word lists and patterns load only when a memory is stored with a vector, never for a repeat
    from subcog_store.dedup.outdated import find_outdated

    return find_outdated(core.con, vector, p.content, p.domain, p.created_at or iso(inputs.now))


def _apply(core: Core, p: Prepared, inputs: CheckInputs, check: CheckResult, plan: "Plan",
           vector: "np.ndarray | None", found: "list[Outdated]" = (), recheck: bool = True) -> CaptureResult:
    now = iso(inputs.now)
    con = core.con
    undo = decisions.Undo(candidate=p.candidate())
    memory_id, outdated = None, []
    with immediate(con, *written_scopes(p, found)):   # on PostgreSQL: other scopes' writers go on
        if plan.store:
            revalidate(con, inputs, check, plan, core.settings, core.vectors.cached(p.content_hash), recheck)
        if plan.store:
            memory_id = writer.new_id(con)
        for mid in plan.retire:
            undo.before.append(writer.retire(con, mid, plan.retire_status, now, successor_id=memory_id))
            undo.expect(mid, plan.retire_status, memory_id)
        if plan.store and memory_id:
            importance, tags = p.importance, p.tags
            if plan.decision == "merged" and undo.before:  # highest importance, union of tags
                old = undo.before[0].row
                importance = max(importance, old["importance"])
                tags = list(dict.fromkeys(writer.Memory.from_row(old).tags + tags))
            writer.insert(con, memory_id=memory_id, domain=p.domain, namespace=p.namespace, content=plan.content,
                          importance=importance, tags=tags, source=p.source, session_id=p.session_id,
                          created_at=p.created_at or now, now=now, captured_at=inputs.now,
                          vector=vector.tobytes() if vector is not None else None)
            undo.stored = memory_id
            undo.expect(memory_id, "active", None)
            if plan.decision == "changed_fact" and plan.matched and not plan.retire:
                old = writer.get(con, plan.matched.memory_id)
                if old is not None and old.status == "active" and not old.successor_id and \
                        old.created_at <= (p.created_at or now):  # kept, marked as outdated by its successor
                    undo.before.append(writer.link_successor(con, old.id, memory_id, now))
                    undo.expect(old.id, "active", memory_id)
                    outdated.append(old.id)
        elif plan.decision == "hash_exact" and check.matched_memory_id:
            writer.touch(con, check.matched_memory_id, p.tags, p.importance, now)
        checks.add(con, check_row(check, now, inputs.content_hash[:16]))
        decision_id = decisions.log_decision(con, decisions.Decision(
            decided_at=now, domain=p.domain, namespace=p.namespace, policy=plan.policy, decision=plan.decision,
            new_content=p.content, new_hash=p.content_hash,
            matched_memory_id=plan.matched.memory_id if plan.matched else None,
            matched_content=plan.matched.content if plan.matched else None, similarity=plan.similarity,
            memory_id=memory_id, reasoning=plan.reasoning, confirmed=plan.decision in ("hash_exact", "stored"),
            undo=undo, members=decisions.members(outdated, "outdated")))
        if memory_id and found:
            from subcog_store.dedup.outdated import link_outdated   # here: only when there is a link to make

            outdated += link_outdated(con, [o for o in found if o.memory_id not in outdated],
                                      memory_id=memory_id, domain=p.domain, namespace=p.namespace,
                                      content=p.content, content_hash=p.content_hash, now=now)
    result_urn = urn(p.domain, p.namespace, memory_id) if memory_id else check.matched_urn
    return CaptureResult(plan.store, plan.decision, memory_id or check.matched_memory_id, result_urn, check,
                         decision_id, list(plan.retire), plan.reasoning, plan.warnings, outdated, p.redacted)


def written_scopes(p: Prepared, found: "Iterable[Outdated]") -> list[tuple[str, str]]:
    """The (domain, namespace) scopes a capture writes: its own, and those of the older memories it may link as
    outdated (other namespaces of the project). Locked together, in one order (db.connection.immediate), so two
    captures that outdate the same memories of a third scope wait for each other at the start instead of
    deadlocking on those rows halfway (which PostgreSQL would end with an error)."""
    return [(p.domain, p.namespace)] + sorted({(p.domain, o.namespace) for o in found} - {(p.domain, p.namespace)})


def log_repeat(core: Core, p: Prepared, first: Prepared, matched_id: str | None, similarity: float | None) -> int:
    """An in-batch repeat goes to the decision log like every other decision (reversible: stores the text)."""
    now = iso(core.clock())
    reasoning = ("the same text earlier in this batch" if similarity is None else
                 f"the same meaning earlier in this batch (similarity {similarity:.3f})")
    try:
        with immediate(core.con, (p.domain, p.namespace)):
            return decisions.log_decision(core.con, decisions.Decision(
                decided_at=now, domain=p.domain, namespace=p.namespace, policy="in_batch", decision="in_batch",
                new_content=p.content, new_hash=p.content_hash, matched_memory_id=matched_id,
                matched_content=first.content, similarity=similarity, reasoning=reasoning,
                confirmed=similarity is None, undo=decisions.Undo(candidate=p.candidate())))
    except Busy:
        raise DatabaseError(f"{core.path}: the database is locked by another process") from None


def log_status(core: Core, p: Prepared, rule: str) -> int | None:
    """A sentence the extractor judged a fact but the status rule vetoed goes to the decision log, not the store
    (`auto_reject`, policy `status`; reversing it stores the text); once per text and domain. The id, or None when
    it was logged before."""
    try:
        with immediate(core.con, (p.domain, p.namespace)):
            if decisions.status_logged(core.con, p.domain, p.content_hash):
                return None
            return decisions.log_decision(core.con, decisions.Decision(
                decided_at=iso(core.clock()), domain=p.domain, namespace=p.namespace, policy="status",
                decision="auto_reject", new_content=p.content, new_hash=p.content_hash,
                reasoning=f"status, not a memory (rule: {rule}): the state of the work when it was said",
                undo=decisions.Undo(candidate=p.candidate())))
    except Busy:
        raise DatabaseError(f"{core.path}: the database is locked by another process") from None


def record_capture(core: Core, content: str, namespace: str, domain: str | None = None,
                   memory_id: str | None = None) -> None:
    """Remember that `content` was captured now (the recent tier), without storing a memory."""
    inputs = _inputs(core, content, namespace, domain)
    if core.readonly:
        raise DatabaseError(f"{core.path}: opened read-only")
    with immediate(core.con, (inputs.domain, inputs.namespace)):
        recent.record(core.con, inputs.content_hash, memory_id, inputs.namespace, inputs.domain, inputs.now)
