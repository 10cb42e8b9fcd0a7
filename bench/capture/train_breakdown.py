"""What capture keeps that is not a finding, and what findings it misses, on the labelled training sessions.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.train_breakdown [--shipped] [--examples N]

Each of the 18 sessions of ../shared/samples/real/train is judged as the hooks judge it (`extract.judge`, the
user's words included, then `_one_per_point`: one candidate per paragraph or list), by a scorer that never saw its
project (`bench_capture.fold_scorers`: leave one project out, a few minutes) or, with --shipped, by the shipped
weights (in sample). A candidate is a finding when one of its sentences is labelled 1, a false keep when its
sentences are labelled and none is 1; a fact (a paragraph or list item holding a unit labelled 1) is found when one
of its units is kept. Prints the candidates' precision and the facts' recall, then false keeps and missed facts
counted by kind (source, why kept or dropped, paragraph or list item) and, with --examples, up to N of each kind
(training text is printed, never written to the repository). Chooses nothing: it shows which class a rule would
have to address; the rule is then chosen on these sessions and judged on the held-out ones (`bench_heldout`).
"""
from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench.capture import bench_capture as bc
from subcog_store.extraction import extract as ex
from subcog_store.extraction.transcript import read_assistant_texts


@dataclass
class Breakdown:
    """Candidates and facts of the sessions, with what kind each false keep and each miss is."""

    findings: int = 0
    false_keeps: Counter = field(default_factory=Counter)
    untraced: int = 0
    facts: int = 0
    facts_found: int = 0
    missed: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=lambda: defaultdict(list))

    @property
    def precision(self) -> float:
        kept = self.findings + sum(self.false_keeps.values())
        return self.findings / kept if kept else float("nan")

    @property
    def recall(self) -> float:
        return self.facts_found / self.facts if self.facts else float("nan")


def kind_of(v: ex.Verdict) -> tuple[str, str, str]:
    """(source, why it was kept or dropped, paragraph or list item)."""
    return v.kind, v.why or "scorer-no", v.unit.kind if v.unit is not None else "line"


def judge_session(s: bc.Session, path: Path, scorer, threshold: float, out: Breakdown) -> None:
    texts = [t for t in read_assistant_texts(path, include_user=True).texts if not t.is_sidechain]
    rows = {k: [r["label"] for r in v] for src in ("assistant", "summary") for k, v in s.labels[src].items()}
    verdicts = ex.judge(texts, scorer, threshold)
    label, seen = {}, Counter()
    for v in verdicts:
        if v.unit is None:
            continue
        key = (texts[v.source].uuid, v.unit.sha)
        labels = rows.get(key, [])
        label[id(v)] = labels[seen[key]] if seen[key] < len(labels) else None
        seen[key] += 1
    for group in ex._one_per_point([v for v in verdicts if v.keep]):
        labels = [label.get(id(v)) for v in group]
        if 1 in labels:
            out.findings += 1
        elif 0 in labels:
            k = kind_of(group[0])
            out.false_keeps[k] += 1
            out.examples[("false keep", k)].append(ex._group_text(group))
        else:
            out.untraced += 1
    blocks: dict[tuple, list] = defaultdict(lambda: [False, False])
    for v in verdicts:
        if v.unit is None:
            continue
        b = blocks[(v.source, v.unit.block)]
        b[0] |= label.get(id(v)) == 1
        b[1] |= v.keep
        if label.get(id(v)) == 1 and not v.keep:
            out.missed[kind_of(v)] += 1
            out.examples[("missed", kind_of(v))].append(v.unit.memory_text())
    out.facts += sum(fact for fact, _ in blocks.values())
    out.facts_found += sum(fact and kept for fact, kept in blocks.values())


def breakdown(data: Path, shipped: bool) -> Breakdown:
    sessions = bc.load(data)
    if shipped:
        scorer = ex.load_scorer()
        folds = {s.project: (scorer, scorer.threshold) for s in sessions}
    else:
        folds = bc.fold_scorers(sessions)
    out = Breakdown()
    for s in sessions:
        judge_session(s, data / s.file, *folds[s.project], out)
    return out


def render(b: Breakdown, examples: int) -> str:
    lines = [f"candidates: {b.findings} findings, {sum(b.false_keeps.values())} false keeps, {b.untraced} untraced "
             f"(the user's words are not labelled); precision {b.precision:.3f}",
             f"facts (paragraphs or items with a lasting fact): {b.facts}, found {b.facts_found}; recall "
             f"{b.recall:.3f}", "", "false keeps by kind (source, why kept, block):"]
    lines += [f"  {n:4d}  {' / '.join(k)}" for k, n in b.false_keeps.most_common()]
    lines += ["", "missed lasting-fact units by kind (source, why dropped, block):"]
    lines += [f"  {n:4d}  {' / '.join(k)}" for k, n in b.missed.most_common()]
    for (what, k), texts in sorted(b.examples.items()) if examples else ():
        lines += ["", f"## {what}: {' / '.join(k)}"] + [f"- {t[:200]!r}" for t in texts[:examples]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=bc.ts.DATA)
    ap.add_argument("--shipped", action="store_true", help="the shipped weights (in sample), not per-fold scorers")
    ap.add_argument("--examples", type=int, default=0)
    args = ap.parse_args(argv)
    print(render(breakdown(args.data, args.shipped), args.examples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
