"""The ranking: how a memory's evidence for a prompt becomes its score, and current facts first.

score = cosine(prompt, memory) + W_COVERAGE * coverage ** 3, times the weight of the memory's source (1 for
curated memories; a lower-ranked source, such as searchable session text, passes a weight below 1).
`coverage` is the share of the prompt's content words (`recall.query.terms(content_of(prompt))`) the memory
holds, each word weighed by its inverse document frequency in the store: a memory that holds the rare words of
the question gets up to W_COVERAGE more, one that shares a common word almost nothing (the cube). Without the
model the cosine is absent and coverage alone ranks. No age or importance weight: on both labelled sets and on
LoCoMo they moved answers down (bench/recall/RESULTS.md).

W_COVERAGE and the cube were chosen by bench/recall/fusion_lab.py on the TRAIN splits of bench/recall/dataset and
dataset2 together: the fusion with the best mean MRR@10 among those that beat both of their halves (cosine alone,
BM25 alone) on the train split of each set; LoCoMo is reported beside it, never used to choose.
A memory outdated by a newer one (a changed fact) always scores below its successor when both are found.
"""
from __future__ import annotations

import math
from typing import Protocol, Sequence

W_COVERAGE = 0.5     # fusion_lab: train of both sets (see the module docstring)
COVERAGE_POWER = 3


class Scored(Protocol):
    """What the ranking reads and writes on a hit (recall.search.Hit)."""

    similarity: float | None
    coverage: float
    score: float
    outdated_by: str | None
    source_weight: float

    @property
    def key(self) -> str: ...


def score(similarity: float | None, coverage: float, source_weight: float = 1.0) -> float:
    """One candidate's score (see the module docstring)."""
    base = (similarity if similarity is not None else 0.0) + W_COVERAGE * coverage ** COVERAGE_POWER
    return base * source_weight if base >= 0 else base / max(source_weight, 1e-9)


def coverage(query_weights: dict[str, float], memory_terms: set[str]) -> float:
    """The IDF-weighted share of the prompt's words the memory holds (0..1)."""
    total = sum(query_weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in query_weights.items() if t in memory_terms) / total


def idf(documents: int, total: int) -> float:
    """Inverse document frequency of a word held by `documents` of `total` memories (never negative)."""
    return math.log((total + 1) / (documents + 0.5))


def rank(hits: Sequence[Scored]) -> list[Scored]:
    """`hits` scored, best first, each outdated memory just below its successor when both are present."""
    by_key = {h.key: h for h in hits}
    for h in hits:
        h.score = score(h.similarity, h.coverage, h.source_weight)
    for _ in range(len(hits)):   # chains: repeat until no outdated memory stands above its successor
        moved = False
        for h in hits:
            successor = by_key.get(h.outdated_by or "")
            if successor is not None and h.score >= successor.score:
                h.score = math.nextafter(successor.score, -math.inf) - 1e-9
                moved = True
        if not moved:
            break
    return sorted(hits, key=lambda h: -h.score)
