"""What one training session stores twice, and why the session-repeat rule let the later memory through.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.train_repeats [--tree DIR] [--floor 0.6]
        [--examples N] [--more] [--dump DUMP.json ...]

Captures the 18 training sessions (../shared/samples/real/train; one fresh store per project, the sessions in
name order; with --more the `train_more` sessions too, read from a mirror as `heldout.py` reads the held-out
ones; with --dump the memories of `train_stale dump` files instead of a new capture) with the session-end hook of
`--tree` (default: this checkout; `bench_heldout.run_tree`, worker off,
the shipped scorer: in sample), then takes each stored memory in the order it was stored and the nearest earlier
memory of its session (cosine of the real model). From `--floor` up it reports the pair: where each comes from
(the assistant's text, a compaction summary, the user: traced to the training labels as `bench_heldout` traces
held-out memories), whether each holds a labelled lasting fact, and why THIS checkout's rule
(`dedup.session_repeat.is_session_repeat`) does not call the later one a repeat: under its floor, not the same
subject, a shared lead-in, or the guard's veto (with the guard's reason). Counts by cosine band, sources and cause
are printed; with --examples the pairs too (training text is printed, never written to the repository), to be
judged by hand. Chooses nothing by itself: a rule is chosen on these pairs and judged on the held-out projects.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from bench.capture import train_scorer as ts
from bench.capture.bench_heldout import REPO, Labelled, run_tree, traced
from bench.capture.label_units import session_units
from subcog_store.dedup import session_repeat as sr

LABELS = Path(__file__).resolve().parent
BANDS = (0.60, 0.70, 0.75, 0.85, 1.01)


def labelled(path: Path) -> list[Labelled]:
    """The labelled units of a training transcript (assistant text and summaries); `stale` holds the unit's kind."""
    rows: dict = defaultdict(list)
    for folder in ("labels", "labels_summaries"):
        f = LABELS / folder / path.name
        for line in f.read_text(encoding="utf-8").splitlines() if f.is_file() else ():
            row = json.loads(line)
            rows[(row["uuid"], row["sentence_sha"])].append(row)
    out = []
    for _, kind, t, u in session_units(path):
        found = rows.get((t.uuid, u.sha))
        if found:
            out.append(Labelled(u.text, found[0]["label"], None, kind))
    return out


def cause(older: str, newer: str, sim: float, from_summary: bool, phrases) -> str:
    """Why this checkout's session-repeat rule keeps `newer` beside `older` ("repeat" when it does not)."""
    from subcog_store.text.guard import changed_fact

    if sr._shared_lead(older, newer):
        return "shared lead-in"
    if sim < (sr.SUMMARY_REPEAT if from_summary else sr.SUBJECT_REPEAT):
        return "under the floor"
    if sim < sr.SESSION_REPEAT and not sr.same_subject(older, newer):
        return "not the same subject"
    verdict = changed_fact(older, newer, phrases)
    if sr._conflict(verdict):
        return f"guard veto: {verdict.reason}"
    return "repeat" if sr.is_session_repeat(older, newer, sim, phrases, from_summary) else "other"


def more_labelled(s) -> list[Labelled]:
    """The labelled units of a `train_more` session (`train_stale.more_sessions`), `stale` holding the unit's kind."""
    rows = {k: list(v) for k, v in s.labels.items()}
    out = []
    for _, kind, t, u in session_units(s.path):
        if pending := rows.get((t.uuid, u.sha)):
            out.append(Labelled(u.text, pending.pop(0)["label"], None, kind))
    return out


def pairs(tree: Path, data: Path, floor: float, work: Path, more: bool = False,
          dumps: list[Path] | None = None) -> tuple[Counter, list[dict]]:
    """The pairs (see the module docstring); with `dumps` (`train_stale dump` files of one tree) the memories are
    read from them, in the order they were stored, instead of captured again."""
    from subcog_store.model.embedder import Embedder

    embedder = Embedder(REPO / "models")
    embedder.load()

    def phrases(a: str, b: str) -> float:
        v = embedder.embed_batch([a, b])
        return float(v[0] @ v[1])

    projects: dict[str, list[tuple[str, Path]]] = defaultdict(list)
    units_of = {}
    for path in sorted(data.glob("*.jsonl")) if data.is_dir() else ():
        projects[path.name.split("-")[0]].append((path.stem, path))
        units_of[path.stem] = lambda path=path: labelled(path)
    if more:
        from bench.capture.train_stale import more_sessions

        (work / "more").mkdir(parents=True, exist_ok=True)
        for s in more_sessions(work / "more"):
            projects[s.project].append((s.name, s.path))
            units_of[s.name] = lambda s=s: more_labelled(s)
    counts: Counter = Counter()
    out = []
    dumped = [m for d in dumps or () for m in json.loads(d.read_text(encoding="utf-8"))]
    for project, sessions in projects.items():
        by_session = defaultdict(list)
        if dumps:
            names = {n for n, _ in sessions}
            for m in dumped:   # a dump lists each project's memories in the order they were stored
                if m["session_id"] in names:
                    by_session[m["session_id"]].append(m)
        else:
            result = run_tree(tree, project, sessions, [], work / project)
            con = sqlite3.connect(work / project / "memories.db")
            seq = dict(con.execute("select id, seq from memories"))
            con.close()
            for m in sorted(result["memories"], key=lambda m: seq[m["id"]]):
                by_session[m["session_id"]].append(m)
        for session, memories in by_session.items():
            units = units_of[session]()
            held: set[int] = set()
            for m in memories:
                us = traced(m["content"], units)
                m["from"] = "+".join(sorted({u.stale for u in us})) or "?"
                m["fact"] = any(u.label == 1 for u in us)
                held |= {id(u) for u in us if u.label == 1}
                counts["traced"] += bool(us)
                counts["facts held"] += m["fact"]
            counts["stored"] += len(memories)
            counts["fact units"] += sum(u.label == 1 for u in units)
            counts["fact units held"] += len(held)
            vectors = embedder.embed_batch([m["content"] for m in memories])
            for i in range(1, len(memories)):
                sims = vectors[:i] @ vectors[i]
                j = int(sims.argmax())
                sim = float(sims[j])
                if sim < floor:
                    continue
                older, newer = memories[j], memories[i]
                out.append({"session": session, "sim": sim, "older": older["content"], "newer": newer["content"],
                            "sources": f"{older['from']} > {newer['from']}",
                            "facts": f"{int(older['fact'])}{int(newer['fact'])}",
                            "cause": cause(older["content"], newer["content"], sim, newer["from"] == "summary",
                                           phrases)})
    return counts, out


def render(counts: Counter, found: list[dict], examples: int) -> str:
    lines = [f"stored {counts['stored']}, traced to a labelled unit {counts['traced']}, holding a lasting fact "
             f"{counts['facts held']} (precision {counts['facts held'] / max(counts['traced'], 1):.3f}); labelled "
             f"fact units held {counts['fact units held']} of {counts['fact units']} (unit recall "
             f"{counts['fact units held'] / max(counts['fact units'], 1):.3f})",
             f"pairs (a memory and the nearest earlier one of its session) from cosine {BANDS[0]:.2f}: {len(found)}",
             ""]
    for lo, hi in zip(BANDS, BANDS[1:]):
        band = [p for p in found if lo <= p["sim"] < hi]
        lines.append(f"cosine {lo:.2f}-{min(hi, 1.0):.2f}: {len(band)} pairs; both hold a fact "
                     f"{sum(p['facts'] == '11' for p in band)}")
        for (sources, why), n in Counter((p["sources"], p["cause"]) for p in band).most_common():
            lines.append(f"  {n:4d}  {sources:24s} {why}")
    if examples:
        lines.append("")
        for p in sorted(found, key=lambda p: -p["sim"])[:examples]:
            lines += [f"--- {p['session']} {p['sim']:.3f} {p['sources']} facts {p['facts']} {p['cause']}",
                      f"  older: {p['older'][:240]!r}", f"  newer: {p['newer'][:240]!r}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, default=REPO, help="the checkout whose hooks capture (default: this one)")
    ap.add_argument("--data", type=Path, default=ts.DATA)
    ap.add_argument("--floor", type=float, default=BANDS[0])
    ap.add_argument("--examples", type=int, default=0)
    ap.add_argument("--more", action="store_true", help="the train_more sessions too (read from a mirror)")
    ap.add_argument("--dump", type=Path, nargs="*", help="read the memories from these train_stale dumps")
    args = ap.parse_args(argv)
    if not args.data.is_dir() and not args.more:
        print(f"{args.data}: no training sessions; nothing measured")
        return 0
    with tempfile.TemporaryDirectory(prefix="subcog-train-repeats-") as tmp:
        counts, found = pairs(args.tree.resolve(), args.data, args.floor, Path(tmp), args.more, args.dump)
    print(render(counts, found, args.examples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
