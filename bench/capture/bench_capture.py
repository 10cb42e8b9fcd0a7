"""Capture benchmark: the old rule classifier beside the new extraction, per source, on held-out projects.

    cd <checkout> && .venv/bin/python -m bench.capture.bench_capture [--data DIR] [--no-store] [--out FILE]

On the 18 labelled sessions of ../shared/samples/real/train (labels in bench/capture/labels*/), leave one project
out: for each project the scorer is retrained on the other five with train_scorer's own code (`fit_fold`: feature
set, L2 strength and threshold chosen on the training projects), and the new extraction (`extract.judge`, what
`extract_candidates` runs) is measured on the held-out project. The old classifier (`classify.legacy_candidates`,
the paragraph pipeline the hook ran) is measured on the same units. Sources: assistant text; compaction summaries
(`isCompactSummary` records). Then the time per transcript with the shipped weights, and (unless --no-store) a run
through a real store: the candidates of the session before each compaction, then the summary's, to count how many
summary candidates the deduplication recognises as already captured. Writes its section of bench/capture/RESULTS.md
(between the markers below), keeping the rest of the file.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from bench.capture import train_scorer as ts  # noqa: E402
from subcog_store.extraction import scorer as sc  # noqa: E402
from bench.capture.legacy_classifier import legacy_candidates  # noqa: E402
from subcog_store.extraction.extract import extract_candidates, judge, load_scorer  # noqa: E402
from subcog_store.extraction.sentences import split_units  # noqa: E402
from subcog_store.extraction.transcript import AssistantText, read_assistant_texts  # noqa: E402

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- bench_capture: begin -->", "<!-- bench_capture: end -->"
HOOK_DEFAULT = 0.5  # SUBCOG_HOOK_MIN_CONFIDENCE's default in config.py today


@dataclass
class Session:
    """One transcript: its texts (assistant and summaries, in order) and, per source, the labelled units."""

    file: str
    project: str
    size: int
    texts: list[AssistantText]
    labels: dict = field(default_factory=dict)  # source -> {(uuid, sha): [rows]}

    def of(self, kind: str) -> list[AssistantText]:
        return [t for t in self.texts if t.kind == kind and not t.is_sidechain]


@dataclass
class Run:
    """Per source: the label, project, file and block of every unit, and each method's verdict on it."""

    y: list = field(default_factory=list)
    project: list = field(default_factory=list)
    block: list = field(default_factory=list)  # (file, record, block) for fact-level recall
    ns_label: list = field(default_factory=list)
    pred: dict = field(default_factory=lambda: defaultdict(list))  # method -> kept?
    ns: dict = field(default_factory=lambda: defaultdict(list))  # method -> namespace
    why: list = field(default_factory=list)  # why the new extraction kept (or dropped) the unit
    old_caps: list = field(default_factory=list)  # (project, has a labelled fact) per old capture
    missing: int = 0


def load(data: Path) -> list[Session]:
    sessions = []
    for path in sorted(data.glob("*.jsonl")):
        s = Session(path.name, ts.project_of(path.name), path.stat().st_size, read_assistant_texts(path).texts)
        s.labels = {"assistant": ts.load_labels(HERE / "labels", path.stem),
                    "summary": ts.load_labels(HERE / "labels_summaries", path.stem)}
        sessions.append(s)
    return sessions


def training_data(sessions: list[Session]) -> tuple[list, np.ndarray, list[str]]:
    """Features, labels and projects of the assistant units, as train_scorer builds them."""
    feats, y, projects = [], [], []
    for s in sessions:
        labels = {k: list(v) for k, v in s.labels["assistant"].items()}
        for t in s.of("assistant"):
            units = split_units(t.text)
            for u, f in zip(units, sc.record_features(units)):
                rows = labels.get((t.uuid, u.sha))
                if rows:
                    feats.append(f)
                    y.append(int(rows.pop(0)["label"]))
                    projects.append(s.project)
    return feats, np.array(y, dtype=float), projects


def fold_scorers(sessions: list[Session]) -> dict[str, tuple[sc.Scorer, float]]:
    """Per held-out project: a scorer trained on the other projects with train_scorer's fit_fold, and its threshold."""
    feats, y, projects = training_data(sessions)
    out = {}
    for held in sorted(set(projects)):
        train = np.array([i for i, p in enumerate(projects) if p != held])
        fold = ts.fit_fold(feats, y, projects, train)
        out[held] = (sc.Scorer(ts.export(fold, len(train), sorted(set(projects) - {held}))), fold.threshold)
        print(f"fold {held}: lambda={fold.lam} words={fold.words} threshold={fold.threshold}", file=sys.stderr)
    return out


def old_by_uuid(caps) -> dict[str, list[str]]:
    """The old captures' normalized texts per source record."""
    by_uuid: dict[str, list[str]] = defaultdict(list)
    for c in caps:
        by_uuid[c.source_uuid or ""].append(ts._norm(c.text))
    return by_uuid


def evaluate(sessions: list[Session], folds: dict) -> dict[str, Run]:
    runs = {"assistant": Run(), "summary": Run()}
    for s in sessions:
        scorer, threshold = folds[s.project]
        for source in ("assistant", "summary"):
            texts = s.of(source)
            if not texts:
                continue
            run = runs[source]
            labels = {k: list(v) for k, v in s.labels[source].items()}
            # The old hook never read summary records: "old" on summaries is its classifier fed their text.
            old_caps = legacy_candidates(texts)
            old = old_by_uuid(old_caps)
            calls = [texts] if source == "assistant" else [[t] for t in texts]  # a summary is captured on its own
            for call in calls:
                new = judge(call, scorer, threshold)
                floor = judge(call, scorer, HOOK_DEFAULT)
                per_record = [v for t in call for v in judge([t], scorer, threshold)]
                for v, f, r in zip(new, floor, per_record):
                    if v.unit is None:
                        continue  # a facts-section line: no recorded summary has one
                    uuid = call[v.source].uuid or ""
                    rows = labels.get((uuid, v.unit.sha))
                    if not rows:
                        run.missing += 1
                        continue
                    row = rows.pop(0)
                    run.y.append(int(row["label"]))
                    run.ns_label.append(row.get("namespace"))
                    run.project.append(s.project)
                    run.block.append((s.file, uuid, v.unit.block, v.source))
                    run.pred["new"].append(v.keep)
                    run.ns["new"].append(v.namespace)
                    run.why.append(v.why)
                    run.pred["new@0.5"].append(f.keep)
                    run.pred["new per record"].append(r.keep)
                    run.pred["old"].append(ts.covered(v.unit.text, old.get(uuid, [])))
            units = {t.uuid: split_units(t.text) for t in texts}
            for c in old_caps:
                fact = any(ts.covered(u.text, [ts._norm(c.text)]) and any(
                    r["label"] for r in s.labels[source].get((c.source_uuid or "", u.sha), []))
                    for u in units.get(c.source_uuid, []))
                run.old_caps.append((s.project, fact))
    return runs


def fmt(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f}"


def block_recall(run: Run, pred: list) -> float:
    blocks: dict[tuple, list[int]] = defaultdict(list)
    for i, b in enumerate(run.block):
        blocks[b].append(i)
    facts = [ix for ix in blocks.values() if any(run.y[i] for i in ix)]
    return sum(any(pred[i] for i in ix) for ix in facts) / len(facts) if facts else float("nan")


def timing(sessions: list[Session], data: Path, repeat: int = 5) -> list[tuple]:
    """Per transcript (best of `repeat`): read, new extraction (shipped weights, loaded beforehand; wall and CPU
    time), old pipeline."""
    load_scorer()
    out = []
    for s in sessions:
        path = data / s.file
        best = [float("inf")] * 4
        for _ in range(repeat):
            t0 = time.perf_counter()
            texts = read_assistant_texts(path).texts
            t1, c1 = time.perf_counter(), time.process_time()
            cands = extract_candidates(texts)
            t2, c2 = time.perf_counter(), time.process_time()
            legacy_candidates([t for t in texts if t.kind == "assistant" and not t.is_sidechain])
            t3 = time.perf_counter()
            best = [min(a, b) for a, b in zip(best, (t1 - t0, t2 - t1, c2 - c1, t3 - t2))]
        out.append((s.file, s.size, len(cands), *best))
    return out


def store_check(sessions: list[Session]) -> list[tuple]:
    """Per summary: capture the session's candidates up to it, then the summary's. Returns (file, line, candidates,
    outcome counts, stored ones a memory of another namespace already says, and how many candidates have an earlier
    capture at cosine >= 0.9 and >= 0.8, any namespace)."""
    from subcog_store.inputs import CaptureRequest
    from subcog_store.model.embedder import Embedder
    from subcog_store.store import Store

    embedder = Embedder()
    out = []
    for s in sessions:
        if not s.of("summary"):
            continue
        with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "b.db", fetch_model=False) as store:
            done, earlier = 0, []
            main = [t for t in s.texts if t.kind == "summary" or not t.is_sidechain]
            for i, t in enumerate(main):
                if t.kind != "summary":
                    continue
                before = extract_candidates(main[done:i])
                done = i + 1
                store.capture_many([CaptureRequest(c.text, c.namespace, "project", 0.5) for c in before])
                earlier += [c.text for c in before]
                cands = extract_candidates([t])
                outcomes = store.capture_many([CaptureRequest(c.text, c.namespace, "project", 0.5) for c in cands])
                counts: Counter = Counter()
                cross = 0
                for c, o in zip(cands, outcomes):
                    if o.repeat_of is not None:
                        counts["in_batch"] += 1
                    elif o.result is not None and o.result.stored:
                        counts[o.result.decision] += 1
                        cross += _said_elsewhere(store, c.text, c.namespace)
                    elif o.result is not None:
                        counts[o.result.check.reason] += 1
                    else:
                        counts["error"] += 1
                near = np.zeros(len(cands))
                if cands and earlier:
                    sims = embedder.embed_batch([c.text for c in cands]) @ embedder.embed_batch(earlier).T
                    near = sims.max(axis=1)
                out.append((s.file, t.line_no, len(cands), counts, cross, int((near >= 0.9).sum()),
                            int((near >= 0.8).sum())))
                earlier += [c.text for c in cands]
    return out


def _said_elsewhere(store, text: str, namespace: str) -> int:
    """1 when a memory in another namespace would have been this text's duplicate (the dedup is per namespace)."""
    from subcog_store.text.namespaces import NAMESPACES

    for ns in NAMESPACES:
        if ns != namespace and store.check_duplicate(text, ns, "project", log_check=False).is_duplicate:
            return 1
    return 0


def render(runs: dict[str, Run], folds: dict, times, store, elapsed: float) -> str:
    out = [BEGIN, "## Capture benchmark: old classifier vs new extraction (bench_capture.py)", "",
           f"Generated by `python -m bench.capture.bench_capture` in {elapsed:.0f} s. Leave one project out over the "
           "18 labelled sessions: for each project the scorer is retrained on the other five with train_scorer's "
           "`fit_fold` (feature set, L2 and threshold chosen on the training projects), and the new extraction "
           "(`extract.judge`: sentence units, the scorer at the fold's threshold, explicit signals, list items with "
           "their lead-in and siblings, the fact of an intention, status left out; nothing dropped for a correction) is scored on the held-out project's labelled units. **old** "
           "= the paragraph classifier the hook ran (`classify.legacy_candidates`); a unit counts as captured by it "
           "when a capture of its record contains the sentence (so one paragraph captures all its sentences). "
           "**new@0.5** = the same with the 0.5 floor the hook passes today (`SUBCOG_HOOK_MIN_CONFIDENCE`'s default). "
           "**new per record** = one `extract_candidates` call per record (how the hook calls it today: corrections "
           "cannot reach across records). Cells: sentence-level P / R; **fact R** = share of blocks (paragraph or "
           "list item) holding a labelled fact where a unit was kept; **old mem P** = share of the old captures "
           "(paragraphs) holding at least one labelled fact.", "",
           "Fixed before measuring: the explicit signals (`extract._MARKERS`, `_PHRASES`: the old classifier's "
           "strongest markers and phrases, never for narration, questions, offers or hedges), the summary sections "
           "never kept (`summary.SKIP_SECTIONS`: user quotes, pending tasks, current work, next step, per the "
           "labelling guideline). Chosen after looking at the labelled summaries: the concepts section kept whole "
           "(`summary.FACT_SECTIONS`). `min_confidence` is a floor on P(lasting fact); None (the default of "
           "`extract_candidates`) is each weights file's threshold.", ""]
    for source, title in (("assistant", "Assistant text"), ("summary", "Compaction summaries")):
        run = runs[source]
        if not run.y:
            continue
        y = np.array(run.y)
        pa = np.array(run.project)
        methods = ["old", "new", "new@0.5", "new per record"]
        preds = {m: np.array(run.pred[m], dtype=bool) for m in methods}
        out += [f"### {title}", "", f"{len(y)} units, {int(y.sum())} lasting facts"
                + (f" ({run.missing} units without a label)" if run.missing else "") + ".", "",
                "| held-out project | units | facts | " + " | ".join(methods) + " | old mem P (n) | new captures |",
                "|---|---:|---:|" + "---|" * len(methods) + "---:|---:|"]
        rows = [(p, pa == p) for p in sorted(set(run.project))] + [("**pooled**", np.ones(len(y), dtype=bool))]
        for name, m in rows:
            caps = [f for p, f in run.old_caps if name == "**pooled**" or p == name]
            mem = (sum(caps) / len(caps)) if caps else float("nan")
            cells = []
            for meth in methods:
                p, r, *_ = ts.prf(y[m], preds[meth][m])
                cells.append(f"{fmt(p)} / {fmt(r)}")
            out.append(f"| {name} | {int(m.sum())} | {int(y[m].sum())} | " + " | ".join(cells)
                       + f" | {fmt(mem)} ({len(caps)}) | {int(preds['new'][m].sum())} |")
        macro = []
        for meth in methods:
            vals = [ts.prf(y[pa == p], preds[meth][pa == p]) for p in sorted(set(run.project))]
            ps = [v[0] for v in vals if v[0] == v[0]]
            rs = [v[1] for v in vals if v[1] == v[1]]
            macro.append(f"{meth} {np.mean(ps):.2f} / {np.mean(rs):.2f}")
        facts = "; ".join(f"{meth} {block_recall(run, preds[meth]):.2f}" for meth in methods)
        tp = [i for i in range(len(y)) if y[i] and preds["new"][i]]
        ns_ok = np.mean([run.ns["new"][i] == run.ns_label[i] for i in tp]) if tp else float("nan")
        whys = Counter((w, int(t)) for w, t in zip(run.why, y) if w)
        kept_by = ", ".join(f"{w} {whys[(w, 1)]} facts / {whys[(w, 0)]} not" for w in
                            ("score", "signal", "section", "intent", "sibling", "status", "topic", "skip")
                            if whys[(w, 1)] + whys[(w, 0)])
        out += ["", f"Macro average over projects (P / R): {'; '.join(macro)}. Fact R: {facts}. Namespace of the "
                f"new captures that are lasting facts: {ns_ok:.0%} agree with the label ({len(tp)} units). "
                f"New, by reason (kept: score, signal, section, intent, sibling; left out: status, topic, skip): "
                f"{kept_by}.", ""]
        if whys[("section", 1)] + whys[("section", 0)]:
            bare = preds["new"] & (np.array(run.why) != "section")
            p, r, *_ = ts.prf(y, bare)
            out += [f"Without the concepts-section rule (chosen after looking at these summaries, so the row above is "
                    f"optimistic by it): new {fmt(p)} / {fmt(r)}.", ""]
    if times:
        out += ["### Time per transcript", "",
                "Best of 5 (the machine is shared), the shipped weights loaded once beforehand. **read** = `read_assistant_texts` (summaries "
                "included); **new** = `extract_candidates` over the whole transcript (redaction, units, scorer, "
                "signals, corrections, summaries); **old** = `legacy_candidates`.", "",
                "| file | size | candidates | read | new | new (CPU) | old |", "|---|---:|---:|---:|---:|---:|---:|"]
        for name, size, n, tr, tn, cn, to in times:
            big = " **(3 MB+)**" if size > 3e6 else ""
            out.append(f"| {name}{big} | {size / 1e6:.1f} MB | {n} | {tr * 1000:.0f} ms | {tn * 1000:.0f} ms "
                       f"| {cn * 1000:.0f} ms | {to * 1000:.0f} ms |")
        total = [tr + tn for _, _, _, tr, tn, _, _ in times]
        big = [(name, tr + tn, cn) for name, size, _, tr, tn, cn, _ in times if size > 3e6]
        out += ["", f"Read + new (wall): p50 {statistics.median(total) * 1000:.0f} ms, max {max(total) * 1000:.0f} ms; "
                "3 MB+ transcripts (read + new wall; new CPU): "
                + ", ".join(f"{n} {t * 1000:.0f} ms; {c * 1000:.0f} ms" for n, t, c in big)
                + " (hook budget `SUBCOG_HOOK_BUDGET_SECS` 20 s). Wall time depends on the load of this shared "
                "2-core machine; CPU time is the work.", ""]
    if store:
        out += ["### Summaries through the store", "",
                "A fresh store per transcript; the shipped extraction's candidates of the session up to each "
                "compaction summary are captured, then the summary's own candidates (scorer over its text: no "
                "recorded summary has the lasting-facts section). **already said elsewhere** = stored summary "
                "candidates that a memory in another namespace would have matched (deduplication is per namespace); "
                "**near 0.9 / 0.8** = summary candidates whose closest earlier capture (any namespace, MiniLM cosine) "
                "is at least that similar: restatements the store keeps because they reword or add to the earlier "
                "sentence (the guard) or fall under the namespace threshold.",
                "", "| file | summary line | candidates | outcome | already said elsewhere | near 0.9 / 0.8 |",
                "|---|---:|---:|---|---:|---:|"]
        for name, line, n, counts, cross, n9, n8 in store:
            outcome = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            out.append(f"| {name} | {line} | {n} | {outcome} | {cross} | {n9} / {n8} |")
        out.append("")
    out.append(END)
    return "\n".join(out)


def write_section(path: Path, section: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ts.DATA)
    ap.add_argument("--no-store", action="store_true", help="skip the run through a real store (needs the model)")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    sessions = load(args.data)
    if not sessions:
        print(f"no transcripts in {args.data}", file=sys.stderr)
        return 1
    folds = fold_scorers(sessions)
    runs = evaluate(sessions, folds)
    times = timing(sessions, args.data)
    store = [] if args.no_store else store_check(sessions)
    section = render(runs, folds, times, store, time.perf_counter() - t0)
    write_section(args.out, section)
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
