"""Where the ranking's constants come from: every candidate fusion scored on the TRAIN split of both labelled sets,
and checked on LoCoMo (never used to choose).

For each query of a set, every memory of its project is a candidate (the projects are small, so nothing is lost
to a candidate cut-off); the features are the ones `recall/search.py` computes: the cosine of the prompt and of
its content (`recall.query.content_of`), BM25 over the significant words of the content, identifiers matched
as such, age, importance. A fusion is a formula over them; it is scored by recall@5 and MRR@10 of the answers.
The rule (issue #24): a fusion is kept only when it beats both of its halves (cosine alone, BM25 alone) on the
train split of every set; among those, the best mean MRR@10 over the sets; ties to the plainer rule. LoCoMo
(`--locomo PATH`, the public locomo10.json, CC BY-NC 4.0, read at bench time, never committed) is reported beside
it, not used to choose, also split by conversation (dev: the first five by sample id, test: the other five) with a
column saying which fusions beat every half (cosine, BM25, coverage alone) on set 1 train, set 2 train and LoCoMo dev.

    .venv/bin/python -m bench.recall.fusion_lab [--locomo PATH] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.recall import sets

OUT = Path(__file__).resolve().parents[1] / "out" / "recall"


@dataclass
class Case:
    """One query and its candidates' features (arrays over the project's current memories)."""

    qid: str
    split: str
    kind: str
    facts: list[str]              # the fact of each candidate
    answers: set[str]
    cos: np.ndarray               # cosine of the prompt as typed
    cos_content: np.ndarray       # cosine of the prompt's content
    bm25: np.ndarray              # BM25 of the content's significant words (0: no shared word)
    ident: np.ndarray             # identifiers of the prompt found in the memory
    coverage: np.ndarray          # the IDF-weighted share of the content's words the memory holds (0..1)
    age_days: np.ndarray
    outdated: np.ndarray          # 1: a successor of this memory is a candidate too


def coverage(query_terms: list[str], docs: list[list[str]]) -> np.ndarray:
    """For each doc, the IDF-weighted share of the query's distinct terms it contains."""
    n = len(docs)
    weights = {t: math.log((n + 1) / (sum(1 for d in docs if t in d) + 0.5)) for t in set(query_terms)}
    total = sum(weights.values())
    if not total:
        return np.zeros(n)
    return np.array([sum(w for t, w in weights.items() if t in d) / total for d in docs])


def bm25_scores(query_terms: list[str], docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 as FTS5 computes it (its defaults k1 1.2, b 0.75), over `docs` only."""
    n = len(docs)
    avg = sum(len(d) for d in docs) / max(n, 1)
    out = np.zeros(n)
    for term in set(query_terms):
        df = sum(1 for d in docs if term in d)
        if not df:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
        for i, d in enumerate(docs):
            tf = d.count(term)
            if tf:
                out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avg))
    return out


def cases_of(store, built, queries, embed) -> list[Case]:
    """Features of every query against every current memory of its project (see the module docstring)."""
    from subcog_store.recall.query import content_of, identifiers, terms

    out = []
    by_domain: dict[str, tuple] = {}
    for q in queries:
        if q.project not in by_domain:
            mems = [m for m in store.memories(domain=q.project, limit=100_000)]
            vecs = np.stack([store.embed(m.content) for m in mems])
            ids = {m.id for m in mems}
            outdated = np.array([1.0 if m.successor_id in ids else 0.0 for m in mems])
            by_domain[q.project] = (mems, vecs, [terms(m.content) for m in mems], outdated)
        mems, vecs, docs, outdated = by_domain[q.project]
        content = content_of(q.query) or q.query
        qi = identifiers(q.query)
        out.append(Case(
            q.qid, q.split, q.kind, [built.fact_of(m.id) for m in mems], q.answers,
            vecs @ embed(q.query), vecs @ embed(content), bm25_scores(terms(content), docs),
            np.array([float(sum(1 for i in qi if i in m.content.lower())) for m in mems]),
            coverage(terms(content), docs),
            np.array([(sets.REF_NOW - _ts(m.created_at)) / 86400 for m in mems]), outdated))
    return out


def _ts(stamp: str) -> float:
    from subcog_store.clock import parse_iso
    return parse_iso(stamp)


def metrics(cases: list[Case], score) -> dict:
    """recall@5 and MRR@10 of the answers (a fact counted at its first place), outdated ranked below."""
    r5, rr = [], []
    for c in cases:
        s = score(c) - 1e6 * c.outdated * 0        # successors are applied by the product after scoring
        order = np.argsort(-s, kind="stable")
        facts, seen = [], set()
        for i in order:
            if c.facts[i] not in seen:
                seen.add(c.facts[i])
                facts.append(c.facts[i])
        r5.append(len(c.answers & set(facts[:5])) / len(c.answers))
        rr.append(next((1 / (i + 1) for i, f in enumerate(facts[:10]) if f in c.answers), 0.0))
    return {"recall5": float(np.mean(r5)), "mrr10": float(np.mean(rr)), "n": len(cases)}


def ranks(values: np.ndarray) -> np.ndarray:
    """1-based rank of each value (higher first); 0 where the value is 0 (not found by that side)."""
    order = np.argsort(-values, kind="stable")
    out = np.zeros(len(values))
    out[order] = np.arange(1, len(values) + 1)
    return np.where(values > 0, out, 0)


def rrf(side_a: np.ndarray, side_b: np.ndarray, k: float, wa: float, wb: float) -> np.ndarray:
    ra, rb = ranks(side_a), ranks(side_b)
    return np.where(ra > 0, wa / (k + ra), 0) + np.where(rb > 0, wb / (k + rb), 0)


def _z(values: np.ndarray, best: int | None = None) -> np.ndarray:
    """Standard scores of a query's candidates, the mean and spread taken over all of them or over the `best`."""
    ref = values if best is None else np.sort(values)[::-1][:best]
    return (values - ref.mean()) / max(float(ref.std()), 1e-9)


def formulas() -> dict[str, object]:
    """name -> score(case): the halves, the shipped fusion (approximately: every candidate, no cut-off) and the
    candidates."""
    f: dict[str, object] = {
        "cosine alone (prompt)": lambda c: c.cos,
        "cosine alone (content)": lambda c: c.cos_content,
        "BM25 alone (content)": lambda c: c.bm25 + 1e-9 * c.cos,
        "coverage alone (content; the product's text side)": lambda c: c.coverage + 1e-9 * c.cos,
        "shipped: RRF k=1, vector x5, age": lambda c: rrf(c.cos + 2, c.bm25, 1, 5, 1) * (
            1 + 0.5 * (0.5 * 0.95 ** (c.age_days / 30) - 0.5)) * (1 + 0.1 * 0.5 ** (c.age_days / 180)),
    }
    for k in (1, 10, 60):
        for wv in (1, 2, 3):
            f[f"RRF k={k} vector x{wv}"] = (lambda k, wv: lambda c: rrf(c.cos_content + 2, c.bm25, k, wv, 1)
                                            + 1e-6 * c.cos_content)(k, wv)
    for beta in (0.02, 0.05, 0.1, 0.2):
        f[f"cosine + {beta} x BM25"] = (lambda beta: lambda c: c.cos_content + beta * c.bm25)(beta)
        f[f"cosine + {beta} x BM25/max"] = (lambda beta: lambda c: c.cos_content + beta * 5 * c.bm25
                                            / max(c.bm25.max(), 1e-9))(beta)
    for beta in (0.05, 0.1):
        for gamma in (0.05, 0.1):
            f[f"cosine + {beta} x BM25 + {gamma} x identifier"] = (
                lambda beta, gamma: lambda c: c.cos_content + beta * c.bm25 + gamma * np.minimum(c.ident, 2))(
                beta, gamma)
        f[f"max(cosine prompt, content) + {beta} x BM25"] = (
            lambda beta: lambda c: np.maximum(c.cos, c.cos_content) + beta * c.bm25)(beta)
    for beta in (0.4, 0.5, 0.7, 1.0):
        f[f"cosine (prompt) + {beta} x coverage^2"] = (lambda beta: lambda c: c.cos + beta * c.coverage ** 2)(beta)
        f[f"cosine (prompt) + {beta} x coverage^3"] = (lambda beta: lambda c: c.cos + beta * c.coverage ** 3)(beta)
    for beta in (0.05, 0.1, 0.15, 0.2, 0.3):
        f[f"cosine (prompt) + {beta} x coverage"] = (lambda beta: lambda c: c.cos + beta * c.coverage)(beta)
        f[f"cosine (prompt) + {beta} x BM25 saturated"] = (
            lambda beta: lambda c: c.cos + beta * np.minimum(c.bm25 / 8.0, 1.0))(beta)
        f[f"cosine (prompt) + {beta} x coverage^2"] = (lambda beta: lambda c: c.cos + beta * c.coverage ** 2)(beta)
    for p in (1.5, 2.5, 4):
        for beta in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0):
            f[f"cosine (prompt) + {beta} x coverage^{p}"] = (lambda beta, p: lambda c: c.cos + beta * c.coverage ** p)(
                beta, p)
    for beta in (1.5, 2.0, 2.5, 3.0):
        for p in (2, 3):
            f[f"cosine (prompt) + {beta} x coverage^{p}"] = (lambda beta, p: lambda c: c.cos + beta * c.coverage ** p)(
                beta, p)
    for k in (1, 10):
        for wv in (1, 2, 3):
            f[f"RRF k={k} cosine (prompt) x{wv}, coverage"] = (
                lambda k, wv: lambda c: rrf(c.cos + 2, c.coverage, k, wv, 1) + 1e-6 * c.cos)(k, wv)
    from bench.recall.scale_lab import standout_weight   # tried and dropped (RESULTS.md, round 4b)
    for scale, cap in ((0.36, 4.0), (0.36, 8.0)):
        f[f"cosine + 0.5 x clip({scale} / cosine standout, 1, {cap:g}) x coverage^3"] = (
            lambda scale, cap: lambda c: c.cos + 0.5 * standout_weight(np.sort(c.cos)[::-1][:50], scale, cap)
            * c.coverage ** 3)(scale, cap)
    for w in (0.5, 1.0):   # tried and dropped (RESULTS.md, round 4d): both sides on one scale, per query
        f[f"z(cosine) + {w} x z(coverage), over every candidate"] = (
            lambda w: lambda c: _z(c.cos) + w * _z(c.coverage))(w)
        f[f"z(cosine) + {w} x z(coverage), over the best 50 of each"] = (
            lambda w: lambda c: _z(c.cos, 50) + w * _z(c.coverage, 50))(w)
    f["cosine (prompt) + 0.1 x coverage + 0.05 x identifier"] = lambda c: c.cos + 0.1 * c.coverage + 0.05 * \
        np.minimum(c.ident, 2)
    return f


def locomo_cases(path: Path, embedder, limit: int | None = None) -> list[Case]:
    """LoCoMo's turns as memories (one domain per conversation, each turn "Speaker: text"), its questions with
    evidence (categories 1-4) as queries; every turn of the conversation a candidate."""
    from subcog_store.recall.query import content_of, identifiers, terms

    data = json.loads(path.read_text())[:limit]
    out = []
    for conv in data:
        c = conv["conversation"]
        turns = [(t["dia_id"], f"{t['speaker']}: {t['text']}") for key, v in c.items()
                 if key.startswith("session_") and isinstance(v, list) for t in v]
        texts = [t for _, t in turns]
        vecs = embedder.embed_batch(texts)
        docs = [terms(t) for t in texts]
        n = len(turns)
        for i, qa in enumerate(conv["qa"]):
            if qa.get("category") == 5 or not qa.get("evidence"):
                continue
            q = qa["question"]
            content = content_of(q) or q
            qv, cv = embedder.embed_batch([q, content])
            qi = identifiers(q)
            out.append(Case(f"{conv['sample_id']}-{i}", "check", str(qa["category"]), [d for d, _ in turns],
                            set(qa["evidence"]), vecs @ qv, vecs @ cv, bm25_scores(terms(content), docs),
                            np.array([float(sum(1 for x in qi if x in t.lower())) for t in texts]),
                            coverage(terms(content), docs),
                            np.zeros(n), np.zeros(n)))
    return out


HALVES = ("cosine alone (prompt)", "BM25 alone (content)", "coverage alone (content; the product's text side)")


def locomo_split(cases: list[Case]) -> dict[str, list[Case]]:
    """LoCoMo by conversation: the first five (by sample id) a dev split to read why a fusion wins or loses, the
    other five a test split; no constant is chosen on either."""
    convs = sorted({c.qid.rsplit("-", 1)[0] for c in cases})
    if not convs:
        return {}
    first = set(convs[:len(convs) // 2])
    return {"LoCoMo dev": [c for c in cases if c.qid.rsplit("-", 1)[0] in first],
            "LoCoMo test": [c for c in cases if c.qid.rsplit("-", 1)[0] not in first]}


def beats_every_half(table: dict, name: str, groups: list[str]) -> bool:
    """Recall@5 at least, and MRR@10 above, every half's (cosine, BM25, coverage alone) on each of `groups`."""
    return name not in HALVES and all(
        table[name][g]["recall5"] >= max(table[h][g]["recall5"] for h in HALVES)
        and table[name][g]["mrr10"] > max(table[h][g]["mrr10"] for h in HALVES) for g in groups)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, help="path of locomo10.json (check only)")
    parser.add_argument("--out", type=Path, default=OUT / "fusion_lab-last.json")
    parser.add_argument("--cached", action="store_true", help="score the cases of the last run again (fast)")
    args = parser.parse_args(argv)
    from subcog_store.model.embedder import Embedder

    started = time.perf_counter()
    embedder = Embedder()
    if not args.cached:
        embedder.load()
    cache: dict[str, np.ndarray] = {}

    def embed(text: str) -> np.ndarray:
        if text not in cache:
            cache[text] = embedder.embed_batch([text])[0]
        return cache[text]

    OUT.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[Case]] = {}
    cases_file = OUT / "fusion_lab-cases.pickle"
    if args.cached:
        import pickle
        groups = pickle.loads(cases_file.read_bytes())
    for name, path in ({} if args.cached else sets.SETS).items():
        rows, queries = sets.load(path)
        built = sets.build(OUT / f"lab-{name}.db", rows, embedder)
        relevant = [q for q in queries if q.is_relevant]
        all_cases = cases_of(built.store, built, relevant, embed)
        groups[f"{name} train"] = [c for c in all_cases if c.split == "train"]
        groups[f"{name} test"] = [c for c in all_cases if c.split == "test"]
        groups[f"{name} test paraphrase"] = [c for c in all_cases if c.split == "test" and c.kind == "paraphrase"]
        built.store.close()
    if args.locomo and not args.cached:
        groups["LoCoMo (check)"] = locomo_cases(args.locomo, embedder)
    if not args.cached:
        import pickle
        cases_file.write_bytes(pickle.dumps(groups))
    groups.update(locomo_split(groups.get("LoCoMo (check)", [])))
    table = {name: {g: metrics(cs, fn) for g, cs in groups.items()} for name, fn in formulas().items()}
    args.out.write_text(json.dumps(table, indent=1))
    cols = list(groups)
    dev = [g for g in ("set1 train", "set2 train", "LoCoMo dev") if g in groups]
    print("| fusion | " + " | ".join(f"{g} R@5 / MRR" for g in cols) + f" | beats every half on {', '.join(dev)} |")
    for name, row in table.items():
        print(f"| {name} | " + " | ".join(f"{row[g]['recall5']:.3f} / {row[g]['mrr10']:.3f}" for g in cols)
              + f" | {'yes' if beats_every_half(table, name, dev) else ''} |")
    print(f"({time.perf_counter() - started:.0f} s; n = " + ", ".join(f"{g} {len(cs)}" for g, cs in groups.items())
          + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
