"""The duplicate rule, in one place: every caller (store check, policies, in-batch, batch clustering, eval-pairs)
judges a pair of texts here.

Two texts are duplicates when their cosine similarity reaches the threshold, the guard finds no changed fact
(`text.guard.changed_fact`) and they share enough content that neither adds a fact (`text.guard.lexical_support`
at or above SUPPORT_MIN). Sentence embeddings cannot see a changed fact ("TTL is 5 minutes" vs "10 minutes"
scores 0.985); the guard can.
"""
from __future__ import annotations

from dataclasses import dataclass

from subcog_store.text.guard import SUPPORT_MIN, PhraseSimilarity, changed_fact, lexical_support

__all__ = ["PairVerdict", "PhraseSimilarity", "judge", "is_duplicate"]


@dataclass(frozen=True)
class PairVerdict:
    """The guard's view of a pair; `duplicate(threshold)` applies the whole rule."""

    similarity: float
    changed_fact: str | None       # "number: 5 minutes vs 10 minutes" when the texts state different facts
    support: float                 # 0..1: how much content each text shares with the other

    @property
    def agrees(self) -> bool:
        """No changed fact, and enough shared content that neither text adds a fact."""
        return self.changed_fact is None and self.support >= SUPPORT_MIN

    @property
    def veto(self) -> str | None:
        """Why the guard keeps the pair apart, in short ("number: 5 vs 10", "support 0.42"), or None."""
        if self.changed_fact:
            return self.changed_fact
        return f"support {self.support:.2f}" if self.support < SUPPORT_MIN else None

    def duplicate(self, threshold: float) -> bool:
        return self.similarity >= threshold and self.agrees

    def explain(self, threshold: float, method: str = "embedding") -> str:
        """The verdict in words, as the decision log and the reports give it."""
        if self.changed_fact:
            return f"changed fact: {self.changed_fact}"
        if self.support < SUPPORT_MIN:
            return (f"similar ({self.similarity:.3f}) but shares few content words (support {self.support:.2f}): "
                    "one adds a fact")
        relation = ">=" if self.similarity >= threshold else "<"
        return f"{method} similarity {self.similarity:.3f} {relation} {threshold}"


def judge(older: str, newer: str, similarity: float, phrase_similarity: PhraseSimilarity | None = None
          ) -> PairVerdict:
    """Judge `newer` against `older` (their cosine similarity given): changed fact and shared content.

    `phrase_similarity` lets the guard ask the model whether a differing word or short phrase is a synonym
    ("two kids" / "two children"); it is asked only when its answer can change the verdict. Without it a
    differing word counts as a different fact (the safe side).
    """
    verdict = changed_fact(older, newer, phrase_similarity)
    reason = None
    if verdict.changed:
        reason = f"{verdict.reason}: {verdict.detail}" if verdict.detail else str(verdict.reason)
        # the support of a changed fact decides nothing: spare the model
        return PairVerdict(float(similarity), reason, lexical_support(older, newer))
    return PairVerdict(float(similarity), reason, lexical_support(older, newer, phrase_similarity))


def is_duplicate(older: str, newer: str, similarity: float, threshold: float,
                 phrase_similarity: PhraseSimilarity | None = None) -> bool:
    """The whole rule for one pair."""
    return similarity >= threshold and judge(older, newer, similarity, phrase_similarity).agrees
