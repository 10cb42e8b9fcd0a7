"""Calibrate the changed-fact guard on training data only: MRPC train, PAWS dev and the coding pairs of the train
projects (bench/guard/pairs).

Run from the project root: `.venv/bin/python -m bench.calibrate_guard` (about two minutes the first time, while
the cosines and phrase embeddings are computed; they are cached under bench/out/). Reads the data from
../shared/data (or $SUBCOG_SHARED_DIR/data), prints the tables and writes them to bench/guard/calibration.md.
Each constant of `subcog_store.text.guard` that was chosen here gets a table and the rule that chose it:

- SYNONYM_MIN and the phrase the model compares: one-slot substitutions of PAWS dev and MRPC train (label 1: a
  synonym; 0: another fact); per phrasing the lowest cut letting at most one label-0 pair through, and the
  phrasing that then accepts the most label-1 pairs.
- MODIFIER_WORDS, HEAD_WORDS: PAWS dev label-0 pairs flagged vs the coding pairs' train projects and MRPC
  train, at cosine 0.90.
- SUPPORT_MIN, CLAUSE_RUN: MRPC train precision/recall at cosine 0.88-0.92.
MRPC test and STS test are never read here (bench/bench_guard.py reports on them).
"""
from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from subcog_store.evaluation.pairs import LabeledPair, read_pairs
from subcog_store.text import guard, guard_roles

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"      # caches (git-ignored)
RESULTS = ROOT / "bench" / "guard"  # kept outputs
SETS = {  # name: path under data/, format
    "MRPC train": ("mrpc/msr_paraphrase_train.txt", "mrpc"),
    "PAWS dev": ("paws/paws_wiki_dev.jsonl", "jsonl"),
    "MRPC test": ("mrpc/msr_paraphrase_test.txt", "mrpc"),
    "STS test": ("stsb/sts-test.csv", "sts"),
}
TRAINING = ("MRPC train", "PAWS dev")
THRESHOLDS = [round(0.80 + 0.02 * i, 2) for i in range(9)]  # 0.80 .. 0.96


def data_dir() -> Path:
    shared = os.environ.get("SUBCOG_SHARED_DIR")
    return (Path(shared) if shared else ROOT.parent / "shared") / "data"


def load(name: str) -> tuple[list[LabeledPair], np.ndarray]:
    """The labeled pairs of a set and the cosine of each pair (the store's embedder; cached by file hash)."""
    rel, fmt = SETS[name]
    path = data_dir() / rel
    pairs = read_pairs(path, fmt)  # type: ignore[arg-type]
    key = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    cache = OUT / f"guard-cosines-{key}.npy"
    if cache.exists():
        cos = np.load(cache)
        if len(cos) == len(pairs):
            return pairs, cos
    from subcog_store.model.embedder import Embedder

    embedder = Embedder()
    a, b = embedder.embed_batch([p.a for p in pairs]), embedder.embed_batch([p.b for p in pairs])
    cos = (a * b).sum(axis=1)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(cache, cos)
    return pairs, cos


class PhraseCache:
    """PhraseSimilarity with the real model, each phrase embedded once (kept in bench/out/guard-phrases.pkl)."""

    path = OUT / "guard-phrases.pkl"

    def __init__(self) -> None:
        from subcog_store.model.embedder import Embedder

        self.embedder = Embedder()
        self.vectors: dict[str, np.ndarray] = pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        self.calls = 0
        self.misses = 0

    def vector(self, phrase: str) -> np.ndarray:
        if phrase not in self.vectors:
            self.misses += 1
            self.vectors[phrase] = self.embedder.embed(phrase)
        return self.vectors[phrase]

    def prefetch(self, phrases: Iterable[str]) -> None:
        missing = sorted({p for p in phrases if p not in self.vectors})
        for p, v in zip(missing, self.embedder.embed_batch(missing)):
            self.vectors[p] = v

    def __call__(self, p: str, q: str) -> float:
        self.calls += 1
        return float(self.vector(p) @ self.vector(q))

    def save(self) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(pickle.dumps(self.vectors))


def same_words(pair: LabeledPair) -> bool:
    """PAWS's "exactly the same words": the same multiset of lower-cased \\w+ tokens."""
    words = lambda s: sorted(re.findall(r"\w+", s.lower()))  # noqa: E731
    return words(pair.a) == words(pair.b)


@dataclass(frozen=True)
class Row:
    cosine: float
    changed: bool
    support: float
    label: bool
    pair: LabeledPair


def judge_all(pairs: list[LabeledPair], cos: np.ndarray, floor: float,
              judge: Callable[[str, str], tuple[bool, float]]) -> list[Row]:
    """The guard's verdict on every pair at or above `floor` (the rest can never be flagged)."""
    rows = []
    for p, c in zip(pairs, cos):
        changed, support = judge(p.a, p.b) if c >= floor else (True, 0.0)
        rows.append(Row(float(c), changed, support, p.label, p))
    return rows


def new_judge(ps: Callable[[str, str], float] | None) -> Callable[[str, str], tuple[bool, float]]:
    from subcog_store.dedup.rule import judge

    def run(a: str, b: str) -> tuple[bool, float]:
        v = judge(a, b, 1.0, ps)
        return v.changed_fact is not None, v.support
    return run


def flagged(rows: list[Row], threshold: float, support_min: float = guard.SUPPORT_MIN) -> list[bool]:
    return [r.cosine >= threshold and not r.changed and r.support >= support_min for r in rows]


def score(flags: list[bool], labels: list[bool]) -> tuple[int, float, float]:
    """flagged, precision, recall."""
    tp = sum(f and l for f, l in zip(flags, labels))
    n = sum(flags)
    return n, (tp / n if n else 1.0), (tp / sum(labels) if any(labels) else 0.0)


def cell(flags: list[bool], labels: list[bool]) -> str:
    n, p, r = score(flags, labels)
    return f"{n} / {p:.3f} / {r:.3f}"


def paws_cells(rows: list[Row], flags: list[bool]) -> tuple[str, str, str]:
    """Same words label 0 flagged, all label 0 flagged, label 1 recall."""
    sw0 = [not r.label and same_words(r.pair) for r in rows]
    l0 = [not r.label for r in rows]
    n_sw0, n_l0 = sum(f and s for f, s in zip(flags, sw0)), sum(f and s for f, s in zip(flags, l0))
    rec = sum(f and r.label for f, r in zip(flags, rows)) / sum(r.label for r in rows)
    return (f"{n_sw0} / {sum(sw0)} ({n_sw0 / sum(sw0):.1%})", f"{n_l0} / {sum(l0)} ({n_l0 / sum(l0):.1%})",
            f"{rec:.3f}")


# ---------------------------------------------------------------- the calibrations


def _context(toks: tuple[str, ...], i: int, j: int, words: int) -> str:
    """The slot with context up to the nearest content word, at most `words` words each side."""
    start, end = i, j
    while start > 0 and i - start < words:
        start -= 1
        if guard._content(toks[start:start + 1]):
            break
    while end < len(toks) and end - j < words:
        end += 1
        if guard._content(toks[end - 1:end]):
            break
    return " ".join(toks[start:end])


PHRASINGS: dict[str, Callable[[tuple[str, ...], int, int], str]] = {
    "the slot alone": lambda t, i, j: " ".join(t[i:j]),
    "one word each side (guard._phrase)": guard._phrase,
    "up to the nearest content word, 2 words each side": lambda t, i, j: _context(t, i, j, 2),
}


def slot_pairs(sets: dict[str, tuple[list[LabeledPair], np.ndarray]]
               ) -> list[tuple[bool, tuple[str, ...], tuple[str, ...], tuple[int, int, int, int]]]:
    """One-slot substitutions (the guard's `substitution` shape) in the training sets: label, tokens, slot."""
    out = []
    for name in TRAINING:
        for p in sets[name][0]:
            ta, tb = guard.tokens(p.a), guard.tokens(p.b)
            ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
            if len(ops) != 1 or ops[0][0] != "replace":
                continue
            _, i1, i2, j1, j2 = ops[0]
            if (i2 - i1 > guard.SLOT_MAX or j2 - j1 > guard.SLOT_MAX or not guard._content(ta[i1:i2])
                    or not guard._content(tb[j1:j2])):
                continue
            out.append((p.label, ta, tb, (i1, i2, j1, j2)))
    return out


def calibrate_synonyms(sets: dict, ps: PhraseCache, lines: list[str]) -> None:
    slots = slot_pairs(sets)
    pos, neg = sum(s[0] for s in slots), sum(not s[0] for s in slots)
    cuts = [round(0.70 + 0.02 * i, 2) for i in range(14)]
    lines += ["## SYNONYM_MIN (one-slot substitutions, MRPC train + PAWS dev)", "",
              f"{len(slots)} pairs with one slot filled differently: {pos} labelled the same meaning, {neg} not. "
              "Cells: same meaning let through / different meaning let through.", "",
              "| cut | " + " | ".join(PHRASINGS) + " |", "| ---: |" + " ---: |" * len(PHRASINGS)]
    sims = {}
    for name, phrase in PHRASINGS.items():
        pairs = [(phrase(ta, i1, i2), phrase(tb, j1, j2)) for _, ta, tb, (i1, i2, j1, j2) in slots]
        ps.prefetch([x for pq in pairs for x in pq])
        sims[name] = [(label, ps(p, q)) for (label, *_), (p, q) in zip(slots, pairs)]
    best: dict[str, tuple[float, int]] = {}
    for cut in cuts:
        cells = []
        for name, rows in sims.items():
            p_ok = sum(lab and s >= cut for lab, s in rows)
            n_ok = sum((not lab) and s >= cut for lab, s in rows)
            if n_ok <= 1 and name not in best:
                best[name] = (cut, p_ok)
            cells.append(f"{p_ok} / {n_ok}")
        lines.append(f"| {cut:.2f} | " + " | ".join(cells) + " |")
    phrasing = max(best, key=lambda n: best[n][1])
    lines += ["", "Rule: for each phrasing the lowest cut letting at most one different-meaning pair through; the "
              f"phrasing that then accepts the most synonyms: **{phrasing}**, cut **{best[phrasing][0]}** "
              f"({best[phrasing][1]} of {pos}); guard.SYNONYM_MIN = {guard.SYNONYM_MIN}. Others: "
              + ", ".join(f"{n} {c} ({k} of {pos})" for n, (c, k) in best.items() if n != phrasing) + ".", ""]


def calibrate_modifier_words(sets: dict, ps: PhraseCache, lines: list[str]) -> None:
    """MODIFIER_WORDS, HEAD_WORDS (issue 23): may a modifier trade places with its head? PAWS dev, MRPC train and
    the coding pairs of the train projects at 0.90."""
    from bench.guard.data import load as load_set

    coding = load_set("coding train")
    lines += ["## MODIFIER_WORDS, HEAD_WORDS (neighbouring units that may trade places), cosine 0.90", "",
              "| MODIFIER_WORDS, HEAD_WORDS | coding pairs (train projects) changed skipped / same caught "
              "| PAWS dev same words, label 0 flagged | PAWS dev label 0 flagged | MRPC train flagged / P / R |",
              "| --- | --- | ---: | ---: | --- |"]
    keep = guard_roles.MODIFIER_WORDS, guard_roles.HEAD_WORDS
    chosen = None
    try:
        for value in ((0, 0), (1, 1), (1, 2), (2, 2), (99, 99)):
            guard_roles.MODIFIER_WORDS, guard_roles.HEAD_WORDS = value
            paws = judge_all(*sets["PAWS dev"], 0.90, new_judge(ps))
            mrpc = judge_all(*sets["MRPC train"], 0.90, new_judge(ps))
            code = judge_all(coding.pairs, coding.cos, 0.90, new_judge(ps))
            flags = flagged(paws, 0.90)
            sw0, l0, _ = paws_cells(paws, flags)
            sw0_share = sum(f and not r.label and same_words(r.pair) for f, r in zip(flags, paws)) / \
                sum(not r.label and same_words(r.pair) for r in paws)
            l0_share = sum(f and not r.label for f, r in zip(flags, paws)) / sum(not r.label for r in paws)
            chosen = value if sw0_share <= 0.05 and l0_share <= 0.10 else chosen
            cf = flagged(code, 0.90)
            skipped = sum(f and not r.label for f, r in zip(cf, code)) / sum(not r.label for r in code)
            caught = sum(f and r.label for f, r in zip(cf, code)) / sum(r.label for r in code)
            lines.append(f"| {value[0]}, {value[1]} | {skipped:.1%} / {caught:.1%} | {sw0} | {l0} | "
                         f"{cell(flagged(mrpc, 0.90), [r.label for r in mrpc])} |")
    finally:
        guard_roles.MODIFIER_WORDS, guard_roles.HEAD_WORDS = keep
    lines += ["", f"Rule: the largest values that keep PAWS dev label-0 pairs flagged at or under the targets (5% of "
              f"the same-words ones, 10% of all): **{chosen}** (guard: {keep}). A modifier moving around its head "
              "carries no role (issue 23), but the rule reads units, not parts of speech: any freedom lets PAWS "
              "swaps through.", ""]


def calibrate_support(sets: dict, ps: PhraseCache, lines: list[str]) -> None:
    lines += ["## SUPPORT_MIN and CLAUSE_RUN (MRPC train, flagged / precision / recall)", "",
              "| CLAUSE_RUN | SUPPORT_MIN | 0.88 | 0.90 | 0.92 |", "| ---: | ---: | --- | --- | --- |"]
    keep = guard.CLAUSE_RUN
    try:
        for run in (2, 3, 4):
            guard.CLAUSE_RUN = run
            rows = judge_all(*sets["MRPC train"], 0.88, new_judge(ps))
            labels = [r.label for r in rows]
            for support_min in (0.5, 0.55, 0.6, 0.65, 0.7):
                cells = [cell(flagged(rows, t, support_min), labels) for t in (0.88, 0.90, 0.92)]
                lines.append(f"| {run} | {support_min} | " + " | ".join(cells) + " |")
    finally:
        guard.CLAUSE_RUN = keep
    lines += ["", f"Kept: SUPPORT_MIN {guard.SUPPORT_MIN}, CLAUSE_RUN {guard.CLAUSE_RUN} (the original guard's, "
              "still the best precision at recall >= 0.20 on MRPC train at 0.90).", ""]


def threshold_curve(sets: dict, ps: PhraseCache, lines: list[str]) -> None:
    lines += ["## The rule by cosine threshold (training sets)", "",
              "| threshold | MRPC train flagged / P / R | PAWS dev same words label 0 | PAWS dev label 0 "
              "| PAWS dev recall |", "| ---: | --- | ---: | ---: | ---: |"]
    mrpc = judge_all(*sets["MRPC train"], min(THRESHOLDS), new_judge(ps))
    paws = judge_all(*sets["PAWS dev"], min(THRESHOLDS), new_judge(ps))
    chosen = None
    for t in THRESHOLDS:
        flags = flagged(paws, t)
        sw0, l0, rec = paws_cells(paws, flags)
        n, p, r = score(flagged(mrpc, t), [r.label for r in mrpc])
        share = sum(f and not row.label for f, row in zip(flags, paws)) / sum(not row.label for row in paws)
        if chosen is None and p >= 0.96 and share <= 0.10:
            chosen = t
        lines.append(f"| {t:.2f} | {n} / {p:.3f} / {r:.3f} | {sw0} | {l0} | {rec} |")
    lines += ["", f"Rule: the lowest threshold with MRPC train precision >= 0.96 and PAWS dev label-0 pairs flagged "
              f"<= 10%: **{chosen}** (the store's default stays 0.90). No threshold reaches recall 0.30 at "
              "precision 0.96 on MRPC train.", ""]


def main(argv: list[str] | None = None) -> int:
    if not data_dir().is_dir():
        print(f"calibrate_guard: {data_dir()} is absent; nothing to calibrate (set SUBCOG_SHARED_DIR)")
        return 0
    start = time.perf_counter()
    sets = {name: load(name) for name in TRAINING}
    ps = PhraseCache()
    lines = ["# Guard calibration (MRPC train and PAWS dev only)", "",
             "Written by `python -m bench.calibrate_guard`; the rule is duplicate iff cosine >= threshold, no "
             "changed fact and lexical_support >= SUPPORT_MIN, with the model's phrase similarity.", ""]
    try:
        for step in (calibrate_synonyms, calibrate_modifier_words, calibrate_support, threshold_curve):
            step(sets, ps, lines)
    finally:
        ps.save()
    lines.append(f"({time.perf_counter() - start:.0f} s)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "calibration.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written to {RESULTS / 'calibration.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
