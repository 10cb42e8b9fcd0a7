"""Where the prompt hook's answers go as the project grows, and the gate rules round 5 tried (scale_lab's cases).

Reads the cases `scale_lab.py` pickled (both labelled sets among 0, 200, 10,000 and 100,000 planted memories; build
them with `scale_lab.py --sizes ...` first) and, with the product's fusion and gate (`scale_lab.two_ways` with the
shipped constants), prints per set, split and size:

- `losses`: every answer of a relevant prompt, by where it went: injected; in the fused top 10 but under the gate's
  bar (ranked 1, 2-3, 4-5, 6-10; how many are paraphrases holding none of the memory's words); cleared the bar but
  three others came first; not in the fused top 10 (and of those, how many stand below the prompt's own level,
  which no gate can let in without letting in the level); then the answers injected without filler and lost at a
  larger size, by where they went;
- `families`: gate rules chosen on TRAIN (every size in the cases; the most answers injected in the worst (set,
  size) group while every train group stays silent on >= SILENCE; ties to the stricter point of the grid)
  with their TEST figures beside the shipped gate's: the level from other ranks of the vector side, the cosine's
  standard score over every memory of the project (its mean and spread, the store's own distribution), the prompt
  reduced to its content as a second view;
- `tradeoff`: the shipped gate with its margin's scale (`inject.MARGIN_SCALE`) moved, TEST answers / silence per
  group: what each step of answers costs in silence.

    .venv/bin/python -m bench.recall.gate_losses [--cases PATH] [--only losses|families|tradeoff]
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from bench.recall import scale_lab as lab

KINDS = ("injected", "under the bar, ranked 1", "under the bar, ranked 2-3", "under the bar, ranked 4-5",
         "under the bar, ranked 6-10", "... under the bar: a paraphrase holding none of its words",
         "cleared the bar, three came first", "not in the fused top 10", "... its cosine below the prompt's level")
RANKS = ("1", "2-3", "2-3", "4-5", "4-5", "6-10")   # fused rank 0, 1, ... 5 and beyond (within the top 10)
SCALES = (0.36, 0.40, 0.44, 0.50, 0.55, 0.60, 0.70, 1e9)   # 1e9: the fixed margin (GATE_MARGIN at every size)


def shipped():
    from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
    from subcog_store.recall.inject import COVERAGE_FLOOR, COVERAGE_GATE, GATE_MARGIN, MARGIN_SCALE

    fusion = lambda c: c.cos + W_COVERAGE * c.cov ** COVERAGE_POWER   # noqa: E731 - recall.fusion.score
    return fusion, lambda scale=MARGIN_SCALE, floor=0.40: lab.two_ways(floor, GATE_MARGIN, COVERAGE_GATE,
                                                                       COVERAGE_FLOOR, scale)


def groups(cases: list[lab.Case]) -> dict[tuple, list[lab.Case]]:
    out: dict[tuple, list[lab.Case]] = defaultdict(list)
    for c in cases:
        out[(c.set, c.split, c.size)].append(c)
    return dict(sorted(out.items()))


def where(cases: list[lab.Case]) -> dict[tuple, dict[tuple[str, str], str]]:
    """Per (set, split, size): where each answer of each relevant prompt went, keyed by (query, fact): a kind of
    KINDS, with ", below the level" or ", a paraphrase holding none of its words" added where it applies."""
    fusion, gate = shipped()
    passes = gate()
    out = {}
    for key, group in groups(cases).items():
        went = {}
        for c in (c for c in group if c.relevant):
            ok, ranked = passes(c), list(lab.order(c, fusion(c)))
            chosen = [i for i in ranked[:10] if ok[i]][:lab.PROMPT_LIMIT]
            base = lab.level(c.top_cos)
            for fact in c.answers:
                rank, i = min((ranked.index(i), i) for i, f in enumerate(c.facts) if f == fact)
                if i in chosen:
                    kind = "injected"
                elif rank >= 10:
                    kind = "not in the fused top 10" + (", below the level" if base is not None and c.cos[i] < base
                                                        else "")
                elif ok[i]:
                    kind = "cleared the bar, three came first"
                else:
                    kind = f"under the bar, ranked {RANKS[min(rank, 5)]}"
                    if c.kind == "paraphrase" and c.cov[i] == 0:
                        kind += ", a paraphrase holding none of its words"
                went[(c.qid, fact)] = kind
        out[key] = went
    return out


def losses(cases: list[lab.Case]) -> dict[tuple, Counter]:
    """Per (set, split, size): the answers counted by where they went (module docstring)."""
    out = {}
    for key, went in where(cases).items():
        n = Counter(dict.fromkeys(KINDS, 0))
        for kind in went.values():
            n[kind.replace(", below the level", "").replace(", a paraphrase holding none of its words", "")] += 1
            if kind.endswith("below the level"):
                n["... its cosine below the prompt's level"] += 1
            if kind.endswith("none of its words"):
                n["... under the bar: a paraphrase holding none of its words"] += 1
        out[key] = n
    return out


def lost_with_size(cases: list[lab.Case]) -> dict[tuple, Counter]:
    """Per (set, split, size > 0): the answers injected without filler and not at this size, by where they went."""
    went = where(cases)
    out = {}
    for (s, split, size), here in went.items():
        empty = went.get((s, split, 0))
        if size and empty:
            out[(s, split, size)] = Counter(kind for k, kind in here.items()
                                            if empty[k] == "injected" and kind != "injected")
    return out


def figures(cases: list[lab.Case], passes) -> dict[tuple, dict]:
    fusion, _ = shipped()
    return {k: lab.gate_metrics(v, fusion, passes) for k, v in groups(cases).items()}


def choose(cases: list[lab.Case], make, grid) -> tuple[tuple, dict] | None:
    """The grid point chosen on TRAIN (module docstring) and its figures in every group."""
    best = None
    for point in grid:
        g = figures(cases, make(*point))
        train = [m for k, m in g.items() if k[1] == "train"]
        if all(m["silent"] >= lab.SILENCE for m in train):
            worst = round(min(m["answers"] for m in train), 6)
            if best is None or worst >= best[0]:   # grids run from loose to strict: ties to the stricter
                best = (worst, point, g)
    return None if best is None else (best[1], best[2])


def window(lo: int, hi: int, margin: float, scale: float):
    """The shipped gate with the prompt's level taken as the mean of the vector side's ranks lo+1..hi."""
    def passes(c: lab.Case) -> np.ndarray:
        base = lab.level(c.top_cos, lo, hi)
        m = min(margin, scale / math.sqrt(2 * math.log(lab.memories_of(c))))
        return (c.cos >= (0.40 if base is None else max(0.40, base + m))) | holds_the_words(c)
    return passes


def holds_the_words(c: lab.Case) -> np.ndarray:
    """The shipped second way in alone (`inject.holds_the_words`)."""
    from subcog_store.recall.inject import COVERAGE_FLOOR, COVERAGE_GATE

    base = lab.level(c.top_cos)
    return np.zeros(len(c.cos), bool) if base is None else \
        (c.cov >= COVERAGE_GATE) & (c.cos >= max(COVERAGE_FLOOR, base))


def standard_score(a: float, b: float, alone: bool):
    """The cosine's standard score over every memory of the project ((cos - mean) / spread) >= a + b sqrt(2 ln N)
    and the floor 0.40: in place of the relative bar (beside the second way in) or as a third way in."""
    _, gate = shipped()
    rest = holds_the_words if alone else gate()

    def passes(c: lab.Case) -> np.ndarray:
        z = (c.cos - c.mu) / max(c.sd, 1e-6)
        return ((z >= a + b * math.sqrt(2 * math.log(max(lab.memories_of(c), 3)))) & (c.cos >= 0.40)) | rest(c)
    return passes


def two_views(margin: float, scale: float):
    """Beside the shipped gate, a third way in: the memory stands `margin` (narrowed by `scale` as the shipped
    margin is) above the prompt's level both by the prompt as typed and by the prompt reduced to its content."""
    _, gate = shipped()
    base_gate = gate()

    def passes(c: lab.Case) -> np.ndarray:
        base, rbase = lab.level(c.top_cos), lab.level(c.rtop)
        if base is None or rbase is None:
            return base_gate(c)
        m = min(margin, scale / math.sqrt(2 * math.log(lab.memories_of(c))))
        return base_gate(c) | ((c.cos >= max(0.40, base + m)) & (c.rcos >= max(0.34, rbase + m)))
    return passes


def families(cases: list[lab.Case]) -> list[tuple[str, tuple | None, dict]]:
    from subcog_store.recall.inject import MARGIN_SCALE

    _, gate = shipped()
    out = [("shipped", (MARGIN_SCALE,), figures(cases, gate()))]
    margins = [(s, m) for s in (0.3, 0.34, 0.38, 0.42, 0.46, 0.50, 0.55, 0.6, 0.7, 0.8, 1.0)
               for m in (0.10, 0.12, 0.14, 0.16, 0.18, 0.20)]
    for lo, hi in ((5, 15), (1, 5), (3, 10), (5, 30), (5, 50), (15, 50)):
        got = choose(cases, lambda s, m, lo=lo, hi=hi: window(lo, hi, m, s), margins)
        out.append((f"level = mean of ranks {lo + 1}-{hi}, (scale, margin)", *(got or (None, {}))))
    if all(not math.isnan(c.mu) for c in cases):
        zs = [(float(a), b) for a in np.arange(-1.0, 6.01, 0.25).round(2) for b in (0.0, 0.5, 0.75, 1.0, 1.25, 1.5)]
        for alone in (True, False):
            got = choose(cases, lambda a, b, alone=alone: standard_score(a, b, alone), zs)
            out.append((f"standard score {'alone' if alone else 'beside the shipped gate'}, (a, b)",
                        *(got or (None, {}))))
    if all(c.rtop is not None for c in cases):
        grid = [(m, s) for m in (0.04, 0.06, 0.08, 0.10, 0.12) for s in (0.2, 0.3, 0.4, 0.5, 1.0)]
        got = choose(cases, two_views, grid)
        out.append(("both views above their level, beside the shipped gate, (margin, scale)", *(got or (None, {}))))
    return out


def tradeoff(cases: list[lab.Case]) -> dict[float, dict]:
    _, gate = shipped()
    return {scale: figures(cases, gate(scale=scale)) for scale in SCALES}


def _cells(g: dict, split: str) -> str:
    return " ".join(f"{k[0]}+{k[2]} {m['answers']:.3f}/{m['silent']:.3f}" for k, m in g.items() if k[1] == split)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=lab.CASES)
    parser.add_argument("--only", choices=("losses", "families", "tradeoff"))
    args = parser.parse_args(argv)
    cases = lab.load_cases(args.cases)
    if args.only in (None, "losses"):
        print("where the answers go (shipped ranking and gate), per set | split | size:")
        for key, n in losses(cases).items():
            print(f"  {'|'.join(map(str, key)):20} " + ", ".join(f"{k} {v}" for k, v in n.items()))
        print("injected without filler, lost at this size, by where they went:")
        for key, n in lost_with_size(cases).items():
            print(f"  {'|'.join(map(str, key)):20} " + ", ".join(f"{k} {v}" for k, v in n.most_common()))
    if args.only in (None, "families"):
        print("gate rules chosen on TRAIN; answers / silent: TRAIN worst group, then TEST per group")
        for name, point, g in families(cases):
            train = [m for k, m in g.items() if k[1] == "train"]
            worst = f"{min(m['answers'] for m in train):.3f} / {min(m['silent'] for m in train):.3f}" if train else "-"
            print(f"  {name} {point}: train worst {worst} | TEST {_cells(g, 'test')}")
    if args.only in (None, "tradeoff"):
        print("the margin's scale moved (1e9: fixed 0.14), TEST answers / silent per group:")
        for scale, g in tradeoff(cases).items():
            print(f"  {scale:g}: {_cells(g, 'test')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
