"""Tried and dropped (bench/recall/RESULTS.md, round 5): the coverage weight calibrated per store on the store
itself, with its own memories as pseudo-queries, so that a store where the words identify a memory better than
its meaning (LoCoMo's chat turns) would weigh the text side more than a project's store does.

Stores: each project of both labelled sets (`bench/recall/dataset`, `dataset2`) alone and with the first 10,000
of bench/corpus.py's sentences planted in it (vectors from the corpus cache, SUBCOG_BENCH_EMBED_CACHE), and each
LoCoMo conversation (`--locomo PATH`: the public locomo10.json, CC BY-NC 4.0, read at bench time; one store a
conversation, each turn "Speaker: text"). For each store, PSEUDO queries drawn from its memories (seeded): a third
of a memory's content words plus as many words of other memories of the store, the memory itself the answer.
Each is ranked by cosine + W x coverage^3 (coverage with IDF over the store, `recall.fusion`) for W in WEIGHTS;
printed: the pseudo-queries' MRR@10 per W (cosine alone is W = 0, coverage alone W = 100) and, beside it, the real
questions' MRR@10 per W (the sets' TRAIN split; LoCoMo's questions with evidence, for checking).

    SUBCOG_BENCH_EMBED_CACHE=<a shared cache folder> .venv/bin/python -m bench.recall.store_weight_lab [--locomo PATH]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

import numpy as np

from bench.recall import sets
from bench.recall.scale_lab import filler, inverted

WEIGHTS = (0.0, 0.5, 1.0, 2.0, 5.0, 100.0)
PSEUDO = 60          # pseudo-queries a store
SEED = 7


def coverage(words: list[str], index: dict[str, np.ndarray], n: int) -> np.ndarray:
    """The IDF-weighted share of `words` each of the store's `n` memories holds (`recall.fusion.coverage`)."""
    weights = {w: math.log((n + 1) / (len(index.get(w, ())) + 0.5)) for w in set(words)}
    total = sum(weights.values())
    out = np.zeros(n)
    if total > 0:
        for w, v in weights.items():
            if w in index:
                out[index[w]] += v / total
    return out


def mrr(vectors: np.ndarray, index: dict, n: int, queries: list[tuple[np.ndarray, list[str], set[int]]]
        ) -> dict[float, float]:
    """MRR@10 per weight; a query's answers are memory rows."""
    out = {}
    sides = [(vectors @ q, coverage(words, index, n), answers) for q, words, answers in queries]
    for w in WEIGHTS:
        rr = []
        for cos, cov, answers in sides:
            score = cos + w * cov ** 3
            best = max(score[i] for i in answers)
            rank = int((score > best).sum())
            rr.append(1 / (rank + 1) if rank < 10 else 0.0)
        out[w] = float(np.mean(rr)) if rr else float("nan")
    return out


def pseudo_queries(docs: list[list[str]], rng: random.Random) -> list[tuple[str, list[str], set[int]]]:
    """A third of a memory's content words and as many words of other memories (the frame a question adds)."""
    out = []
    for i in rng.sample(range(len(docs)), min(PSEUDO, len(docs))):
        words = list(dict.fromkeys(docs[i]))
        if len(words) < 3:
            continue
        k = max(2, len(words) // 3)
        picked = rng.sample(words, k)
        for _ in range(k):
            other = docs[rng.randrange(len(docs))]
            if other:
                picked.append(rng.choice(other))
        out.append((" ".join(picked), picked, {i}))
    return out


def stores(locomo: Path | None):
    """(name, texts, fact of each text, real questions [(text, answer facts)], vectors or None, filler size)."""
    for name, path in sets.SETS.items():
        rows, queries = sets.load(path)
        for project in sorted({r.project for r in rows}):
            mine = [r for r in rows if r.project == project]
            asked = [(q.query, q.answers) for q in queries if q.project == project and q.is_relevant
                     and q.split == "train"]
            yield f"{name}/{project}", [r.content for r in mine], [r.fact for r in mine], asked
    if locomo:
        for conv in json.loads(locomo.read_text()):
            c = conv["conversation"]
            turns = [(t["dia_id"], f"{t['speaker']}: {t['text']}") for key, v in c.items()
                     if key.startswith("session_") and isinstance(v, list) for t in v]
            asked = [(qa["question"], set(qa["evidence"])) for qa in conv["qa"]
                     if qa.get("category") != 5 and qa.get("evidence")]
            yield f"locomo/{conv['sample_id']}", [t for _, t in turns], [d for d, _ in turns], asked


def main(argv: list[str] | None = None) -> int:
    from subcog_store.model.embedder import Embedder
    from subcog_store.recall.query import content_of, terms

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--filler", type=int, default=10_000)
    args = parser.parse_args(argv)
    embedder = Embedder()
    embedder.load()
    ftexts, fvectors = filler(args.filler) if args.filler else ([], np.zeros((0, 384), dtype=np.float32))
    fdocs = [terms(t) for t in ftexts]
    print("store | size | pseudo-queries MRR@10 per W " + " ".join(map(str, WEIGHTS))
          + " | real questions MRR@10 per W", flush=True)
    for name, texts, facts, asked in stores(args.locomo):
        own = embedder.embed_batch(texts)
        sizes = (0, args.filler) if args.filler and not name.startswith("locomo") else (0,)
        for size in sizes:
            docs = [terms(t) for t in texts] + fdocs[:size]
            vectors = np.vstack([own, fvectors[:size]]) if size else own
            index = inverted(docs)
            rng = random.Random(SEED)
            made = pseudo_queries(docs, rng)
            pseudo = [(v, words, answers) for v, (_, words, answers) in
                      zip(embedder.embed_batch([q for q, _, _ in made]), made)]
            rows_of = {}
            for i, f in enumerate(facts):
                rows_of.setdefault(f, set()).add(i)
            real = [(v, list(dict.fromkeys(terms(content_of(q) or q))), set().union(*(rows_of.get(a, set())
                                                                                      for a in answers)))
                    for v, (q, answers) in zip(embedder.embed_batch([q for q, _ in asked]), asked)]
            real = [r for r in real if r[2]]
            p, r = mrr(vectors, index, len(docs), pseudo), mrr(vectors, index, len(docs), real)
            print(f"{name} | {len(docs)} | " + " ".join(f"{p[w]:.3f}" for w in WEIGHTS) + " | "
                  + " ".join(f"{r[w]:.3f}" for w in WEIGHTS), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
