"""Store-time policies: what a capture does with a near-duplicate (skip, verify, replace, merge).

`plan()` turns a check result into a Plan; it runs no SQL, only the verifier or merger commands.
Zone thresholds are inclusive at their lower bound.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from subcog_store.dedup import plugins
from subcog_store.dedup.check import CheckResult, Neighbour
from subcog_store.text.textsim import word_overlap

if TYPE_CHECKING:
    from subcog_store.config import Settings

SKIP_DECISIONS = {"exact_match": "hash_exact", "semantic_similar": "semantic_skip", "recent_capture": "recent_capture"}
REJECTIONS = {"hash_exact", "semantic_skip", "recent_capture", "auto_reject", "verifier_reject", "fallback_reject"}
NEAR_IDENTICAL_OVERLAP = 0.9


@dataclass
class Plan:
    """What a capture will do: the decision for the log, whether to store, what to retire."""

    decision: str
    policy: str
    store: bool
    content: str
    matched: Neighbour | None = None
    retire: list[str] = field(default_factory=list)
    retire_status: str = "superseded"
    reasoning: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def similarity(self) -> float | None:
        return self.matched.similarity if self.matched else None


def _best(check: CheckResult) -> Neighbour | None:
    return max(check.neighbours, key=lambda n: n.similarity, default=None)


def plan(check: CheckResult, content: str, policy: str, settings: "Settings", created_at: str,
         matched_created_at: str | None = None) -> Plan:
    """Decide what to do with `content` given its check result and the namespace's policy."""
    matched = Neighbour(check.matched_memory_id, check.matched_content or "", check.similarity_score or 1.0) \
        if check.is_duplicate and check.matched_memory_id else None
    if check.is_duplicate and (policy == "skip" or check.reason != "semantic_similar" or check.method == "text"):
        return Plan(SKIP_DECISIONS[check.reason or "exact_match"], policy, False, content, matched,
                    reasoning=f"{check.method} similarity {check.similarity_score:.3f} >= {check.threshold}"
                    if check.reason == "semantic_similar" else None)
    best = _best(check)
    if policy == "skip" or best is None or check.method == "text":
        guarded = [n for n in check.neighbours if not n.agrees and n.similarity >= (check.threshold or 1.0)]
        changed = [n for n in guarded if n.changed_fact]
        if changed:
            return Plan("changed_fact", policy, True, content, changed[0], reasoning=changed[0].changed_fact)
        if guarded:
            return Plan("stored", policy, True, content, guarded[0], reasoning=_low_support(guarded[0]))
        return Plan("stored", policy, True, content)
    if policy == "verify":
        return _verify(best, content, settings, created_at, matched_created_at, check.namespace)
    return _replace_or_merge(best, content, policy, settings, created_at, matched_created_at, check.namespace)


def _low_support(n: Neighbour) -> str:
    return f"similar ({n.similarity:.3f}) but shares few content words (support {n.support:.2f}): one adds a fact"


def _verify(best: Neighbour, content: str, settings: "Settings", created_at: str, matched_at: str | None,
            namespace: str) -> Plan:
    gray = float(settings.verify_gray_threshold)
    if best.similarity < gray:
        return Plan("stored", "verify", True, content)
    if best.changed_fact:
        return Plan("changed_fact", "verify", True, content, best, reasoning=best.changed_fact)
    if best.similarity >= float(settings.verify_reject_threshold) and best.agrees and \
            word_overlap(best.content, content) >= NEAR_IDENTICAL_OVERLAP:
        return Plan("auto_reject", "verify", False, content, best, reasoning="near-identical text")
    command = str(settings.verify_cmd or "")
    fallback = f"fallback_{settings.verify_fallback}"
    if not command:
        return Plan(fallback, "verify", fallback == "fallback_keep", content, best,
                    reasoning="no verifier configured (SUBCOG_VERIFY_CMD)")
    pair = plugins.Pair(best.content, content, matched_at, created_at, best.similarity, namespace)
    try:
        duplicate, reasoning = plugins.verify(command, pair, float(settings.plugin_timeout_secs), settings.environ)
    except plugins.PluginError as e:
        return Plan(fallback, "verify", fallback == "fallback_keep", content, best, reasoning=f"verifier {e}")
    if duplicate:
        return Plan("verifier_reject", "verify", False, content, best, reasoning=reasoning)
    return Plan("verifier_keep", "verify", True, content, best, reasoning=reasoning)


def _replace_or_merge(best: Neighbour, content: str, policy: str, settings: "Settings", created_at: str,
                      matched_at: str | None, namespace: str) -> Plan:
    if policy == "replace":
        replace_at, merge_at = float(settings.replace_threshold), float(settings.replace_merge_threshold)
    else:
        replace_at, merge_at = 2.0, float(settings.merge_threshold)  # merge: the whole zone merges
    if best.similarity < merge_at:
        return Plan("stored", policy, True, content)
    if best.changed_fact:
        return Plan("changed_fact", policy, True, content, best, retire=[best.memory_id],
                    reasoning=f"update: {best.changed_fact}")
    if best.similarity >= replace_at and best.agrees:
        return Plan("replaced", policy, True, content, best, retire=[best.memory_id])
    pair = plugins.Pair(best.content, content, matched_at, created_at, best.similarity, namespace)
    try:
        merged = plugins.merge(str(settings.merge_cmd or ""), pair, float(settings.plugin_timeout_secs),
                               settings.environ)
    except plugins.PluginError as e:
        return Plan("replaced", policy, True, content, best, retire=[best.memory_id],
                    reasoning=f"merger {e}; replaced instead", warnings=[f"merger failed: {e}"])
    if not merged.strip():
        return Plan("replaced", policy, True, content, best, retire=[best.memory_id],
                    reasoning="merger returned nothing; replaced instead",
                    warnings=["merger returned an empty result; it was discarded"])
    return Plan("merged", policy, True, merged.strip(), best, retire=[best.memory_id], retire_status="merged",
                reasoning="merged with the built-in merger" if not settings.merge_cmd else "merged by SUBCOG_MERGE_CMD")
