"""WordNet for paraphrases: does a memory that says a prompt's word in another form, or a synonym of it, stand apart
from the memories a prompt nothing answers finds, and what would counting such words do to the ranking and gate.

Both labelled sets among 0, 200, 10,000 and 100,000 planted memories, as `scale_lab.py` builds its cases (the same
features: the cosine of the prompt as typed and the IDF-weighted coverage of its content words over every memory of
the project; 100 best by each side kept, the labelled memories, the vector side's 50 best cosines), plus the kept
filler's indices so every candidate's text is known. A prompt word `w` and a memory word `m` (both `recall.query`
terms) are related by WordNet 3.0 (the product's data, `text.guard_lexicon`) in one of three ways:

- `lemma`: they share a base form (caching / cached / cache; WordNet's morphy: exceptions and detachment rules);
- `syn1`: `lemma`, or one's base form is in the first (most frequent) synset of each part of speech of the other's;
- `synall`: `lemma`, or the same over every synset of the other's.

`--only measure` (step 1): at each size, of the answers the shipped ranking and gate lose (`gate_losses.where`:
under the gate's bar, or not in the fused top 10), how many hold a word related to a prompt word (beside the
prompt's own words or instead of them), against the injected answers, the best wrong memory ranked above a lost
answer, and the fused first of a prompt nothing answers. `--only shares --mode M`: how much of the prompt's
IDF weight those related words carry and how many would clear the gate's second way in counting them fully.
`--only rank` (step 2): coverage counting a related word at LAMBDA x its prompt word's IDF weight (an exact match
counts 1) in the fusion, in the gate's second way in, or both; `--only gate --mode M`: the second way in over exact
+ lambda x related coverage with its coverage share and cosine floor chosen again beside lambda. TRAIN (both sets,
+0 / +200 / +10,000) chooses by the rules of `choose` and `main`; TEST is printed beside, never used to choose.
Results: bench/recall/RESULTS.md, round 6.

    .venv/bin/python -m bench.recall.lexicon_lab [--sizes 0,200,10000,100000] [--only measure|rank|gate|shares]
                                                 [--mode lemma|syn1|synall] [--split train|test]
"""
from __future__ import annotations

import argparse
import io
import math
import pickle
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from bench.recall import scale_lab as lab
from bench.recall import sets

DATA = lab.OUT / "lexicon_lab-base.pickle"
MODES = ("lemma", "syn1", "synall")


# -- WordNet relations of two words -----------------------------------------------------------------------------
@lru_cache(maxsize=None)
def bases(word: str) -> frozenset[str]:
    """The base forms WordNet knows for `word` (itself when it is one), or {word} when WordNet has none."""
    from subcog_store.text import guard_lexicon as g

    found = frozenset(base for _, base, _, _ in g._entries(word))
    return found or frozenset([word])


@lru_cache(maxsize=None)
def synonyms_of(word: str, first_only: bool) -> frozenset[str]:
    """The one-word lemmas of the synsets of `word`'s base forms (only each (part of speech, base)'s first synset
    when `first_only`), without `word`'s own bases."""
    from subcog_store.text import guard_lexicon as g

    files = g._files()
    out: set[str] = set()
    for pos, _, _, offsets in g._entries(word):
        for offset in offsets[:1] if first_only else offsets:
            out.update(w for w in files.synset(pos, offset)[0] if "_" not in w and "-" not in w)
    return frozenset(out - bases(word))


def related(w: str, m: str, mode: str) -> bool:
    """Prompt word `w` and memory word `m` (different strings) are related in `mode` (module docstring)."""
    bw, bm = bases(w), bases(m)
    if bw & bm:
        return True
    if mode == "lemma":
        return False
    first = mode == "syn1"
    return bool(bm & synonyms_of(w, first) or bw & synonyms_of(m, first))


# -- the base data: every memory's text, words and vector; every query's ------------------------------------
@dataclass
class Project:
    texts: list[str]
    words: list[set[str]]
    facts: list[str]
    succ: list[int | None]
    vecs: np.ndarray


@dataclass
class Q:
    set: str
    qid: str
    split: str
    kind: str
    project: str
    query: str
    answers: set[str]
    words: list[str]
    vec: np.ndarray


def base_data(rebuild: bool = False) -> tuple[dict[tuple[str, str], Project], list[Q]]:
    if DATA.exists() and not rebuild:
        return _load(DATA)
    from subcog_store.model.embedder import Embedder
    from subcog_store.recall.query import content_of, terms

    embedder = Embedder()
    embedder.load()
    projects, queries = {}, []
    for name, path in sets.SETS.items():
        rows, qs = sets.load(path)
        built = sets.build(lab.OUT / f"lexicon-{name}.db", rows, embedder)
        store = built.store
        index_of = {}
        for project in sorted({r.project for r in rows}):
            mems = store.memories(domain=project, limit=100_000)
            index = {m.id: i for i, m in enumerate(mems)}
            projects[(name, project)] = Project([m.content for m in mems], [set(terms(m.content)) for m in mems],
                                                [built.fact_of(m.id) for m in mems],
                                                [index.get(m.successor_id) for m in mems],
                                                embedder.embed_batch([m.content for m in mems]))
            index_of[project] = index
        vecs = embedder.embed_batch([q.query for q in qs])
        for q, v in zip(qs, vecs):
            queries.append(Q(name, q.qid, q.split, q.kind, q.project, q.query, q.answers,
                             list(dict.fromkeys(terms(content_of(q.query)))), v))
        store.close()
    DATA.write_bytes(pickle.dumps((projects, queries)))
    return projects, queries


def _load(path: Path):
    """A pickle of this lab's, whichever module name pickled its classes (`-m` pickles them as `__main__`'s)."""
    known = {"Project": Project, "Q": Q, "Case": lab.Case}

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            return known[name] if name in known else super().find_class(module, name)
    return Unpickler(io.BytesIO(path.read_bytes())).load()


class Filler:
    """The planted corpus: texts, vectors, each word's postings, and each word's WordNet neighbours in it."""

    def __init__(self, size: int, extra_vocab: set[str]):
        from subcog_store.recall.query import terms

        self.texts, self.vecs = lab.filler(size) if size else ([], np.zeros((0, 384), np.float32))
        self.words = [set(terms(t)) for t in self.texts]
        self.post = lab.inverted([list(w) for w in self.words])
        self.vocab = set(self.post) | extra_vocab
        self._near: dict[tuple[str, str], frozenset[str]] = {}

    def near(self, w: str, mode: str) -> frozenset[str]:
        """The vocabulary's words related to `w` in `mode` (not `w`)."""
        key = (w, mode)
        if key not in self._near:
            self._near[key] = frozenset(m for m in self._candidates(w, mode) if m != w and related(w, m, mode))
        return self._near[key]

    def _candidates(self, w: str, mode: str) -> set[str]:
        if not hasattr(self, "_by_base"):
            self._by_base: dict[str, set[str]] = defaultdict(set)
            self._by_syn: dict[tuple[str, bool], set[str]] = defaultdict(set)
            for m in self.vocab:
                for b in bases(m):
                    self._by_base[b].add(m)
                for first in (True, False):
                    for s in synonyms_of(m, first):
                        self._by_syn[(s, first)].add(m)
        out: set[str] = set()
        for b in bases(w):
            out |= self._by_base.get(b, set())
        if mode != "lemma":
            first = mode == "syn1"
            for s in synonyms_of(w, first):
                out |= self._by_base.get(s, set())
            for b in bases(w):
                out |= self._by_syn.get((b, first), set())
        return out


# -- cases -----------------------------------------------------------------------------------------------------
def coverage_of(q: Q, words_of: list[set[str]], post: dict[str, np.ndarray] | None, n: int, weights: dict,
                near: dict[str, frozenset[str]], lam: float) -> np.ndarray:
    """Coverage of `n` documents: each prompt word's weight where the document holds it, `lam` x that weight where
    it holds only a related word (`near[w]`)."""
    wsum = sum(weights.values())
    cov = np.zeros(n)
    if not wsum:
        return cov
    for w, v in weights.items():
        if post is None:
            exact = np.array([w in d for d in words_of], bool)
            rel = np.array([bool(near.get(w, frozenset()) & d) for d in words_of], bool) if lam else exact & False
        else:
            exact = np.zeros(n, bool)
            if w in post:
                exact[post[w][:int(np.searchsorted(post[w], n))]] = True
            rel = np.zeros(n, bool)
            for m in near.get(w, ()) if lam else ():
                if m in post:
                    rel[post[m][:int(np.searchsorted(post[m], n))]] = True
        cov += v * exact + lam * v * (rel & ~exact)
    return cov / wsum


def build(projects, queries, filler: Filler, sizes, mode: str | None) -> list[lab.Case]:
    """scale_lab's cases (coverage of exact words in `cov`), each also carrying `cov_rel` (the weighted share of
    the prompt's words the memory holds only in a related form, `mode`; zeros when None) and `fill` (the kept
    filler's indices). Kept filler: the 100 best by cosine, by exact coverage and by exact + related coverage."""
    out = []
    for q in queries:
        p = projects[(q.set, q.project)]
        own_cos = p.vecs @ q.vec
        fcos_all = filler.vecs @ q.vec if len(filler.texts) else np.zeros(0)
        near = {w: filler.near(w, mode) for w in q.words} if mode else {}
        for size in sizes:
            fd = {w: int(np.searchsorted(filler.post[w], size)) if w in filler.post else 0 for w in q.words}
            total = len(p.texts) + size
            weights = {w: math.log((total + 1) / (sum(w in d for d in p.words) + fd[w] + 0.5)) for w in q.words}
            own_exact = coverage_of(q, p.words, None, len(p.texts), weights, {}, 0.0)
            own_rel = coverage_of(q, p.words, None, len(p.texts), weights, near, 1.0) - own_exact
            if size:
                fexact = coverage_of(q, [], filler.post, size, weights, {}, 0.0)
                frel = coverage_of(q, [], filler.post, size, weights, near, 1.0) - fexact
            else:
                fexact = frel = np.zeros(0)
            fcos = fcos_all[:size]
            keep = sorted(set(np.argsort(-fcos)[:lab.KEEP].tolist()) | set(np.argsort(-fexact)[:lab.KEEP].tolist())
                          | set(np.argsort(-(fexact + frel))[:lab.KEEP].tolist())) if size else []
            allcos = np.concatenate([own_cos, fcos])
            c = lab.Case(q.set, q.qid, q.split, q.kind, size, q.answers, list(p.facts) + [None] * len(keep),
                         np.concatenate([own_cos, fcos[keep]]), np.concatenate([own_exact, fexact[keep]]),
                         list(p.succ) + [None] * len(keep), np.sort(allcos)[::-1][:lab.GATE_TOP])
            c.cov_rel = np.concatenate([own_rel, frel[keep]])
            c.fill = np.asarray(keep, dtype=np.int64)
            c.project = q.project
            out.append(c)
    return out


def words_of(c: lab.Case, i: int, projects, filler: Filler) -> set[str]:
    p = projects[(c.set, c.project)]
    return p.words[i] if i < len(p.words) else filler.words[int(c.fill[i - len(p.words)])]


# -- step 1: does a related word separate the lost answers from the null prompts' best wrong memory -----------------
def measure(cases: list[lab.Case], projects, queries, filler: Filler, split: str = "train") -> dict:
    from bench.recall import gate_losses

    words = {(q.set, q.qid): q.words for q in queries}
    went = gate_losses.where(cases)
    fusion, _ = gate_losses.shipped()
    out = {}
    for key, group in gate_losses.groups(cases).items():
        if key[1] != split:
            continue
        tally: dict[str, Counter] = defaultdict(Counter)
        for c in group:
            w = words[(c.set, c.qid)]
            ranked = list(lab.order(c, fusion(c)))

            def flags(i: int) -> list[str]:
                held = words_of(c, i, projects, filler)
                exact = bool(set(w) & held)
                out = ["n", "exact word" if exact else "no exact word"]
                rest = held - set(w)
                for mode in MODES:
                    if any(related(a, m, mode) for a in w for m in rest):
                        out.append(f"{mode}" + ("" if exact else ", no exact word"))
                return out

            if not c.relevant:
                tally["null prompt's fused first"].update(flags(ranked[0]))
                continue
            for fact in c.answers:
                kind = went[key][(c.qid, fact)]
                if kind.startswith("under the bar") or kind.startswith("not in the fused top 10"):
                    rank, i = min((ranked.index(i), i) for i, f in enumerate(c.facts) if f == fact)
                    tally["lost answer"].update(flags(i))
                    if c.kind == "paraphrase":
                        tally["lost answer, paraphrase question"].update(flags(i))
                    wrong = next(j for j in ranked if c.facts[j] not in c.answers)
                    tally["best wrong memory above a lost answer"].update(flags(wrong))
                elif kind == "injected":
                    rank, i = min((ranked.index(i), i) for i, f in enumerate(c.facts) if f == fact)
                    tally["injected answer"].update(flags(i))
        out[key] = tally
    return out


# -- step 2: related words counted in the coverage of the fusion, of the gate's second way in, or both -----------
PLACES = ("fusion", "gate", "both")
LAMBDAS = (0.25, 0.5, 0.75, 1.0)
CHOOSE_SIZES = (0, 200, 10_000)


def variant(place: str | None, lam: float):
    """(fusion, passes) of the shipped ranking and gate with related words counted at `lam` in `place`."""
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    from subcog_store.recall.inject import COVERAGE_FLOOR, COVERAGE_GATE, GATE_MARGIN, MARGIN_SCALE

    def cov(c: lab.Case, here: bool) -> np.ndarray:
        return c.cov + lam * c.cov_rel if here and place else c.cov
    bar = lab.relative(0.40, GATE_MARGIN, MARGIN_SCALE)

    def fusion(c: lab.Case) -> np.ndarray:
        return c.cos + W_COVERAGE * cov(c, place in ("fusion", "both")) ** COVERAGE_POWER

    def passes(c: lab.Case) -> np.ndarray:
        base = lab.level(c.top_cos)
        second = np.zeros(len(c.cos), bool) if base is None else \
            (cov(c, place in ("gate", "both")) >= COVERAGE_GATE) & (c.cos >= max(COVERAGE_FLOOR, base))
        return bar(c) | second
    return fusion, passes


def scores(cases: list[lab.Case], place: str | None, lam: float) -> dict[tuple, dict]:
    from bench.recall import gate_losses

    fusion, passes = variant(place, lam)
    return {k: {**lab.rank_metrics(g, fusion), **lab.gate_metrics(g, fusion, passes)}
            for k, g in gate_losses.groups(cases).items()}


def choose(table: dict[tuple, dict]) -> tuple:
    """On TRAIN at CHOOSE_SIZES: of the variants whose every train group stays silent on >= SILENCE and whose mean
    train MRR@10 is not below the shipped ranking's, the most answers injected in the worst group; ties to the
    better mean train MRR@10, then to the smaller weight (nearer the shipped)."""
    def train(point):
        return [m for k, m in table[point].items() if k[1] == "train" and k[2] in CHOOSE_SIZES]
    shipped_mrr = np.mean([m["mrr10"] for m in train((None, 0.0))])
    ok = [p for p in table if all(m["silent"] >= lab.SILENCE for m in train(p))
          and np.mean([m["mrr10"] for m in train(p)]) >= shipped_mrr - 1e-9]
    return max(ok, key=lambda p: (round(min(m["answers"] for m in train(p)), 6),
                                  round(float(np.mean([m["mrr10"] for m in train(p)])), 6), -p[1]))


def rank_table(projects, queries, filler, sizes) -> dict:
    table = {}
    for mode in MODES:
        cases = build(projects, queries, filler, sizes, mode)
        if not table:
            table[(None, 0.0)] = scores(cases, None, 0.0)
        for place in PLACES:
            for lam in LAMBDAS:
                table[(f"{mode} in {place}", lam)] = scores(cases, place, lam)
        print(f"  {mode}: scored", flush=True)
    return table


GATE_GRID = [(lam, cov, floor) for lam in (0.5, 0.75, 1.0) for cov in (0.20, 0.25, 0.30, 0.35, 0.40)
             for floor in (0.34, 0.37, 0.40)]


def joint_gate(lam: float, coverage: float, floor: float):
    """The shipped fusion; the gate's second way in over exact + `lam` x related coverage, with its coverage share
    and cosine floor chosen again beside it (the relative bar as shipped)."""
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    from subcog_store.recall.inject import GATE_MARGIN, MARGIN_SCALE

    bar = lab.relative(0.40, GATE_MARGIN, MARGIN_SCALE)

    def fusion(c: lab.Case) -> np.ndarray:
        return c.cos + W_COVERAGE * c.cov ** COVERAGE_POWER

    def passes(c: lab.Case) -> np.ndarray:
        base = lab.level(c.top_cos)
        second = np.zeros(len(c.cos), bool) if base is None else \
            (c.cov + lam * c.cov_rel >= coverage) & (c.cos >= max(floor, base))
        return bar(c) | second
    return fusion, passes


def gate_table(cases: list[lab.Case]) -> dict:
    from bench.recall import gate_losses

    out = {}
    for point in [(0.0, 0.40, 0.34)] + GATE_GRID:
        fusion, passes = joint_gate(*point)
        out[point] = {k: lab.gate_metrics(g, fusion, passes) for k, g in gate_losses.groups(cases).items()}
    return out


def cached_cases(projects, queries, filler, sizes, mode, rebuild: bool = False) -> list[lab.Case]:
    path = lab.OUT / f"lexicon_lab-cases-{mode}-{'-'.join(map(str, sizes))}.pickle"
    if path.exists() and not rebuild:
        return _load(path)
    cases = build(projects, queries, filler, sizes, mode)
    path.write_bytes(pickle.dumps(cases))
    return cases


def shares(cases: list[lab.Case], split: str = "train") -> dict[int, dict]:
    """Per size (both sets, `split`): the lost answers (under the bar or out of the fused top 10) and the null
    prompts' fused first that hold some prompt word only in a related form (`cov_rel` > 0): how much of the
    prompt's weight that is (median), how many would clear the second way in counting it fully (exact + related
    >= COVERAGE_GATE and a cosine at the level: `inject.holds_the_words` at lambda 1), how many stand at the level."""
    from bench.recall import gate_losses
    from subcog_store.recall.inject import COVERAGE_GATE

    went = gate_losses.where(cases)
    fusion, _ = gate_losses.shipped()
    rows: dict[int, dict[str, list]] = defaultdict(lambda: {"lost": [], "null": []})
    for key, group in gate_losses.groups(cases).items():
        if key[1] != split:
            continue
        for c in group:
            ranked, base = list(lab.order(c, fusion(c))), lab.level(c.top_cos)
            if base is None:
                continue
            picks = [("null", ranked[0])] if not c.relevant else [
                ("lost", min((ranked.index(i), i) for i, f in enumerate(c.facts) if f == fact)[1])
                for fact in c.answers if went[key][(c.qid, fact)].startswith(("under the bar", "not in the fused"))]
            for who, i in picks:
                rows[key[2]][who].append((c.cov[i], c.cov_rel[i], c.cos[i] - base))
    out = {}
    for size, r in sorted(rows.items()):
        out[size] = {}
        for who, values in r.items():
            v = np.array(values).reshape(-1, 3)
            rel = v[v[:, 1] > 0]
            out[size][who] = {
                "n": len(v), "with a related word": len(rel),
                "related share q50": round(float(np.median(rel[:, 1])), 2) if len(rel) else None,
                "at the level": int((rel[:, 2] >= 0).sum()),
                "would pass the second way in": int(((rel[:, 0] + rel[:, 1] >= COVERAGE_GATE)
                                                     & (rel[:, 2] >= 0)).sum())}
    return out


def _row(g: dict, split: str, fields=("answers", "silent")) -> str:
    return " ".join(f"{k[0]}+{k[2]} " + "/".join(f"{m[f]:.3f}" for f in fields)
                    for k, m in g.items() if k[1] == split)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,200,10000,100000")
    parser.add_argument("--only", choices=("measure", "rank", "gate", "shares"))
    parser.add_argument("--mode", default="synall")
    parser.add_argument("--split", default="train")
    parser.add_argument("--rebuild", action="store_true",
                        help="embed the sets and build the cases again (else the pickles in bench/out/recall)")
    args = parser.parse_args(argv)
    from subcog_store.text import guard_lexicon

    if not guard_lexicon.available():
        print("WordNet 3.0 is not in the model directory: `python -m subcog_store.model.files fetch`")
        return 2
    started = time.perf_counter()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    projects, queries = base_data(args.rebuild)
    own_vocab = set().union(*(w for p in projects.values() for w in p.words))
    filler = Filler(max(sizes), own_vocab)
    print(f"base data and filler ({time.perf_counter() - started:.0f} s)", flush=True)
    cases = build(projects, queries, filler, sizes, None) if args.only in (None, "measure") else []
    print(f"{len(cases)} cases ({time.perf_counter() - started:.0f} s)", flush=True)
    if args.only == "shares":
        cases = cached_cases(projects, queries, filler, sizes, args.mode, args.rebuild)
        for size, row in shares(cases, args.split).items():
            print(f"{args.mode} +{size} {args.split}: " + " | ".join(f"{who} {r}" for who, r in row.items()))
        return 0
    if args.only == "gate":
        cases = cached_cases(projects, queries, filler, sizes, args.mode, args.rebuild)
        table = gate_table(cases)

        def train(point):
            return [m for k, m in table[point].items() if k[1] == "train" and k[2] in CHOOSE_SIZES]
        ok = [p for p in table if all(m["silent"] >= lab.SILENCE for m in train(p))]
        best = max(ok, key=lambda p: (round(min(m["answers"] for m in train(p)), 6), p[1], p[2], -p[0]))
        for point, g in table.items():
            t = train(point)
            print(f"{'CHOSEN ' if point == best else ''}{args.mode} (lambda, coverage, floor) {point}: train worst "
                  f"{min(m['answers'] for m in t):.3f}/{min(m['silent'] for m in t):.3f} | train {_row(g, 'train')}"
                  f" | TEST {_row(g, 'test')}")
        return 0
    if args.only in (None, "rank"):
        table = rank_table(projects, queries, filler, sizes)
        best = choose(table)
        for point, g in table.items():
            train = [m for k, m in g.items() if k[1] == "train" and k[2] in CHOOSE_SIZES]
            print(f"{'CHOSEN ' if point == best else ''}{point}: train worst answers "
                  f"{min(m['answers'] for m in train):.3f} min silent {min(m['silent'] for m in train):.3f} mean "
                  f"MRR {np.mean([m['mrr10'] for m in train]):.4f}")
            print(f"    train answers/silent {_row(g, 'train')}")
            print(f"    TEST answers/silent {_row(g, 'test')}")
            print(f"    TEST r@5/MRR/para {_row(g, 'test', ('recall5', 'mrr10', 'paraphrase5'))}")
        (lab.OUT / "lexicon_lab-rank.pickle").write_bytes(pickle.dumps(table))
    if args.only in (None, "measure"):
        for key, tally in measure(cases, projects, queries, filler, args.split).items():
            print("|".join(map(str, key)))
            for who, n in tally.items():
                print(f"  {who:42} " + ", ".join(f"{k} {v}" for k, v in n.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
