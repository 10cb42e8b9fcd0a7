"""Precision, recall and repeats of a tree's capture on the TRAINING sessions, counted from `train_stale dump` files.

    cd <checkout> && SUBCOG_MIRROR_DIR=<mirror> nice -n 10 .venv/bin/python -m bench.capture.train_stale dump \
        --tree DIR OUT.json
    SUBCOG_MIRROR_DIR=<mirror> .venv/bin/python -m bench.capture.train_grouping OUT.json [OUT.json ...] [--examples]
        [--stores STORES [STORES ...]]

For the sessions of `train_more/` (read from a mirror; labels with fact ids: a fact and its restatements share one)
the figures are `bench_heldout.evaluate`'s, exactly as the held-out projects are counted: stored, precision
(memories holding a labelled lasting fact), recall (fact ids with a memory), repeated (memories every fact of which
an earlier memory of their session already held) and the extra copies of a fact (restatements counted per fact,
which grouping more into one memory cannot hide). The 18 sessions of
../shared/samples/real/train have labels without fact ids, so for them a repeat cannot be counted that way: stored,
precision among the traced memories and labelled fact units held (as `train_repeats` counts them). With --stores
(one folder per dump, in order: the stores `bench_train_questions capture` made with the same tree) the 18 sessions'
memories are read from those stores instead of the dump (`train_stale dump --data <empty>` then captures
`train_more` only). With --examples the `train_more` repeats are printed beside the earlier memory holding their
fact (training text is printed, never written to the repository). Chooses nothing by itself: a grouping of the
extractor is chosen on these figures (RESULTS.md) and judged held out.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.capture import train_scorer as ts
from bench.capture.bench_heldout import evaluate, labelled_units, traced
from bench.capture.train_repeats import labelled
from bench.capture.train_stale import more_sessions


def long_figures(memories: list[dict], data: Path) -> dict:
    """The 18 sessions: stored, traced, holding a fact, fact units held and labelled (units as `train_repeats`)."""
    by_session = defaultdict(list)
    for m in memories:
        by_session[m["session_id"]].append(m)
    c = dict(stored=0, traced=0, facts=0, units=0, units_held=0)
    for path in sorted(data.glob("*.jsonl")) if data.is_dir() else ():
        units = labelled(path)
        held: set[int] = set()
        for m in by_session.get(path.stem, []):
            us = traced(m["content"], units)
            c["stored"] += 1
            c["traced"] += bool(us)
            c["facts"] += any(u.label == 1 for u in us)
            held |= {id(u) for u in us if u.label == 1}
        c["units"] += sum(u.label == 1 for u in units)
        c["units_held"] += len(held)
    return c


def repeats(memories: list[dict], sessions) -> list[tuple[str, str, str]]:
    """(session, earlier memory, the repeat) for every `train_more` repeat, counted as `bench_heldout` counts it."""
    out = []
    for s in sessions:
        units = labelled_units(s)
        first: dict[str, str] = {}
        for m in (m for m in memories if m["session_id"] == s.name):
            held = {u.fact for u in traced(m["content"], units) if u.label == 1}
            if held and held <= set(first):
                out.append((s.name, first[min(held)], m["content"]))
            for f in held:
                first.setdefault(f, m["content"])
    return out


def store_memories(stores: Path) -> list[dict]:
    """The memories of every `STORES/<project>/memories.db`, each project's in the order they were stored."""
    out = []
    for db in sorted(stores.glob("*/memories.db")):
        con = sqlite3.connect(db)
        rows = con.execute("select session_id, content, status, successor_id from memories order by seq").fetchall()
        con.close()
        out += [dict(zip(("session_id", "content", "status", "successor_id"), r)) for r in rows]
    return out


def report(path: Path, sessions, examples: bool, stores: Path | None = None) -> str:
    memories = json.loads(path.read_text(encoding="utf-8"))
    if stores is not None:
        memories += store_memories(stores)
    c = long_figures(memories, ts.DATA)
    names = {s.name for s in sessions}
    more = [m for m in memories if m["session_id"] in names]
    f = evaluate({"captures": [], "memories": more, "searches": [], "prompts": []}, sessions, [])
    lines = [f"{path.name}",
             f"  the 18: stored {c['stored']}, precision {c['facts'] / max(c['traced'], 1):.3f} ({c['facts']} of "
             f"{c['traced']} traced), fact units held {c['units_held']} of {c['units']} "
             f"({c['units_held'] / max(c['units'], 1):.3f})",
             f"  train_more ({len(sessions)} sessions): stored {f.stored}, precision "
             f"{f.facts_stored / max(f.stored, 1):.3f} ({f.facts_stored}), recall "
             f"{f.facts_found / max(f.facts, 1):.3f} ({f.facts_found} of {f.facts} facts), repeated "
             f"{f.repeated / max(f.stored, 1):.3f} ({f.repeated}), extra copies of a fact {f.copies}"]
    if examples:
        for session, older, newer in repeats(more, sessions):
            lines += [f"  --- {session}", f"    earlier: {older[:300]!r}", f"    repeat:  {newer[:300]!r}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dumps", type=Path, nargs="+", help="train_stale dump files")
    ap.add_argument("--examples", action="store_true", help="print the train_more repeats")
    ap.add_argument("--stores", type=Path, nargs="*", default=[], help="the 18 sessions' stores, one a dump")
    args = ap.parse_args(argv)
    if args.stores and len(args.stores) != len(args.dumps):
        ap.error("--stores takes one folder per dump")
    with tempfile.TemporaryDirectory(prefix="subcog-train-grouping-") as tmp:
        sessions = more_sessions(Path(tmp))
        for i, p in enumerate(args.dumps):
            print(report(p, sessions, args.examples, args.stores[i] if args.stores else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
