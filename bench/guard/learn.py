"""Can a learned decision over the guard's signals tell a rewording from a changed fact? (issue 23; a report)

A logistic regression (Newton's method, pure numpy) over the cosine and the signals the rule keeps after its
vetoes, on every training pair that passes the vetoes at a cosine of at least FLOOR: shared content
(`lexical_support`), identifiers one text writes and the other does not, content words apart, word order kept
(difflib ratio of the tokens), the shorter text's length. Training sources only: the coding pairs of each train
project (cctrace, cipherbox, mclaude), PAWS dev, MRPC train; each source and class weighted alike.

Reported leave-one-source-out: trained on the other sources, the held-out source's AUC beside the cosine's and the
shared content's alone; and, for each held-out coding project, the operating point a precision-first choice on the
other sources gives (the lowest cut keeping their changed coding facts skipped at <= 2%): the held-out project's
changed facts skipped and rewordings caught, over all its pairs (vetoed and below FLOOR count as kept apart).

Second, the issue's own design: the guard's detectors as features (each check run alone: number, version, date,
unit, name, negation, polarity, participants, order, substitution), the shared content and whether it reaches
SUPPORT_MIN, and the cosine, on every training pair at a cosine of at least the gate, the model deciding instead of
the rule. Each source held out, the cut chosen on the others (the lowest at which no other source has more
label-0 pairs flagged than the rule flags there), and, as an upper bound, the best cut for the held-out source
itself at the rule's label-0 count there; beside the rule's flagged / caught on the same pairs.

Run from the project root: `nice .venv/bin/python -m bench.guard.learn`; writes bench/guard/learned.md. The rule
ships no learned weights; docs/guard.md says why from this report.
"""
from __future__ import annotations

import sys
from difflib import SequenceMatcher

import numpy as np

from bench.guard import coding_pairs
from bench.guard.data import HERE, TRAINING, PhraseCache, load
from subcog_store.text import guard
from subcog_store.text.guard_numbers import date_check, number_check, unit_check
from subcog_store.text.guard_polarity import polarity
from subcog_store.text.guard_roles import order_check
from subcog_store.text.guard_tokens import identifiers_apart, names, stem

FLOOR = 0.80
GATE = 0.90             # the store's threshold: a pair is flagged when its cosine reaches it and the model agrees
FEATURES = ("cosine", "shared content", "identifiers apart", "words apart", "order kept", "short")
MAX_SKIPPED = 0.02      # the false-skip goal, applied to the training coding projects
DETECTORS = ("number", "version", "date", "unit", "name", "negation", "polarity", "participants", "order",
             "substitution")
GATES = (0.80, 0.90)    # the detector model decides on pairs at or above the gate (0.90: the store's threshold)


def features(a: str, b: str, cosine: float, ps: PhraseCache) -> list[float] | None:
    """The pair's inputs, or None when a veto keeps it apart."""
    if guard.changed_fact(a, b, ps):
        return None
    ta, tb = guard.tokens(a), guard.tokens(b)
    ca, cb = guard._content(ta), guard._content(tb)
    sa, sb = {stem(w) for _, w in ca}, {stem(w) for _, w in cb}
    only_a, only_b = identifiers_apart(a, b)
    return [cosine, guard.lexical_support(a, b, ps), min(len(only_a) + len(only_b), 3) / 3,
            min(max(len(sa - sb), len(sb - sa)), 10) / 10, SequenceMatcher(None, ta, tb, autojunk=False).ratio(),
            1 / max(1, min(len(ca), len(cb)))]


def detector_features(a: str, b: str, cosine: float, ps: PhraseCache) -> tuple[list[float], bool]:
    """The cosine, the shared content, whether it reaches SUPPORT_MIN, and each detector of the guard run alone
    (1: it sees a changed fact); and the rule's verdict (a duplicate at the gate's cosine)."""
    ta, tb = guard.tokens(a), guard.tokens(b)
    if tb < ta:
        a, b, ta, tb = b, a, tb, ta
    checks = [number_check(ta, tb), date_check(ta, tb), unit_check(ta, tb), guard._identifier_check(a, b),
              polarity(a, b, ta, tb)]
    if max(len(ta), len(tb)) <= guard.LONG:
        checks.append(order_check(a, b))
        if ta != tb:
            checks.append(guard._substitution_check(ta, tb, names(a) | names(b), ps))
    seen = {v.reason for v in checks if v}
    support = guard.lexical_support(a, b, ps)
    rule = not guard.changed_fact(a, b, ps) and support >= guard.SUPPORT_MIN
    return [cosine, support, float(support >= guard.SUPPORT_MIN), *(float(d in seen) for d in DETECTORS)], rule


def detectors_report(ps: PhraseCache) -> list[str]:
    """The detector model against the rule, each training source held out (module docstring)."""
    rows = []
    for name in TRAINING:
        data = load(name)
        sources = [p.project for p in coding_pairs.split(coding_pairs.load(), "train")] \
            if name.startswith("coding") else [name] * len(data.pairs)
        for pair, cos, source in zip(data.pairs, data.cos, sources):
            f, rule = detector_features(pair.a, pair.b, float(cos), ps) if cos >= min(GATES) else ([0.0] * 13, False)
            rows.append((source, float(pair.label), f, rule and cos >= GATE))
    source = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    x = np.array([r[2] for r in rows])
    rule = np.array([r[3] for r in rows])
    names_ = sorted(set(source))
    out = ["", "## The guard's detectors as features, the model deciding instead of the rule", "",
           "Inputs: " + ", ".join(("cosine", "shared content", f"shared content >= {guard.SUPPORT_MIN}",
                                   *DETECTORS)) + ". Label-0 pairs flagged (a changed fact called a duplicate) and "
           "label-1 pairs caught, of all the held-out source's pairs.", ""]
    for gate in GATES:
        at = x[:, 0] >= gate
        w = np.zeros(len(y))
        for s in names_:
            for c in (0.0, 1.0):
                mask = at & (source == s) & (y == c)
                w[mask] = 1 / max(1, mask.sum())
        out += [f"Gate {gate}: the model decides on pairs at cosine >= {gate}.", "",
                "| held out | cut | flagged / caught | best cut on itself: caught | the rule: flagged / caught |",
                "| --- | ---: | ---: | ---: | ---: |"]
        for held in names_:
            test = source == held
            train = at & ~test
            beta = fit(x[train], y[train], w[train] * train.sum() / w[train].sum())
            p = np.where(at, predict(beta, x), -1.0)
            label0 = {s: (source == s) & (y == 0) for s in names_}
            cut = next((c for c in np.linspace(0, 1, 201) if all(
                ((p >= c) & label0[s]).sum() <= (rule & label0[s]).sum() for s in names_ if s != held)), 1.01)
            same, changed = test & (y == 1), test & (y == 0)
            best = min(c for c in np.linspace(0, 1.01, 203) if ((p >= c) & changed).sum() <= (rule & changed).sum())
            out.append(f"| {held} | {cut:.3f} | {int(((p >= cut) & changed).sum())} / {int(((p >= cut) & same).sum())}"
                       f" | {int(((p >= best) & same).sum())} | {int((rule & changed).sum())} / "
                       f"{int((rule & same).sum())} |")
        out.append("")
    return out


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1.0, rounds: int = 30) -> np.ndarray:
    """Weighted, L2-regularised logistic regression by Newton's method; the last weight is the bias."""
    x1 = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(x1.shape[1])
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-x1 @ beta))
        hessian = x1.T @ (x1 * (w * p * (1 - p))[:, None]) + l2 * np.eye(len(beta))
        beta += np.linalg.solve(hessian, x1.T @ (w * (y - p)) - l2 * beta)
    return beta


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ beta)))


def auc(score: np.ndarray, y: np.ndarray) -> float:
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    ranks[order] = np.arange(1, len(score) + 1)
    pos, neg = y.sum(), (1 - y).sum()
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg)) if pos and neg else float("nan")


def main() -> int:
    ps = PhraseCache()
    rows, totals = [], {}   # totals: source -> (same, changed) over all its pairs
    for name in TRAINING:
        data = load(name)
        sources = [p.project for p in coding_pairs.split(coding_pairs.load(), "train")] \
            if name.startswith("coding") else [name] * len(data.pairs)
        for pair, cos, source in zip(data.pairs, data.cos, sources):
            same, changed = totals.get(source, (0, 0))
            totals[source] = (same + pair.label, changed + (not pair.label))
            if cos >= FLOOR and (f := features(pair.a, pair.b, float(cos), ps)) is not None:
                rows.append((source, float(pair.label), f))
    ps.save()
    source = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    x = np.array([r[2] for r in rows])
    w = np.zeros(len(y))
    for s in set(source):
        for c in (0.0, 1.0):
            mask = (source == s) & (y == c)
            w[mask] = 1 / max(1, mask.sum())
    w *= len(y) / w.sum()
    beta = fit(x, y, w)
    coding = sorted(s for s in set(source) if s not in TRAINING)
    out = ["# A learned decision over the guard's signals (`python -m bench.guard.learn`)", "",
           f"Training pairs at cosine >= {FLOOR} that pass the vetoes, per source (same / changed): " + ", ".join(
               f"{s} {int(((source == s) & (y == 1)).sum())} / {int(((source == s) & (y == 0)).sum())}"
               for s in sorted(set(source))) + ".", "",
           "Weights trained on all of them (inputs scaled 0..1): " + ", ".join(
               f"{f} {b:+.2f}" for f, b in zip((*FEATURES, "bias"), beta)) + ".", "",
           "## Each source held out (trained on the others): AUC", "",
           "| held out | pairs | learned | cosine alone | shared content alone |", "| --- | ---: | ---: | ---: | ---: |"]
    for held in sorted(set(source)):
        test = source == held
        b = fit(x[~test], y[~test], w[~test])
        out.append(f"| {held} | {test.sum()} | {auc(predict(b, x[test]), y[test]):.3f} | "
                   f"{auc(x[test, 0], y[test]):.3f} | {auc(x[test, 1], y[test]):.3f} |")
    out += ["", f"## Each coding project held out: the cut chosen on the other sources (their changed coding facts "
            f"skipped <= {MAX_SKIPPED:.0%}), cosine >= {GATE}", "",
            "| held out | cut | skipped (others) | held out: changed skipped | held out: rewordings caught | "
            "the rule alone: skipped / caught |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for held in coding:
        test, train = source == held, (source != held) & np.isin(source, coding)
        b = fit(x[source != held], y[source != held], w[source != held])
        p = predict(b, x)
        gated = x[:, 0] >= GATE
        changed_train = sum(totals[s][1] for s in coding if s != held)

        def skipped(cut: float, mask: np.ndarray) -> int:
            return int((gated & mask & (y == 0) & (p >= cut)).sum())
        cut = next((c for c in np.linspace(0, 1, 101) if skipped(c, train) <= MAX_SKIPPED * changed_train), 1.0)
        same, changed = totals[held]
        rule_skip = int((gated & test & (y == 0) & (x[:, 1] >= guard.SUPPORT_MIN)).sum())
        rule_catch = int((gated & test & (y == 1) & (x[:, 1] >= guard.SUPPORT_MIN)).sum())
        out.append(f"| {held} | {cut:.2f} | {skipped(cut, train) / changed_train:.1%} | "
                   f"{skipped(cut, test) / changed:.1%} | {int((gated & test & (y == 1) & (p >= cut)).sum()) / same:.1%} "
                   f"| {rule_skip / changed:.1%} / {rule_catch / same:.1%} |")
    out += detectors_report(ps)
    ps.save()
    (HERE / "learned.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
