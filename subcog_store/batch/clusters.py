"""Clusters of duplicates: union-find over the pairs the duplicate rule accepts, strongest first; two groups
join only when no pair across them is vetoed, so a chain A~B~C never brings together an A and a C that state
different facts."""
from __future__ import annotations

from typing import Sequence

from subcog_store.dedup.rule import PhraseSimilarity, judge

Pair = tuple[int, int, float]


class UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))
        self.members: dict[int, list[int]] = {}

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def group(self, root: int) -> list[int]:
        return self.members.get(root, [root])

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        ga, gb = self.group(ra), self.group(rb)
        if len(ga) < len(gb):
            ra, rb, ga, gb = rb, ra, gb, ga
        self.parent[rb] = ra
        self.members[ra] = ga + gb
        self.members.pop(rb, None)


def clusters(ids: Sequence[str], contents: Sequence[str], pairs: Sequence[Pair], guarded: list[dict],
             phrase_similarity: PhraseSimilarity | None = None) -> list[tuple[list[int], list[Pair]]]:
    """Groups of indices (sorted) with their kept edges, strongest first. `ids`/`contents` are oldest first,
    so for i < j, i is the older. Pairs the rule vetoes are appended to `guarded`."""
    verdicts: dict[tuple[int, int], str | None] = {}

    def vetoed(a: int, b: int, sim: float) -> str | None:
        older, newer = min(a, b), max(a, b)
        if (older, newer) not in verdicts:
            verdict = judge(contents[older], contents[newer], sim, phrase_similarity)
            verdicts[(older, newer)] = verdict.veto
        return verdicts[(older, newer)]

    uf = UnionFind(len(ids))
    kept: list[Pair] = []
    for i, j, sim in sorted(pairs, key=lambda p: (-p[2], p[0], p[1])):
        older, newer = min(i, j), max(i, j)
        reason = vetoed(older, newer, sim)
        if reason:
            guarded.append({"a": ids[older], "b": ids[newer], "similarity": round(sim, 4), "reason": reason})
            continue
        ri, rj = uf.find(i), uf.find(j)
        if ri != rj:
            conflict = next(((x, y, why) for x in uf.group(ri) for y in uf.group(rj)
                             if {x, y} != {i, j} and (why := vetoed(x, y, sim))), None)
            if conflict:
                x, y, why = conflict
                guarded.append({"a": ids[older], "b": ids[newer], "similarity": round(sim, 4),
                                "reason": f"would join {ids[min(x, y)]} and {ids[max(x, y)]}, which differ: {why}"})
                continue
            uf.union(i, j)
        kept.append((older, newer, sim))
    groups: dict[int, list[int]] = {}
    for x in range(len(ids)):
        groups.setdefault(uf.find(x), []).append(x)
    edges: dict[int, list[Pair]] = {}
    for e in kept:
        edges.setdefault(uf.find(e[0]), []).append(e)
    return [(sorted(g), sorted(edges.get(root, []), key=lambda e: -e[2]))
            for root, g in sorted(groups.items(), key=lambda kv: min(kv[1])) if len(g) > 1]
