"""The three-tier duplicate check: exact (hash), semantic (embeddings, or text without a model), recent.

Each tier fails open on its own: an error is recorded in `tier_errors` and the next tier runs.
"""
# Lazy imports: the neighbour searches (db/knn, db/search, db/vectors) load when a tier needs neighbours, so a
# capture whose candidates are all exact repeats (a session read again) never imports them.
from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable

from subcog_store.db import files, memories, recent
from subcog_store.db.connection import read_snapshot
from subcog_store.db.memories import urn
from subcog_store.text.normalize import content_hash
from subcog_store.text.textsim import fts_query, word_overlap

if TYPE_CHECKING:
    import apsw
    import numpy as np

    from subcog_store.config import Settings
    from subcog_store.dedup.policies import Plan
    from subcog_store.dedup.rule import PairVerdict, PhraseSimilarity

log = logging.getLogger("subcog_store.dedup")
NEIGHBOURS = 5
FUTURE_SLACK_SECS = 1.0   # a recent capture stamped later than now by more than this: the clock went back
# Policies act on neighbours from the lowest of these zone bounds up, so the guard judges those too.
GUARDED_ZONES = ("verify_gray_threshold", "replace_merge_threshold", "merge_threshold")


@dataclass
class Neighbour:
    """A nearby active memory, with the duplicate rule's verdict on it once judged."""

    memory_id: str
    content: str
    similarity: float
    verdict: PairVerdict | None = None
    namespace: str | None = None      # set when the check looked beyond its own namespace (project-wide)

    @property
    def changed_fact(self) -> str | None:
        return self.verdict.changed_fact if self.verdict else None

    @property
    def support(self) -> float | None:
        return self.verdict.support if self.verdict else None

    @property
    def agrees(self) -> bool:
        """Not judged yet, or the guard passed (no changed fact, enough shared content)."""
        return self.verdict is None or self.verdict.agrees


@dataclass
class CheckResult:
    is_duplicate: bool
    reason: str | None                 # exact_match | semantic_similar | recent_capture
    similarity_score: float | None
    matched_memory_id: str | None
    matched_urn: str | None
    check_duration_ms: float
    content_hash: str
    domain: str
    namespace: str
    method: str | None = None          # hash | embedding | text | recent
    tiers_run: list[str] = field(default_factory=list)
    tier_errors: dict[str, str] = field(default_factory=dict)
    tier_ms: dict[str, float] = field(default_factory=dict)
    neighbours: list[Neighbour] = field(default_factory=list)
    matched_content: str | None = None
    captured_seconds_ago: float | None = None
    threshold: float | None = None
    enabled: bool = True
    knn: str | None = None             # how the semantic neighbours were found (db/knn.py)
    seen_seq: int = 0                  # the newest memory row the check's snapshot held (see `new_neighbours`)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("neighbours")
        data.pop("matched_content")
        data["similarity_score"] = None if self.similarity_score is None else round(self.similarity_score, 4)
        data["check_duration_ms"] = round(self.check_duration_ms, 3)
        data["tier_ms"] = {k: round(v, 3) for k, v in self.tier_ms.items()}
        data["guarded"] = [
            {"memory_id": n.memory_id, "similarity": round(n.similarity, 4), "changed_fact": n.changed_fact,
             "support": round(n.support, 3)}
            for n in self.neighbours if n.support is not None and not n.agrees]
        return data


def exact_tier(con: "apsw.Connection", content_hash: str, namespace: str, domain: str) -> tuple[str, str] | None:
    """(id, content) of the active memory of the scope with this normalized content, or None."""
    return memories.exact_match(con, content_hash, namespace, domain)


def semantic_neighbours(con: "apsw.Connection", vector: "np.ndarray", namespace: str, domain: str,
                        floor: float, k: int = NEIGHBOURS) -> tuple[list[Neighbour], str]:
    """The k nearest, exact for every neighbour at or above `floor` (db/knn.py); and how they were found."""
    from subcog_store.db import knn

    hits, how = knn.nearest(con, vector, namespace, domain, k, floor)
    return [Neighbour(h.memory_id, h.content, h.similarity) for h in hits], how


def text_neighbours(con: "apsw.Connection", content: str, namespace: str, domain: str,
                    k: int = NEIGHBOURS) -> list[Neighbour]:
    """BM25 candidates from FTS5, scored by word overlap (the stand-in similarity)."""
    from subcog_store.db import search

    query = fts_query(content)
    if query is None:
        return []
    rows = search.text_neighbours(con, query, namespace, domain, k * 4)
    found = [Neighbour(memory_id, text, word_overlap(content, text)) for memory_id, text in rows]
    return sorted(found, key=lambda n: -n.similarity)[:k]


def recent_tier(con: "apsw.Connection", content_hash: str, namespace: str, domain: str, now: float,
                window: float) -> tuple[str | None, float] | None:
    """The newest capture of this content within the window: stamped from `now - window` up to `now` (plus
    FUTURE_SLACK_SECS between processes' clocks); one stamped later comes from before the clock went back and
    is ignored, with a line in the log."""
    rows = recent.in_window(con, content_hash, namespace, domain, now - window)
    ahead = [row for row in rows if row[1] > now + FUTURE_SLACK_SECS]
    if ahead:
        log.warning("recent window: %d capture(s) of %s stamped in the future (up to %.0f s ahead: the clock went "
                    "back?) ignored", len(ahead), content_hash[:16], max(row[1] for row in ahead) - now)
    return next((row for row in rows if row[1] <= now + FUTURE_SLACK_SECS), None)


def long_enough(content: str, settings: "Settings") -> bool:
    """Long enough for the semantic tier: SUBCOG_DEDUP_MIN_SEMANTIC_LENGTH characters, whitespace folded."""
    return len(" ".join(content.split())) >= int(settings.dedup_min_semantic_length)


def guard_floor(result: "CheckResult", settings: "Settings") -> float:
    """The lowest similarity any policy acts on: the guard must judge every neighbour from there up."""
    if "semantic:text" in result.tiers_run or result.threshold is None:  # the text tier has one threshold
        return result.threshold or 1.0
    return min(result.threshold, *(float(settings.values[k]) for k in GUARDED_ZONES))


def apply_guard(content: str, neighbours: list[Neighbour], phrase_similarity: PhraseSimilarity | None = None
                ) -> None:
    """Judge each neighbour not yet judged with the duplicate rule (changed fact, shared content)."""
    for n in neighbours:
        if n.verdict is None:
            # here: the rule's word lists and patterns load only when a neighbour is judged (a repeat never is)
            from subcog_store.dedup.rule import judge
            n.verdict = judge(n.content, content, n.similarity, phrase_similarity)


@dataclass
class CheckInputs:
    content: str
    content_hash: str
    namespace: str
    domain: str
    now: float
    also: tuple[str, ...] = ()      # other namespaces of the domain to check as well (a project-wide check)


def _across(inputs: CheckInputs, fn: Callable[[str], list["Neighbour"]], k: int = NEIGHBOURS) -> list["Neighbour"]:
    """`fn(namespace)` for the check's namespace and every other one it covers, nearest first, namespaces named."""
    found = []
    for ns in (inputs.namespace, *inputs.also):
        for n in fn(ns):
            n.namespace = ns
            found.append(n)
    return sorted(found, key=lambda n: -n.similarity)[:k] if inputs.also else found


def run_check(con: "apsw.Connection", inputs: CheckInputs, settings: "Settings",
              embed: Callable[[str, str], "np.ndarray | None"],
              phrase_similarity: PhraseSimilarity | None = None, *, before_write: bool = True) -> CheckResult:
    """Run exact, then semantic, then recent; stop at the first hit.

    `embed(content, content_hash)` returns a unit vector, or None when there is no model (the text tier
    then stands in), and may raise (the semantic tier then fails open). `before_write`: a capture's check, which
    remembers the newest row it saw (`seen_seq`) for the re-check under the write lock; a check alone skips that
    query (a round trip on PostgreSQL).
    """
    started = time.perf_counter()
    result = CheckResult(False, None, None, None, None, 0.0, inputs.content_hash, inputs.domain, inputs.namespace,
                         threshold=settings.threshold(inputs.namespace))

    def hit(reason: str, method: str, memory_id: str | None, similarity: float | None, content: str | None,
            namespace: str | None = None) -> None:
        result.is_duplicate, result.reason, result.method = True, reason, method
        result.matched_memory_id, result.similarity_score, result.matched_content = memory_id, similarity, content
        ns = namespace or inputs.namespace
        result.matched_urn = urn(inputs.domain, ns, memory_id) if memory_id else \
            urn(inputs.domain, ns, "recent-" + inputs.content_hash[:12])

    def timed(tier: str, fn: Callable[[], None]) -> None:
        result.tiers_run.append(tier)
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:  # fail open: a broken tier is skipped and reported; a damaged file is not
            refused = files.note_damage(con.filename, e)
            if refused is not None:
                raise refused from e
            result.tier_errors[tier] = f"{type(e).__name__}: {e}"[:300]
        result.tier_ms[tier] = (time.perf_counter() - t0) * 1000

    def exact() -> None:
        for ns in (inputs.namespace, *inputs.also):
            found = exact_tier(con, inputs.content_hash, ns, inputs.domain)
            if found:
                hit("exact_match", "hash", found[0], 1.0, found[1], ns)
                return

    def semantic() -> None:
        if not long_enough(inputs.content, settings):
            result.tiers_run[-1] = "semantic:skipped_short"
            return
        vector = embed(inputs.content, inputs.content_hash) if settings.dedup_semantic_enabled else None
        if vector is not None:
            method, threshold = "embedding", result.threshold
            floor, hows = guard_floor(result, settings), []

            def knn_in(ns: str) -> list[Neighbour]:
                found, how = semantic_neighbours(con, vector, ns, inputs.domain, floor)
                hows.append(how)
                return found
            result.neighbours = _across(inputs, knn_in)
            result.knn = ",".join(dict.fromkeys(hows)) or None
        else:
            method, threshold = "text", float(settings.dedup_text_threshold)
            result.tiers_run[-1] = "semantic:text"
            result.threshold = threshold
            result.neighbours = _across(inputs, lambda ns: text_neighbours(con, inputs.content, ns, inputs.domain))
        for n in result.neighbours:  # nearest first; the guard judges each only as far as needed
            if content_hash(n.content) == inputs.content_hash:  # stored since the exact tier looked
                hit("exact_match", "hash", n.memory_id, 1.0, n.content, n.namespace)
                return
            if n.similarity >= threshold:
                apply_guard(inputs.content, [n], phrase_similarity)
                if n.agrees:
                    hit("semantic_similar", method, n.memory_id, n.similarity, n.content, n.namespace)
                    return

    def recent() -> None:
        found, ns = None, inputs.namespace
        for ns in (inputs.namespace, *inputs.also):
            found = recent_tier(con, inputs.content_hash, ns, inputs.domain, inputs.now,
                                settings.dedup_time_window_secs)
            if found:
                break
        if found:
            memory_id, captured_at = found
            content = None
            if memory_id:
                memory = memories.get(con, memory_id)
                content = memory.content if memory else None
            hit("recent_capture", "recent", memory_id, 1.0, content, ns)
            result.captured_seconds_ago = max(0.0, inputs.now - captured_at)

    if settings.dedup_enabled:
        with read_snapshot(con):  # every tier sees the same committed state
            if before_write:
                result.seen_seq = memories.newest_seq(con, (inputs.namespace, *inputs.also), inputs.domain)
            for tier, fn in (("exact", exact), ("semantic", semantic), ("recent", recent)):
                timed(tier, fn)
                if result.is_duplicate:
                    break
    else:
        result.enabled = False
    result.check_duration_ms = (time.perf_counter() - started) * 1000
    return result


def revalidate(con: "apsw.Connection", inputs: CheckInputs, check: CheckResult, plan: "Plan", settings: "Settings",
               vector: "np.ndarray | None", recheck: bool = True) -> None:
    """Under the write lock, before a capture stores: another process may have stored the same text, or retired
    its match (the plan is corrected), or, when `recheck`, stored a near one since the check (`check_again`)."""
    plan.retire = [mid for mid in plan.retire if (m := memories.get(con, mid)) and m.status == "active"]
    if not plan.retire and plan.decision in ("replaced", "merged"):
        plan.decision, plan.content = "stored", inputs.content
    text_hash = inputs.content_hash if plan.content == inputs.content else content_hash(plan.content)
    found = exact_tier(con, text_hash, inputs.namespace, inputs.domain)
    if found and found[0] not in plan.retire:
        plan.decision, plan.store, plan.retire = "hash_exact", False, []
        check.is_duplicate, check.reason, check.method = True, "exact_match", "hash"
        check.matched_memory_id, check.similarity_score = found[0], 1.0
        check.matched_urn = urn(inputs.domain, inputs.namespace, found[0])
    elif recheck:
        check_again(con, inputs, check, settings, vector)


class NearMemoryWritten(Exception):
    """Under the write lock: another process stored a memory near this capture after its check (the capture
    rolls back, then checks and plans again)."""


def check_again(con: "apsw.Connection", inputs: CheckInputs, result: CheckResult, settings: "Settings",
                vector: "np.ndarray | None") -> None:
    """Under the write lock, before storing what the check found unique: raise NearMemoryWritten when a memory
    of the scope written since the check's snapshot (a few rows, usually none) is near enough for a policy to act
    on. Two processes storing rewordings of one fact at once would otherwise both store it."""
    fresh = new_neighbours(con, inputs, result, settings, vector)
    if fresh:
        best = max(fresh, key=lambda n: n.similarity)
        log.info("capture of %s checked again: %s was written meanwhile (similarity %.3f)",
                 inputs.content_hash[:16], best.memory_id, best.similarity)
        raise NearMemoryWritten(best.memory_id)


def new_neighbours(con: "apsw.Connection", inputs: CheckInputs, result: CheckResult, settings: "Settings",
                   vector: "np.ndarray | None") -> list[Neighbour]:
    """The memories of the scope written since the check's snapshot at or above the guard's floor."""
    if "semantic" in result.tier_errors:
        return []   # it failed open outside: so does its re-check
    if "semantic" in result.tiers_run and vector is not None:
        from subcog_store.db import vectors

        found = [Neighbour(i, c, sim) for i, c, sim in vectors.written_since(
            con, result.seen_seq, inputs.namespace, inputs.domain, vector.astype("float32").tobytes())]
    elif "semantic:text" in result.tiers_run:
        found = [Neighbour(i, c, word_overlap(inputs.content, c))
                 for i, c in memories.written_since(con, result.seen_seq, inputs.namespace, inputs.domain)]
    else:
        return []   # no semantic tier ran (disabled, short, failed open): the exact re-check is all there is
    floor = guard_floor(result, settings)
    return [n for n in found if n.similarity >= floor]


def check_row(result: CheckResult, checked_at: str, fingerprint: str) -> dict:
    """The dedup_checks row of a result."""
    return {
        "checked_at": checked_at, "domain": result.domain, "namespace": result.namespace,
        "result": "disabled" if not result.enabled else ("duplicate" if result.is_duplicate else "unique"),
        "reason": result.reason, "method": result.method, "similarity": result.similarity_score,
        "matched_memory_id": result.matched_memory_id, "duration_ms": result.check_duration_ms,
        "exact_ms": result.tier_ms.get("exact"), "semantic_ms": result.tier_ms.get("semantic"),
        "recent_ms": result.tier_ms.get("recent"), "tiers_run": json.dumps(result.tiers_run),
        "tier_errors": json.dumps(result.tier_errors), "content_fingerprint": fingerprint,
    }
