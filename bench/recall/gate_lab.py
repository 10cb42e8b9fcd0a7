"""Where the prompt gate's constants come from: silence that holds at any store size, chosen on TRAIN.

The labelled memories of each set (the stores bench/recall/fusion_lab.py built) are planted among 0, 200 and
10,000 filler memories of the same project (bench/corpus.py's sentences, their cached vectors). For every query
the vector side's cosines are sorted; the gate of `recall/inject.py` injects a memory when its cosine reaches
FLOOR and stands MARGIN above the store's own level for this prompt: the mean cosine of the vector side's ranks
6-15 (what the prompt scores against memories that are not about it, estimated from the store itself). The
grid's pick: the most answers injected on relevant TRAIN prompts while staying silent on >= 0.92 of the TRAIN
prompts nothing answers, at every size and in both sets; reported on TEST.

    .venv/bin/python -m bench.recall.gate_lab
"""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

from bench.recall import sets

OUT = Path(__file__).resolve().parents[1] / "out" / "recall"
SIZES = (0, 200, 10_000)
FLOORS = [round(x, 2) for x in np.arange(0.20, 0.56, 0.02)]
MARGINS = [round(x, 2) for x in np.arange(0.00, 0.31, 0.02)]
TAIL = slice(5, 15)
LIMIT = 3
SILENCE = 0.92


def level(scores: np.ndarray) -> float | None:
    """The mean cosine of ranks 6-15 (None when the store holds fewer than six memories)."""
    tail = scores[TAIL]
    return float(tail.mean()) if len(tail) else None


def gate(scores: np.ndarray, floor: float, margin: float) -> int:
    """How many of the best memories pass (at most LIMIT)."""
    base = level(scores)
    bar = max(floor, base + margin) if base is not None else max(floor, 0.37)
    return int(min(LIMIT, np.sum(scores >= bar)))


def main() -> int:
    from bench import corpus
    from subcog_store.model.embedder import Embedder
    from subcog_store.store import Store

    embedder = Embedder()
    embedder.load()
    c = corpus.build(size=10_000, n_queries=10, n_fresh=10)
    filler, _ = corpus.embed_cached(c.sentences[:10_000], log=print)
    cases = []   # (set, split, relevant, size, scores sorted desc, answer positions in that order)
    for name, path in sets.SETS.items():
        rows, queries = sets.load(path)
        store = Store(OUT / f"lab-{name}.db", embedder=embedder, environ=sets.clean_environ(), fetch_model=False)
        facts = {}
        for r in rows:
            found = store.con.execute("select id from memories where content = ? and domain = ?",
                                      (r.content, r.project)).fetchone()
            if found:
                facts[found[0]] = r.fact
        by_project = {}
        for q in queries:
            if q.project not in by_project:
                mems = [m for m in store.memories(domain=q.project, limit=100_000)]
                by_project[q.project] = (np.stack([store.embed(m.content) for m in mems]),
                                         [facts.get(m.id) for m in mems])
            vecs, mfacts = by_project[q.project]
            qv = embedder.embed_batch([q.query])[0]
            own = vecs @ qv
            for size in SIZES:
                scores = np.concatenate([own, filler[:size] @ qv]) if size else own
                order = np.argsort(-scores)
                fact_at = [mfacts[i] if i < len(mfacts) else None for i in order]
                cases.append((name, q.split, q.is_relevant, size, scores[order],
                              q.answers, fact_at))
        store.close()
    results = []
    for floor, margin in itertools.product(FLOORS, MARGINS):
        row = {"floor": floor, "margin": margin}
        for split in ("train", "test"):
            for name in sets.SETS:
                for size in SIZES:
                    sub = [x for x in cases if x[0] == name and x[1] == split and x[3] == size]
                    silent = [gate(x[4], floor, margin) == 0 for x in sub if not x[2]]
                    answered = [len(x[5] & set(x[6][:gate(x[4], floor, margin)])) / len(x[5]) for x in sub if x[2]]
                    row[f"{split} {name} {size}"] = (float(np.mean(silent)), float(np.mean(answered)))
        results.append(row)
    feasible = [r for r in results if all(r[f"train {n} {s}"][0] >= SILENCE for n in sets.SETS for s in SIZES)]
    best = max(feasible, key=lambda r: (round(np.mean([r[f"train {n} {s}"][1] for n in sets.SETS for s in SIZES]),
                                              9), r["floor"], r["margin"]))
    absolute = [r for r in results if r["margin"] == 0.0]
    print("chosen:", best["floor"], best["margin"])
    for label, r in (("chosen", best), ("shipped absolute 0.37", next(x for x in absolute if x["floor"] == 0.36))):
        print(label, {k: f"{v[0]:.3f} / {v[1]:.3f}" for k, v in r.items() if isinstance(v, tuple)})
    (OUT / "gate_lab-last.json").write_text(json.dumps({"chosen": best, "grid": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
