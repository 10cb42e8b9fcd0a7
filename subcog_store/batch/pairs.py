"""Candidate pairs of a scope: pairs (i < j) at or above the threshold among the k nearest of i or j.

Three ways to find them: blocked matrix products over the stored vectors (default), one KNN query per memory
(the semantic tier's), or, without vectors, FTS5 over shared words confirmed by word overlap (the text tier).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

from subcog_store.db import knn
from subcog_store.dedup.check import text_neighbours

if TYPE_CHECKING:
    import apsw
    import numpy as np

Pair = tuple[int, int, float]
Tick = Callable[[int, int], None]
BLOCK = 256            # rows per matrix block: 256 x 100k float32 similarities = 102 MB
ROW_CAP = 64           # at most this many above-threshold neighbours kept per row and block


def top_k_pairs(src: "np.ndarray", dst: "np.ndarray", sim: "np.ndarray", k: int) -> "np.ndarray":
    """Indices of the pairs (src < dst) that are among the k strongest of either endpoint."""
    import numpy as np

    if len(src) == 0:
        return np.zeros(0, dtype=np.int64)
    edge = np.arange(len(src))
    node = np.concatenate([src, dst])
    both_edge = np.concatenate([edge, edge])
    both_sim = np.concatenate([sim, sim])
    order = np.lexsort((-both_sim, node))
    node_sorted = node[order]
    starts = np.r_[0, np.flatnonzero(np.diff(node_sorted)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(node_sorted)]))
    rank = np.arange(len(node_sorted)) - group_start
    return np.unique(both_edge[order][rank < k])


def matrix_pairs(vectors: "np.ndarray", threshold: float, k: int, tick: Tick) -> list[Pair]:
    """Blocked products against the upper triangle: every pair is computed once; each block's rows keep at most
    ROW_CAP above-threshold neighbours (only a pathological pile of near-identical memories reaches it)."""
    import numpy as np

    n = len(vectors)
    srcs, dsts, sims = [], [], []
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        block = vectors[start:stop] @ vectors[start:].T            # (b, n - start)
        b = stop - start
        block[:, :b][np.tril_indices(b)] = -2.0                    # j <= i: self and the lower triangle
        r, c = np.nonzero(block >= threshold)
        if len(r):
            s = block[r, c]
            if len(r) > ROW_CAP:
                order = np.lexsort((-s, r))
                r, c, s = r[order], c[order], s[order]
                starts = np.r_[0, np.flatnonzero(np.diff(r)) + 1]
                rank = np.arange(len(r)) - np.repeat(starts, np.diff(np.r_[starts, len(r)]))
                keep = rank < ROW_CAP
                r, c, s = r[keep], c[keep], s[keep]
            srcs.append(r + start)
            dsts.append(c + start)
            sims.append(s)
        del block
        tick(stop, n)
    if not srcs:
        return []
    src, dst, sim = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(sims)
    return [(int(src[e]), int(dst[e]), float(sim[e])) for e in top_k_pairs(src, dst, sim, k)]


def vec0_pairs(con: "apsw.Connection", vectors: "np.ndarray", seqs: Sequence[int], namespace: str, domain: str,
               threshold: float, k: int, tick: Tick) -> list[Pair]:
    """The same pairs by one KNN query per memory (the semantic tier's, db/knn.py: exact above the threshold)."""
    import numpy as np

    index = {s: i for i, s in enumerate(seqs)}
    found: dict[tuple[int, int], float] = {}
    for i, vector in enumerate(vectors):
        hits, _ = knn.nearest(con, np.asarray(vector, dtype=np.float32), namespace, domain, k + 1, threshold)
        for hit in hits:
            j = index.get(hit.seq)
            if j is not None and j != i and hit.similarity >= threshold:
                found[(min(i, j), max(i, j))] = hit.similarity
        tick(i + 1, len(vectors))
    return [(a, b, s) for (a, b), s in found.items()]


def text_pairs(con: "apsw.Connection", ids: Sequence[str], contents: Sequence[str], namespace: str, domain: str,
               threshold: float, k: int, tick: Tick) -> list[Pair]:
    """FTS5 over shared significant words, confirmed by word overlap: the store's text tier, per memory."""
    index = {memory_id: i for i, memory_id in enumerate(ids)}
    found: dict[tuple[int, int], float] = {}
    for i, content in enumerate(contents):
        for n in text_neighbours(con, content, namespace, domain, k + 1):  # +1: itself
            j = index.get(n.memory_id)
            if j is not None and j != i and n.similarity >= threshold:
                found[(min(i, j), max(i, j))] = n.similarity
        tick(i + 1, len(contents))
    return [(a, b, s) for (a, b), s in found.items()]
