"""Tried and dropped (bench/recall/RESULTS.md, round 4b): the prompt's vector moved toward its own nearest memories
before the fusion (pseudo-relevance feedback: q' = q + beta x the mean vector of its k nearest, normalized), for
paraphrased questions.

Both labelled sets are built through the real capture path (`sets.build`); each relevant query meets its
project's memories and the first 0, 200 or 10,000 of bench/corpus.py's sentences (vectors from the corpus cache,
SUBCOG_BENCH_EMBED_CACHE), coverage with IDF over the project as `scale_lab.py` computes it; every candidate is
ranked by the shipped fusion (cosine + 0.5 x coverage^3, an outdated memory below its successor) with the cosine
of q (shipped) or of q'. Prints recall@5 / MRR@10 / paraphrase recall@5 per set, split and size.

    SUBCOG_BENCH_EMBED_CACHE=<a shared cache folder> .venv/bin/python -m bench.recall.prf_lab
"""
from __future__ import annotations

import math
import sys
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from bench.recall import sets
from bench.recall.scale_lab import OUT, filler, inverted, word_weights

SIZES = (0, 200, 10_000)


@dataclass
class Row:
    set: str
    split: str
    kind: str
    size: int
    answers: set
    facts: list
    successor: list
    query: np.ndarray
    vectors: np.ndarray          # the project's memories, then the filler
    coverage: np.ndarray


def build_rows() -> list[Row]:
    from subcog_store.model.embedder import Embedder
    from subcog_store.recall.query import content_of, terms

    embedder = Embedder()
    embedder.load()
    texts, fvec = filler(max(SIZES))
    fdocs = inverted([terms(t) for t in texts])
    out: list[Row] = []
    for name, path in sets.SETS.items():
        rows, queries = sets.load(path)
        built = sets.build(OUT / f"prf-{name}.db", rows, embedder)
        projects = {}
        for project in sorted({r.project for r in rows}):
            mems = built.store.memories(domain=project, limit=100_000)
            index = {m.id: i for i, m in enumerate(mems)}
            projects[project] = (mems, embedder.embed_batch([m.content for m in mems]),
                                 [set(terms(m.content)) for m in mems], [index.get(m.successor_id) for m in mems])
        relevant = [q for q in queries if q.is_relevant]
        for q, qv in zip(relevant, embedder.embed_batch([q.query for q in relevant])):
            mems, vecs, docs, successor = projects[q.project]
            words = list(dict.fromkeys(terms(content_of(q.query))))
            for size in SIZES:
                total = len(mems) + size
                weights = word_weights(words, docs, fdocs, size)
                wsum = sum(weights.values())
                cov = np.zeros(total)
                if wsum:
                    cov[:len(mems)] = [sum(v for w, v in weights.items() if w in d) / wsum for d in docs]
                    for w, v in weights.items():
                        fd = fdocs.get(w)
                        if fd is not None and size:
                            cov[len(mems) + fd[:int(np.searchsorted(fd, size))]] += v / wsum
                out.append(Row(name, q.split, q.kind, size, set(q.answers), [built.fact_of(m.id) for m in mems],
                               successor, qv, np.concatenate([vecs, fvec[:size]]) if size else vecs, cov))
        built.store.close()
    return out


def evaluate(rows: list[Row], cosine) -> dict:
    res: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        s = cosine(r.query, r.vectors) + 0.5 * r.coverage ** 3
        for _ in range(3):
            for i, j in enumerate(r.successor):
                if j is not None and s[i] >= s[j]:
                    s[i] = s[j] - 1e-9
        ranked: list[str] = []
        for i in np.argsort(-s)[:40]:
            fact = r.facts[i] if i < len(r.facts) else f"filler-{i}"
            if fact not in ranked:
                ranked.append(fact)
        hit = len(r.answers & set(ranked[:5])) / len(r.answers)
        group = res[(r.set, r.split, r.size)]
        group["r5"].append(hit)
        group["rr"].append(next((1 / (k + 1) for k, f in enumerate(ranked[:10]) if f in r.answers), 0.0))
        if r.kind == "paraphrase":
            group["p5"].append(hit)
    return {k: (float(np.mean(v["r5"])), float(np.mean(v["rr"])), float(np.mean(v["p5"])) if v["p5"] else math.nan)
            for k, v in res.items()}


def feedback(k: int, beta: float):
    def cosine(q: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        near = np.argsort(-(vectors @ q))[:k]
        moved = q + beta * vectors[near].mean(axis=0)
        return vectors @ (moved / np.linalg.norm(moved))
    return cosine


def main() -> int:
    rows = build_rows()
    variants = {"shipped (the prompt's vector)": lambda q, vectors: vectors @ q}
    for k in (1, 3, 5):
        for beta in (0.3, 0.6, 1.0):
            variants[f"feedback k={k} beta={beta}"] = feedback(k, beta)
    for name, cosine in variants.items():
        print(name, " ".join(f"{s[-1]}{split[:2]}+{size}: {r5:.3f}/{rr:.3f}/{p5:.2f}" for (s, split, size), (r5, rr, p5)
                             in sorted(evaluate(rows, cosine).items())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
