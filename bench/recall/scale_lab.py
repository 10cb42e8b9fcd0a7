"""The ranking and the prompt gate among planted memories: where their constants come from, at any store size.

Both labelled sets (`bench/recall/dataset`, `dataset2`) are built through the real capture path (`sets.build`);
then every query meets its project's labelled memories among the first N of bench/corpus.py's 100,000-sentence
corpus planted in the same project (N = 0, 200, 10,000, 100,000: the first 10,000 of the 100,000 are the
10,000; vectors from the corpus cache, `SUBCOG_BENCH_EMBED_CACHE` to share it). For each query and size the
features the product computes are taken over every memory of the project: the cosine of the prompt as typed and
the coverage (`recall.fusion.coverage`: the IDF-weighted share of the prompt's content words a memory holds,
IDF over the project's memories); kept are the 100 best by each, the labelled memories, and the vector side's 50
best cosines (the gate's view). The cases are pickled; `--cached` scores them again without the model.

Scored on each split, set and size: recall@5, MRR@10 and paraphrase recall@5 of a fusion; the prompt gate's
silence on prompts nothing answers and answers injected on relevant prompts (a memory is injected when it is
among the fused top 10, clears the gate's bar, and is one of the first three that do). Constants are chosen on
one set's TRAIN split and reported on the other set's TEST split, and the other way round (`choose`).

    .venv/bin/python -m bench.recall.scale_lab [--sizes 0,200,10000,100000] [--cached] [--gaps]
"""
from __future__ import annotations

import argparse
import io
import itertools
import json
import math
import pickle
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.recall import sets

OUT = Path(__file__).resolve().parents[1] / "out" / "recall"
CASES = OUT / "scale_lab-cases.pickle"
SIZES = (0, 200, 10_000, 100_000)
KEEP = 100          # best candidates kept per side
GATE_TOP = 50       # the vector side's cosines the gate sees (recall.search.CANDIDATES)
PROMPT_LIMIT = 3    # memories injected at most (SUBCOG_RECALL_PROMPT_LIMIT)
SILENCE = 0.92      # the target: silent on prompts nothing answers


@dataclass
class Case:
    """One query at one filler size: its candidates (labelled memories and the best filler) and their features."""

    set: str
    qid: str
    split: str
    kind: str
    size: int
    answers: set[str]
    facts: list[str | None]       # the labelled fact of each candidate (None: filler)
    cos: np.ndarray
    cov: np.ndarray
    outdated_by: list[int | None]  # index of the candidate that outdates this one (changed facts)
    top_cos: np.ndarray           # the vector side's best cosines, best first (at most GATE_TOP)
    mu: float = float("nan")      # the mean and spread of the cosine over every memory of the project (round 5)
    sd: float = float("nan")
    rcos: np.ndarray | None = None   # the cosines of the prompt reduced to its content (query.content_of) ...
    rtop: np.ndarray | None = None   # ... and its best GATE_TOP over every memory of the project (round 5)

    @property
    def relevant(self) -> bool:
        return bool(self.answers)


# -- building the cases --------------------------------------------------------------------------------------
def filler(n: int) -> tuple[list[str], np.ndarray]:
    from bench import corpus

    c = corpus.build(size=100_000, n_queries=10, n_fresh=10)
    vectors, _ = corpus.embed_cached(c.sentences[:n], log=lambda s: print(s, flush=True))
    return c.sentences[:n], vectors


def inverted(docs: list[list[str]]) -> dict[str, np.ndarray]:
    index: dict[str, list[int]] = defaultdict(list)
    for i, words in enumerate(docs):
        for w in set(words):
            index[w].append(i)
    return {w: np.asarray(ix, dtype=np.int64) for w, ix in index.items()}


def word_weights(words: list[str], docs: list[set[str]], fdocs: dict[str, np.ndarray], size: int
                 ) -> dict[str, float]:
    """Each prompt word's IDF over the project's memories plus the first `size` filler memories."""
    total = len(docs) + size
    weights = {}
    for w in words:
        fd = fdocs.get(w)
        df = sum(1 for d in docs if w in d) + (int(np.searchsorted(fd, size)) if fd is not None else 0)
        weights[w] = math.log((total + 1) / (df + 0.5))
    return weights


def build_cases(sizes: tuple[int, ...]) -> list[Case]:
    from subcog_store.model.embedder import Embedder
    from subcog_store.recall.query import content_of, terms

    embedder = Embedder()
    embedder.load()
    big = max(sizes)
    texts, fvec = filler(big)
    fdocs = inverted([terms(t) for t in texts])
    out: list[Case] = []
    for name, path in sets.SETS.items():
        rows, queries = sets.load(path)
        built = sets.build(OUT / f"scale-{name}.db", rows, embedder)
        store = built.store
        by_project = {}
        for project in sorted({r.project for r in rows}):
            mems = store.memories(domain=project, limit=100_000)
            vecs = embedder.embed_batch([m.content for m in mems])
            index = {m.id: i for i, m in enumerate(mems)}
            by_project[project] = (mems, vecs, [set(terms(m.content)) for m in mems],
                                   [index.get(m.successor_id) for m in mems])
        qvecs = embedder.embed_batch([q.query for q in queries])
        rvecs = embedder.embed_batch([content_of(q.query) or q.query for q in queries])
        for q, qv, rv in zip(queries, qvecs, rvecs):
            mems, vecs, docs, succ = by_project[q.project]
            own_cos, own_r = vecs @ qv, vecs @ rv
            fcos_all = fvec @ qv if big else np.zeros(0)
            fr_all = fvec @ rv if big else np.zeros(0)
            words = list(dict.fromkeys(terms(content_of(q.query))))
            for size in sizes:
                fcos = fcos_all[:size]
                total = len(mems) + size
                weights = word_weights(words, docs, fdocs, size)
                wsum = sum(weights.values())
                own_cov = np.array([sum(v for w, v in weights.items() if w in d) / wsum if wsum else 0.0
                                    for d in docs])
                fcov = np.zeros(size)
                if wsum:
                    for w, v in weights.items():
                        fd = fdocs.get(w)
                        if fd is not None:
                            fcov[fd[:int(np.searchsorted(fd, size))]] += v / wsum
                keep = set(np.argsort(-fcos)[:KEEP].tolist()) | set(np.argsort(-fcov)[:KEEP].tolist()) \
                    if size else set()
                keep = sorted(keep)
                allcos, allr = np.concatenate([own_cos, fcos]), np.concatenate([own_r, fr_all[:size]])
                top = np.sort(allcos)[::-1][:GATE_TOP]
                out.append(Case(name, q.qid, q.split, q.kind, size, q.answers,
                                [built.fact_of(m.id) for m in mems] + [None] * len(keep),
                                np.concatenate([own_cos, fcos[keep]]), np.concatenate([own_cov, fcov[keep]]),
                                list(succ) + [None] * len(keep), top, float(allcos.mean()), float(allcos.std()),
                                np.concatenate([own_r, fr_all[:size][keep]]), np.sort(allr)[::-1][:GATE_TOP]))
        store.close()
        print(f"{name}: cases built", flush=True)
    return out


def load_cases(path: Path = CASES) -> list[Case]:
    """The pickled cases, whichever module name pickled them (`-m bench.recall.scale_lab` pickles `__main__.Case`)."""
    class Cases(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            return Case if name == "Case" else super().find_class(module, name)
    return Cases(io.BytesIO(path.read_bytes())).load()


# -- scoring ---------------------------------------------------------------------------------------------------
def order(c: Case, scores: np.ndarray) -> np.ndarray:
    """Candidates best first, each outdated memory just below its successor (recall.fusion.rank)."""
    s = scores.astype(float).copy()
    for _ in range(3):
        for i, j in enumerate(c.outdated_by):
            if j is not None and s[i] >= s[j]:
                s[i] = s[j] - 1e-9
    return np.argsort(-s, kind="stable")


def facts_in(c: Case, idx) -> list[str]:
    out: list[str] = []
    for i in idx:
        f = c.facts[i] if c.facts[i] is not None else f"filler-{i}"
        if f not in out:
            out.append(f)
    return out


def rank_metrics(cases: list[Case], fusion) -> dict:
    r5, rr, r5p = [], [], []
    for c in cases:
        if not c.relevant:
            continue
        ranked = facts_in(c, order(c, fusion(c))[:40])
        hit = len(c.answers & set(ranked[:5])) / len(c.answers)
        r5.append(hit)
        rr.append(next((1 / (i + 1) for i, f in enumerate(ranked[:10]) if f in c.answers), 0.0))
        if c.kind == "paraphrase":
            r5p.append(hit)
    return {"recall5": _mean(r5), "mrr10": _mean(rr), "paraphrase5": _mean(r5p)}


def gate_metrics(cases: list[Case], fusion, passes) -> dict:
    """silent: share of prompts nothing answers that get nothing; answers: share of the answers injected.
    `passes(case)`: which candidates clear the gate (a boolean array)."""
    silent, answers = [], []
    for c in cases:
        ok = passes(c)
        top = order(c, fusion(c))[:10]
        chosen = [i for i in top if ok[i]][:PROMPT_LIMIT]
        if not c.relevant:
            silent.append(not chosen)
        else:
            got = {c.facts[i] for i in chosen}
            answers.append(len(c.answers & got) / len(c.answers))
    return {"silent": _mean(silent), "answers": _mean(answers)}


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


# -- the candidates ------------------------------------------------------------------------------------------------
def fusions() -> dict:
    f = {"cosine alone": lambda c: c.cos, "coverage alone": lambda c: c.cov + 1e-6 * c.cos}
    for p in (2, 3):
        for w in (0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0):
            f[f"cosine + {w} x coverage^{p}"] = (lambda w, p: lambda c: c.cos + w * c.cov ** p)(w, p)
    return f


def standout_weight(top: np.ndarray, scale: float = 0.36, cap: float = 4.0) -> float:
    """Tried and dropped (RESULTS.md, round 4b): the coverage weight multiplied by how much less the vector side's
    best stands above the prompt's level than it does for a typical train prompt (`scale`: the median standout of
    the train sets' relevant prompts without filler), between 1 and `cap`: trust the words where the cosine is
    flat (LoCoMo)."""
    base = level(top)
    return 1.0 if base is None else min(cap, max(1.0, scale / max(float(top[0]) - base, 1e-6)))


def standout_fusion(scale: float = 0.36, cap: float = 4.0):
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    return lambda c: c.cos + W_COVERAGE * standout_weight(c.top_cos, scale, cap) * c.cov ** COVERAGE_POWER


def level(top: np.ndarray, lo: int = 5, hi: int = 15) -> float | None:
    tail = top[lo:hi]
    return float(tail.mean()) if len(tail) else None


def memories_of(c: Case) -> int:
    """The project's memories at this case's size: its labelled ones and the planted filler."""
    return sum(f is not None for f in c.facts) + c.size


def relative(floor: float, margin: float, scale: float | None = None):
    """The relative bar alone (`inject.prompt_bar`): `margin` above the prompt's level, narrowed to
    scale / sqrt(2 ln N) in a project of N memories when `scale` is given (`inject.gate_margin`)."""
    def passes(c: Case) -> np.ndarray:
        base = level(c.top_cos)
        m = margin if scale is None else min(margin, scale / math.sqrt(2 * math.log(memories_of(c))))
        return c.cos >= (max(floor, 0.37) if base is None else max(floor, base + m))
    return passes


def two_ways(floor: float, margin: float, coverage: float, coverage_floor: float, scale: float | None = None):
    """The relative bar, or the memory holds `coverage` of the prompt's weighted words and its cosine reaches the
    prompt's level and `coverage_floor` (`inject.holds_the_words`)."""
    bar = relative(floor, margin, scale)

    def passes(c: Case) -> np.ndarray:
        base = level(c.top_cos)
        second = np.zeros(len(c.cos), dtype=bool) if base is None else \
            (c.cov >= coverage) & (c.cos >= max(coverage_floor, base))
        return bar(c) | second
    return passes


def choose_coverage_gate(cases: list[Case]) -> tuple[tuple, dict]:
    """The second way in, chosen on TRAIN: of (coverage, cosine floor) the pair with the most answers injected in
    the worst (set, size) group while every group stays silent on >= SILENCE of the prompts nothing answers; ties
    go to the higher coverage, then the higher floor (the stricter). The relative bar stays as shipped."""
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    from subcog_store.recall.inject import GATE_MARGIN

    fusion = lambda c: c.cos + W_COVERAGE * c.cov ** COVERAGE_POWER   # noqa: E731
    train = defaultdict(list)
    for c in cases:
        if c.split == "train" and c.size <= 10_000:
            train[(c.set, c.size)].append(c)
    scored = {}
    for cov, flo in itertools.product((0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7), (0.25, 0.3, 0.34, 0.37, 0.4)):
        g = {k: gate_metrics(v, fusion, two_ways(0.40, GATE_MARGIN, cov, flo)) for k, v in train.items()}
        if all(m["silent"] >= SILENCE for m in g.values()):
            scored[(cov, flo)] = g
    best = max(scored, key=lambda p: (round(min(m["answers"] for m in scored[p].values()), 6), p))
    return best, {"|".join(map(str, k)): v for k, v in scored[best].items()}


def choose_margin_scale(cases: list[Case]) -> tuple[float, dict]:
    """The gate's margin narrowed in a large project (`inject.gate_margin`: min(GATE_MARGIN, scale / sqrt(2 ln N))),
    chosen on TRAIN at every size (0, 200, 10,000 and 100,000): the scale with the most answers injected in the
    worst (set, size) group while every group stays silent on >= SILENCE; ties to the larger scale (the stricter).
    The second way in stays as shipped."""
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    from subcog_store.recall.inject import COVERAGE_FLOOR, COVERAGE_GATE, GATE_MARGIN

    fusion = lambda c: c.cos + W_COVERAGE * c.cov ** COVERAGE_POWER   # noqa: E731
    train = defaultdict(list)
    for c in cases:
        if c.split == "train":
            train[(c.set, c.size)].append(c)
    scored = {}
    for scale in (0.36, 0.38, 0.40, 0.42, 0.44, 0.46, 0.48, 0.50, 0.52, 0.55, 0.60, 0.70):
        g = {k: gate_metrics(v, fusion, two_ways(0.40, GATE_MARGIN, COVERAGE_GATE, COVERAGE_FLOOR, scale))
             for k, v in train.items()}
        if all(m["silent"] >= SILENCE for m in g.values()):
            scored[scale] = g
    best = max(scored, key=lambda p: (round(min(m["answers"] for m in scored[p].values()), 6), p))
    return best, {"|".join(map(str, k)): v for k, v in scored[best].items()}


def choose_floor(cases: list[Case]) -> tuple[float, dict]:
    """The relative bar's cosine floor (SUBCOG_RECALL_MIN_SIMILARITY), chosen on TRAIN at every size the same way
    as the margin's scale: the floor with the most answers injected in the worst (set, size) group while every
    group stays silent on >= SILENCE; ties to the higher floor (the stricter). Returns the choice and every
    group's silent/answers (train and test) for each floor tried, so the held-out cost of each is visible."""
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    from subcog_store.recall.inject import COVERAGE_FLOOR, COVERAGE_GATE, GATE_MARGIN, MARGIN_SCALE

    fusion = lambda c: c.cos + W_COVERAGE * c.cov ** COVERAGE_POWER   # noqa: E731
    groups = defaultdict(list)
    for c in cases:
        groups[(c.set, c.split, c.size)].append(c)
    table, scored = {}, {}
    for floor in (0.36, 0.38, 0.40, 0.42, 0.44, 0.46, 0.48, 0.50):
        passes = two_ways(floor, GATE_MARGIN, COVERAGE_GATE, COVERAGE_FLOOR, MARGIN_SCALE)
        g = {k: gate_metrics(v, fusion, passes) for k, v in sorted(groups.items())}
        table[floor] = {"|".join(map(str, k)): v for k, v in g.items()}
        train = [m for k, m in g.items() if k[1] == "train"]
        if all(m["silent"] >= SILENCE for m in train):
            scored[floor] = min(m["answers"] for m in train)
    best = max(scored, key=lambda f: (round(scored[f], 6), f))
    return best, table


def report(cases: list[Case]) -> dict:
    """Per set, split and size: the shipped ranking and gate beside the ranking and gate before issue #24 (cosine
    order, cosine >= 0.37), and the ranking alone (cosine, fusion)."""
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    from subcog_store.recall.inject import COVERAGE_FLOOR, COVERAGE_GATE, GATE_MARGIN, MARGIN_SCALE

    fusion = lambda c: c.cos + W_COVERAGE * c.cov ** COVERAGE_POWER   # noqa: E731 - recall.fusion.score
    cosine = lambda c: c.cos   # noqa: E731
    before = lambda c: c.cos >= 0.37   # noqa: E731 - the absolute gate before issue #24
    out: dict = {}
    for key in sorted({(c.set, c.split, c.size) for c in cases}):
        group = [c for c in cases if (c.set, c.split, c.size) == key]
        out["|".join(map(str, key))] = {
            "n_relevant": sum(c.relevant for c in group), "n_irrelevant": sum(not c.relevant for c in group),
            "cosine": rank_metrics(group, cosine), "fusion": rank_metrics(group, fusion),
            "fusion, coverage weight by the cosine's standout (tried)": rank_metrics(group, standout_fusion()),
            "gate before (cosine >= 0.37, cosine order)": gate_metrics(group, cosine, before),
            "relative bar alone": gate_metrics(group, fusion, relative(0.40, GATE_MARGIN)),
            "gate before round 5 (fixed margin, or holds the words)": gate_metrics(
                group, fusion, two_ways(0.40, GATE_MARGIN, COVERAGE_GATE, COVERAGE_FLOOR)),
            "gate shipped (relative bar or holds the words)": gate_metrics(
                group, fusion, two_ways(0.40, GATE_MARGIN, COVERAGE_GATE, COVERAGE_FLOOR, MARGIN_SCALE))}
    return out


def gap_table(cases: list[Case]) -> dict:
    """Per set, split and size: how far the best cosine of a prompt nothing answers stands above the prompt's
    level (quantiles), and how far its best answer does for a relevant prompt (the gate's two populations)."""
    out = {}
    for key in sorted({(c.set, c.split, c.size) for c in cases}):
        null, answer = [], []
        for c in (c for c in cases if (c.set, c.split, c.size) == key):
            base = level(c.top_cos)
            if base is None:
                continue
            if not c.relevant:
                null.append(float(c.top_cos[0]) - base)
            else:
                mine = [float(c.cos[i]) for i, f in enumerate(c.facts) if f in c.answers]
                answer.append(max(mine) - base if mine else -1.0)
        out["|".join(map(str, key))] = {
            "null q50/q90/q95": [round(float(np.quantile(null, q)), 3) for q in (0.5, 0.9, 0.95)],
            "answer q25/q50": [round(float(np.quantile(answer, q)), 3) for q in (0.25, 0.5)],
            "answers >= 0.10 / 0.14 above": [round(float(np.mean(np.array(answer) >= m)), 2) for m in (0.10, 0.14)]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--cached", action="store_true", help="score the pickled cases again")
    parser.add_argument("--gaps", action="store_true", help="print the gate's two populations (gap_table) only")
    parser.add_argument("--floors", action="store_true", help="the cosine floor chosen on train (choose_floor) only")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if args.cached:
        cases = load_cases()
    else:
        cases = build_cases(tuple(int(s) for s in args.sizes.split(",")))
        CASES.write_bytes(pickle.dumps(cases))
    print(f"{len(cases)} cases ({time.perf_counter() - started:.0f} s)")
    if args.gaps:
        for key, row in gap_table(cases).items():
            print(f"{key:22} " + "  ".join(f"{k} {v}" for k, v in row.items()))
        return 0
    if args.floors:
        best, table = choose_floor(cases)
        print(f"floor chosen on train: {best} (silent/answers per set|split|size)")
        for floor, row in table.items():
            print(f"{floor:.2f} " + " ".join(f"{k} {v['silent']:.3f}/{v['answers']:.3f}" for k, v in row.items()))
        return 0
    res = report(cases)
    best, train = choose_coverage_gate(cases)
    res["chosen on train"] = {"coverage, floor": best, "train": train}
    print(f"chosen on train: coverage {best[0]}, floor {best[1]}: " + ", ".join(
        f"{k} {v['silent']:.3f}/{v['answers']:.3f}" for k, v in train.items()))
    scale, train = choose_margin_scale(cases)
    res["margin scale chosen on train"] = {"scale": scale, "train": train}
    print(f"margin scale chosen on train: {scale}: " + ", ".join(
        f"{k} {v['silent']:.3f}/{v['answers']:.3f}" for k, v in train.items()))
    (OUT / "scale_lab-last.json").write_text(json.dumps(res, indent=1))
    for key, r in res.items():
        if key in ("chosen on train", "margin scale chosen on train"):
            continue
        print(f"{key:22} recall@5/MRR/para cosine {r['cosine']['recall5']:.3f}/{r['cosine']['mrr10']:.3f}/"
              f"{r['cosine']['paraphrase5']:.3f} fusion {r['fusion']['recall5']:.3f}/{r['fusion']['mrr10']:.3f}/"
              f"{r['fusion']['paraphrase5']:.3f} | gate silent/answers before "
              + "/".join(f"{v:.3f}" for v in r["gate before (cosine >= 0.37, cosine order)"].values())
              + " relative " + "/".join(f"{v:.3f}" for v in r["relative bar alone"].values())
              + " before " + "/".join(f"{v:.3f}" for v in
                                      r["gate before round 5 (fixed margin, or holds the words)"].values())
              + " shipped " + "/".join(f"{v:.3f}" for v in r["gate shipped (relative bar or holds the words)"].values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
