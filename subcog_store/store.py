"""The Store: one SQLite file; check, capture, read. Python orchestrates, SQL decides.

Writes go through `db.memories` (the one writer); the duplicate rule is `dedup.rule`; the capture of many
texts at once (hooks, JSONL, eval) is `capture_many`, which owns the in-batch deduplication, when to load the
model and what to embed.
"""
# Lazy imports: each service loads when first used: a hook's run of repeats never imports numpy or the model.
from __future__ import annotations

import logging
import os
from contextlib import suppress
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

import apsw

from subcog_store.clock import Clock, iso, system_clock
from subcog_store.config import Settings
from subcog_store.db import memories as writer
from subcog_store.db import locks
from subcog_store.db.connection import connect, dict_rows, immediate, set_overrides
from subcog_store.db.memories import Memory, urn
from subcog_store.db.sqlfiles import q
from subcog_store.dedup.check import CheckInputs, CheckResult, NearMemoryWritten, apply_guard, check_row, \
    guard_floor, revalidate, run_check
from subcog_store.dedup.outdated import Outdated, find_outdated, link_outdated
from subcog_store.dedup.rule import PhraseSimilarity
from subcog_store.errors import DatabaseError, InvalidInput, NotFound, SubcogError
from subcog_store.inputs import CaptureRequest, Prepared, prepare, validate_content
from subcog_store.text.namespaces import canonical_domain, canonical_namespace

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.dedup.in_batch import Outcome
    from subcog_store.recall.search import SearchResult
    from subcog_store.dedup.policies import Plan
    from subcog_store.model.embedder import Embedder

__all__ = ["Store", "Memory", "CaptureResult", "CaptureRequest", "validate_content"]

log = logging.getLogger("subcog_store")
RECHECKS = 3   # a capture checked again after another process stored a near memory meanwhile, at most
VECTOR_CACHE = 8192


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


class Store:
    """A subcog-store database. `embedder=None` uses the packaged MiniLM model, loaded on first need."""

    def __init__(self, path: str | os.PathLike, *, embedder: "Embedder | None" = None, clock: Clock = system_clock,
                 environ: dict[str, str] | None = None, readonly: bool = False, fetch_model: bool = True):
        self.path = str(path)
        self.fetch_model = fetch_model  # may download the model files on first need (never in a hook)
        self.con = connect(self.path, readonly=readonly)
        self.clock = clock
        self.readonly = readonly
        self._environ = environ
        try:
            self.settings = self.load_settings()
        except BaseException:
            self.con.close()
            raise
        self._embedder = embedder
        self._embedder_error: str | None = None
        self._vectors: OrderedDict[str, "np.ndarray"] = OrderedDict()

    # -- set-up -------------------------------------------------------------------------------------------
    def load_settings(self) -> Settings:
        stored = dict(self.con.execute(q("select_settings")).fetchall())
        settings = Settings.load(stored, self._environ)
        set_overrides(self.con, settings.overrides())
        return settings

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> "Embedder | None":
        """The embedder, or None when the semantic tier is disabled or the model is missing or broken."""
        if not self.settings.dedup_semantic_enabled or self._embedder_error:
            return None
        if self._embedder is None:  # in process, or the warm worker's (model.provider decides)
            from subcog_store.model.provider import embedder_for
            self._embedder = embedder_for(self.settings, fetch_missing=self.fetch_model)
        try:
            self._embedder.load()
        except Exception as e:  # missing or corrupt files, onnxruntime failure: the text tier stands in
            self._embedder_error = f"{type(e).__name__}: {e}"
            log.warning("semantic tier off, using the text tier instead: %s", self._embedder_error)
            return None
        return self._embedder

    @property
    def model_loaded(self) -> bool:
        """The model is loaded in this process (a hook uses it then, and never loads it just for recall)."""
        return self._embedder is not None and self._embedder.loaded

    @property
    def embedder_error(self) -> str | None:
        return self._embedder_error

    def embed(self, content: str, hash_hex: str | None = None) -> "np.ndarray | None":
        """The unit vector of `content` (cached by content hash: identical content is embedded once)."""
        from subcog_store.text.normalize import content_hash

        key = hash_hex or content_hash(content)
        if key in self._vectors:
            self._vectors.move_to_end(key)
            return self._vectors[key]
        embedder = self.embedder
        if embedder is None:
            return None
        vector = embedder.embed_batch([content])[0]
        self._remember_vector(key, vector)
        return vector

    def embed_many(self, contents: Sequence[str], hashes: Sequence[str] | None = None) -> None:
        """Embed in one model call the contents not cached yet. An optimisation only: when it fails, each
        content is embedded (or fails open) on its own later."""
        if not contents or not self.settings.dedup_semantic_enabled:
            return
        from subcog_store.text.normalize import content_hash

        try:
            missing: dict[str, str] = {}
            for i, text in enumerate(contents):
                key = hashes[i] if hashes else content_hash(text)
                if key not in self._vectors:
                    missing.setdefault(key, text)
            embedder = self.embedder if missing else None
            if embedder is None:
                return
            for key, vector in zip(missing, embedder.embed_batch(list(missing.values()))):
                self._remember_vector(key, vector)
        except Exception as e:  # noqa: BLE001 - an invalid text, a model failure: each text goes on alone
            log.warning("batch embedding failed, embedding one by one: %s: %s", type(e).__name__, e)

    def cached_vector(self, hash_hex: str) -> "np.ndarray | None":
        return self._vectors.get(hash_hex)

    def _remember_vector(self, key: str, vector: "np.ndarray") -> None:
        self._vectors[key] = vector
        while len(self._vectors) > VECTOR_CACHE:
            self._vectors.popitem(last=False)

    def phrase_similarity(self) -> PhraseSimilarity | None:
        """The model's similarity of two short phrases, for the guard; None while the model is not loaded (the
        guard never loads it on its own)."""
        if self._embedder is None or not self._embedder.loaded or self.embedder is None:
            return None

        def similarity(a: str, b: str) -> float:
            va, vb = self.embed(a), self.embed(b)
            return float(va @ vb) if va is not None and vb is not None else 0.0
        return similarity

    # -- the check ------------------------------------------------------------------------------------------
    def _inputs(self, content: object, namespace: str, domain: str | None, hash_hex: str | None = None
                ) -> CheckInputs:
        from subcog_store.text.normalize import content_hash

        text = validate_content(content)
        return CheckInputs(text, hash_hex or content_hash(text), canonical_namespace(namespace),
                           canonical_domain(domain), self.clock())

    def _check(self, inputs: CheckInputs) -> CheckResult:
        return run_check(self.con, inputs, self.settings, self.embed, self.phrase_similarity())

    def check_duplicate(self, content: str, namespace: str, domain: str | None = None, *,
                        log_check: bool = True) -> CheckResult:
        """Is `content` a duplicate in its (domain, namespace)? Runs exact, semantic, recent; first hit wins."""
        inputs = self._inputs(content, namespace, domain)
        result = self._check(inputs)
        if log_check and not self.readonly:
            # The log row is best effort: a check on a read-only or busy file still answers, without waiting
            # long behind another process's capture.
            try:
                with locks.best_effort(self.con), immediate(self.con):
                    self.con.execute(q("insert_check"), check_row(result, iso(inputs.now), inputs.content_hash[:16]))
            except apsw.Error as e:
                log.warning("check not logged: %s", e)
        return result

    # -- capture --------------------------------------------------------------------------------------------
    def capture(self, content: str, namespace: str, domain: str | None = None, *, importance: float = 0.5,
                tags: Iterable[str] | None = None, source: str | None = None, session_id: str | None = None,
                policy: str | None = None, created_at: str | None = None) -> CaptureResult:
        """Check `content` and, unless it is a duplicate under the namespace's policy, store it (memory, vector
        and recent-capture row in one transaction). Every decision is written to the decision log."""
        prepared = prepare(CaptureRequest(content, namespace, domain, importance, tags, source, session_id, policy,
                                          created_at))
        return self.capture_prepared(prepared)

    def capture_prepared(self, p: Prepared) -> CaptureResult:
        """`capture` of a request already validated (`inputs.prepare`): the content hash is computed once."""
        if self.readonly:
            raise DatabaseError(f"{self.path}: opened read-only")
        for attempt in range(RECHECKS + 1):   # a near memory written meanwhile rolls it back: check, plan again
            with suppress(NearMemoryWritten):
                return self._capture_once(p, recheck=attempt < RECHECKS)
        raise AssertionError("the last attempt does not check again")

    def _capture_once(self, p: Prepared, recheck: bool) -> CaptureResult:
        from subcog_store.dedup import policies

        policy = p.policy or self.settings.policy(p.namespace)
        inputs = CheckInputs(p.content, p.content_hash, p.namespace, p.domain, self.clock())
        check = self._check(inputs)
        floor = guard_floor(check, self.settings)
        apply_guard(p.content, [n for n in check.neighbours if n.similarity >= floor], self.phrase_similarity())
        best = max(check.neighbours, key=lambda n: n.similarity, default=None)
        matched = writer.get(self.con, best.memory_id) if best else None
        plan = policies.plan(check, p.content, policy, self.settings, iso(inputs.now),
                             matched.created_at if matched else None)
        vector = None
        if plan.store and self.settings.dedup_semantic_enabled:
            try:
                vector = self.embed(plan.content, p.content_hash if plan.content == p.content else None)
            except Exception as e:  # fail open: store without a vector; doctor reports it, reembed fixes it
                plan.warnings.append(f"not embedded: {type(e).__name__}: {e}")
        # changed facts by subject: the older memories of the project this one outdates (dedup/outdated.py)
        found = find_outdated(self.con, vector, p.content, p.domain, p.created_at or iso(inputs.now)) \
            if plan.store and vector is not None and plan.content == p.content and self.settings.dedup_enabled else []
        try:
            return self._apply(p, inputs, check, plan, vector, found, recheck)
        except apsw.BusyError:
            raise DatabaseError(f"{self.path}: the database is locked by another process") from None

    def _apply(self, p: Prepared, inputs: CheckInputs, check: CheckResult, plan: "Plan",
               vector: "np.ndarray | None", found: list["Outdated"] = (), recheck: bool = True) -> CaptureResult:
        now = iso(inputs.now)
        con = self.con
        undo = writer.Undo(candidate=p.candidate())
        memory_id, outdated = None, []
        with immediate(con):
            if plan.store:
                revalidate(con, inputs, check, plan, self.settings, self.cached_vector(p.content_hash), recheck)
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
            con.execute(q("insert_check"), check_row(check, now, inputs.content_hash[:16]))
            decision_id = writer.log_decision(con, writer.Decision(
                decided_at=now, domain=p.domain, namespace=p.namespace, policy=plan.policy, decision=plan.decision,
                new_content=p.content, new_hash=p.content_hash,
                matched_memory_id=plan.matched.memory_id if plan.matched else None,
                matched_content=plan.matched.content if plan.matched else None, similarity=plan.similarity,
                memory_id=memory_id, reasoning=plan.reasoning, confirmed=plan.decision in ("hash_exact", "stored"),
                undo=undo, members=writer.members(outdated, "outdated")))
            if memory_id and found:
                outdated += link_outdated(con, [o for o in found if o.memory_id not in outdated],
                                          memory_id=memory_id, domain=p.domain, namespace=p.namespace,
                                          content=p.content, content_hash=p.content_hash, now=now)
        result_urn = urn(p.domain, p.namespace, memory_id) if memory_id else check.matched_urn
        return CaptureResult(plan.store, plan.decision, memory_id or check.matched_memory_id, result_urn, check,
                             decision_id, list(plan.retire), plan.reasoning, plan.warnings, outdated, p.redacted)

    def capture_many(self, requests: Sequence[CaptureRequest], *, deadline: float | None = None,
                     dry_run: bool = False, dedupe_batch: bool = True) -> list["Outcome"]:
        """Capture (or, dry run, check) many texts at once; see `dedup.in_batch.capture_many`."""
        from subcog_store.dedup.in_batch import capture_many

        return capture_many(self, requests, deadline=deadline, dry_run=dry_run, dedupe_batch=dedupe_batch)

    def wait_for_lock_at_most(self, seconds: float) -> None:
        """How long the next writes wait for another process's lock (a hook keeps to its budget)."""
        locks.at_most(self.con, seconds)

    def log_repeat(self, p: Prepared, first: Prepared, matched_id: str | None, similarity: float | None) -> int:
        """An in-batch repeat goes to the decision log like every other decision (reversible: stores the text)."""
        now = iso(self.clock())
        reasoning = ("the same text earlier in this batch" if similarity is None else
                     f"the same meaning earlier in this batch (similarity {similarity:.3f})")
        try:
            with immediate(self.con):
                return writer.log_decision(self.con, writer.Decision(
                    decided_at=now, domain=p.domain, namespace=p.namespace, policy="in_batch", decision="in_batch",
                    new_content=p.content, new_hash=p.content_hash, matched_memory_id=matched_id,
                    matched_content=first.content, similarity=similarity, reasoning=reasoning,
                    confirmed=similarity is None, undo=writer.Undo(candidate=p.candidate())))
        except apsw.BusyError:
            raise DatabaseError(f"{self.path}: the database is locked by another process") from None

    def record_capture(self, content: str, namespace: str, domain: str | None = None,
                       memory_id: str | None = None) -> None:
        """Remember that `content` was captured now (the recent tier), without storing a memory."""
        inputs = self._inputs(content, namespace, domain)
        if self.readonly:
            raise DatabaseError(f"{self.path}: opened read-only")
        with immediate(self.con):
            self.con.execute(q("insert_recent_capture"), {
                "content_hash": inputs.content_hash, "memory_id": memory_id, "namespace": inputs.namespace,
                "domain": inputs.domain, "captured_at": inputs.now})

    # -- reading --------------------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        if not isinstance(memory_id, str) or len(memory_id) > 100:
            raise NotFound(f"no memory with id {str(memory_id)[:100]!r}")
        memory = writer.get(self.con, memory_id)
        if memory is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        return memory

    def memories(self, namespace: str | None = None, domain: str | None = None, status: str | None = "active",
                 limit: int = 100) -> list[Memory]:
        params = {"namespace": canonical_namespace(namespace) if namespace else None, "domain": domain,
                  "status": status, "limit": limit}
        return [Memory.from_row(r) for r in dict_rows(self.con.execute(q("list_memories"), params))]

    def search(self, query: str, *, domain: str | None = None, namespace: str | None = None, limit: int = 5,
               include_all: bool = False, use_model: bool = True, exclude=None) -> "SearchResult":
        """Hybrid search of a domain's memories (see `recall.search`)."""
        from subcog_store.recall.search import search

        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit {str(limit)[:20]!r}: expected a whole number from 1 to 1000")
        return search(self, query, domain=canonical_domain(domain), namespace=namespace, limit=limit,
                      include_all=include_all, use_model=use_model, exclude=exclude)

    def forget(self, memory_id: str, reason: str | None = None) -> int:
        """Retire a memory (out of search), logged and reversible with `reverse`; returns the decision id."""
        from subcog_store.maintenance import forget

        return forget(self, memory_id, reason)

    def move_domain(self, source: str, target: str, progress=None) -> dict:
        """Move every memory of domain `source` to `target` (see `maintenance.move_domain`; `progress(done,
        total)` is told as it goes)."""
        from subcog_store.maintenance import move_domain

        return move_domain(self, source, target, **({"progress": progress} if progress else {}))

    def stats(self) -> dict:
        """Counts by namespace and status, check counters, skip counters, durations, recent window."""
        def rows(name: str) -> list[dict]:
            return dict_rows(self.con.execute(q(name)))
        return {"memories": rows("stats_memories"), "checks": rows("stats_checks"), "skips": rows("stats_skips"),
                "durations": rows("stats_durations"), "recent_window": rows("stats_recent_window")[0],
                "decisions": rows("stats_decisions")}
