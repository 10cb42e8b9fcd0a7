"""Stale memories on the TRAINING sessions: what a tree's hooks store there that was already false when the session
ended (a status line, or a belief the session later corrected), against a small hand-made label file.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.train_stale dump [--tree DIR] OUT.json
    .venv/bin/python -m bench.capture.train_stale score DUMP.json [DUMP.json ...]
    .venv/bin/python -m bench.capture.train_stale rules DUMP.json

`dump` captures the 18 training sessions (../shared/samples/real/train; one fresh store per project, worker off,
the tree's own hooks, `bench_heldout.run_tree`) and writes every stored memory with its session and status.
`score` counts, per dump, the memories the label file `labels_stale/train_stale.jsonl` marks stale (keyed by
session and the sha1 of the memory's text) that are still current (active, not linked as outdated), as
`bench_heldout` counts stale on the held-out projects, and lists the memories no label row covers (to be labelled:
the training text is printed, never written to the repository). The labelling rule is in `labels_stale/README.md`.
`rules` is the evidence each status rule (`extraction/status.RULES`) was kept or dropped on: its hits among the
labelled training units (lasting facts / not) and among the memories of a dump (stale-labelled / not). A rule is
kept when at most one in five of its unit hits is a lasting fact and it hits at least twice as many stale memories
as others (fixed before the candidates were counted).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.capture import train_scorer as ts
from bench.capture.bench_heldout import REPO, run_tree
from bench.capture.train_repeats import labelled

LABELS = Path(__file__).resolve().parent / "labels_stale" / "train_stale.jsonl"


def key(session: str, content: str) -> str:
    return f"{session}:{hashlib.sha1(content.encode('utf-8')).hexdigest()[:16]}"


def dump(tree: Path, data: Path, out: Path) -> None:
    projects: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(data.glob("*.jsonl")):
        projects[path.name.split("-")[0]].append(path)
    memories = []
    with tempfile.TemporaryDirectory(prefix="subcog-train-stale-") as tmp:
        for project, paths in projects.items():
            work = Path(tmp) / project
            result = run_tree(tree, project, [(p.stem, p) for p in paths], [], work)
            con = sqlite3.connect(work / "memories.db")
            seq = dict(con.execute("select id, seq from memories"))
            log = con.execute("select count(*) from dedup_log").fetchone()[0]
            con.close()
            for m in sorted(result["memories"], key=lambda m: seq[m["id"]]):
                m["key"] = key(m["session_id"], m["content"])
                memories.append(m)
            print(f"{project}: {len(result['memories'])} memories, {log} decision-log rows", file=sys.stderr)
    out.write_text(json.dumps(memories), encoding="utf-8")


def load_labels() -> dict[str, dict]:
    if not LABELS.is_file():
        return {}
    return {r["key"]: r for r in map(json.loads, LABELS.read_text(encoding="utf-8").splitlines())}


def score(path: Path, labels: dict[str, dict], show_unlabelled: bool) -> str:
    memories = json.loads(path.read_text(encoding="utf-8"))
    stale = status = corrected = unlabelled = 0
    for m in memories:
        row = labels.get(m["key"])
        current = m["status"] == "active" and not m.get("successor_id")
        if row is None:
            unlabelled += 1
            if show_unlabelled:
                print(f"UNLABELLED {m['key']} {m['content'][:300]!r}")
            continue
        if row["stale"] and current:
            stale += 1
            status += row["stale"] == "status"
            corrected += row["stale"] == "corrected"
    n = len(memories)
    return (f"{path.name}: stored {n}, stale and current {stale} ({stale / max(n, 1):.3f}: status {status}, "
            f"corrected {corrected}), memories no label covers {unlabelled}")


def rules(path: Path) -> str:
    from subcog_store.extraction.status import RULES

    units = []
    for transcript in sorted(ts.DATA.glob("*.jsonl")):
        units += [(u.text, u.label) for u in labelled(transcript)]
    memories = json.loads(path.read_text(encoding="utf-8"))
    labels = load_labels()
    lines = [f"{len(units)} labelled training units ({sum(label for _, label in units)} lasting facts), "
             f"{len(memories)} memories", "rule      units: fact / not   memories: stale / not"]
    for name, pattern in RULES.items():
        fact = sum(1 for text, label in units if label == 1 and pattern.search(text))
        other = sum(1 for text, label in units if label == 0 and pattern.search(text))
        hit = [m for m in memories
               if any(pattern.search(line.removeprefix("- ")) for line in m["content"].splitlines())]
        stale = sum(1 for m in hit if (labels.get(m["key"]) or {}).get("stale"))
        lines.append(f"{name:9s} {fact:11d} / {other:<5d} {stale:14d} / {len(hit) - stale}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--tree", type=Path, default=REPO)
    d.add_argument("--data", type=Path, default=ts.DATA)
    s = sub.add_parser("score")
    s.add_argument("dumps", type=Path, nargs="+")
    s.add_argument("--unlabelled", action="store_true", help="print the memories no label row covers")
    r = sub.add_parser("rules")
    r.add_argument("dump", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "rules":
        print(rules(args.dump))
        return 0
    if args.cmd == "dump":
        if not args.data.is_dir():
            print(f"{args.data}: no training sessions; nothing measured")
            return 0
        dump(args.tree.resolve(), args.data, args.out)
        return 0
    labels = load_labels()
    for p in args.dumps:
        print(score(p, labels, args.unlabelled))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
