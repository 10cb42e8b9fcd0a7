"""`Store.search` latency at 10k beside a baseline commit, in the same run, and proof that both return the same hits.

Each sample is a fresh process (the baseline tree, extracted with `git archive`, or this tree) that opens a copy
of bench_recall_latency's cached 10k store, warms the model with one search, then times `search(limit=10)` on
queries it has never embedded (hybrid), the same queries again (query vector cached) and the text side alone.
This tree runs twice: as a one-shot process (no caches) and as the warm worker and the MCP server run it (the
caches of db/bitcache.py and db/vectorcache.py on, warmed before timing). Rounds rotate the order of the three
(ABC, BCA, CAB, ...); each round asks new queries, the same ones of every variant. Every query's top 10 (ids and
scores to 6 decimals) must be equal across the three. Run at nice 0; the load average is printed with the figures.

    .venv/bin/python -m bench.recall.bench_search_speed --base ff496b3 [--size 10000] [--queries 60] [--rounds 6]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import corpus as corpus_mod
from bench.recall.bench_recall_latency import DOMAIN, build, working_copy

ROOT = Path(__file__).resolve().parents[2]
CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
if args["warm"]:
    from subcog_store.db import bitcache
    bitcache.enable()
from subcog_store.store import Store
store = Store(args["db"], fetch_model=False)
store.search("warm up the model and the page cache", domain=args["domain"], limit=10)
if args["warm"]:
    from subcog_store.db import vectorcache
    assert vectorcache.warm(store.con, args["domain"]), "the vector cache did not load"
out = {"hybrid": [], "cached": [], "text": [], "top": []}
for key, use_model in (("hybrid", True), ("cached", True), ("text", False)):
    for text in args["queries"]:
        t0 = time.perf_counter()
        result = store.search(text, domain=args["domain"], limit=10, use_model=use_model)
        out[key].append((time.perf_counter() - t0) * 1000)
        if key == "hybrid":
            out["top"].append([[h.memory.id, round(h.score, 6)] for h in result.hits] + [result.method])
print(json.dumps(out))
"""


def extract(rev: str, into: Path) -> Path:
    """The baseline's package and SQL at `rev`, with this tree's models."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "subcog_store", "sql"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    (into / "models").symlink_to(ROOT / "models")
    return into


def child(tree: Path, db: Path, queries: list[str], warm: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    env.update(PYTHONPATH=str(tree), SUBCOG_MODEL_DIR=str(ROOT / "models"), SUBCOG_WORKER_ENABLED="false")
    args = json.dumps({"db": str(db), "queries": queries, "warm": warm, "domain": DOMAIN})
    proc = subprocess.run([sys.executable, "-c", CHILD, args], cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{tree}: {proc.stderr[-800:]}")
    return json.loads(proc.stdout)


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the baseline commit (e.g. main before this change)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=60, help="queries per round")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    corpus = corpus_mod.build(max(100_000, args.size))
    vectors, _, _ = corpus_mod.embeddings(corpus, args.size, log=log)
    db = working_copy(build(args.size, corpus.sentences, vectors), args.size)
    tmp = Path(tempfile.mkdtemp(prefix="subcog-search-speed-"))
    variants = {"base": (extract(args.base, tmp / "base"), False), "one-shot": (ROOT, False), "warm": (ROOT, True)}
    names = list(variants)
    figures = {name: {"hybrid": [], "cached": [], "text": []} for name in names}
    per_round: dict[str, list[float]] = {name: [] for name in names}
    loads, differ, compared = [], 0, 0
    try:
        for r in range(args.rounds):
            queries = corpus.queries[r * args.queries:(r + 1) * args.queries]
            order = names[r % len(names):] + names[:r % len(names)]
            loads.append(os.getloadavg()[0])
            tops = {}
            for name in order:
                tree, warm = variants[name]
                out = child(tree, db, queries, warm)
                for key in figures[name]:
                    figures[name][key] += out[key]
                per_round[name].append(p50(out["hybrid"]))
                tops[name] = out["top"]
            for i in range(len(queries)):
                compared += 1
                differ += any(tops[name][i] != tops["base"][i] for name in names[1:])
            log(f"round {r + 1}/{args.rounds} ({' '.join(order)}), load {loads[-1]:.2f}: hybrid p50 "
                + ", ".join(f"{name} {per_round[name][-1]:.1f}" for name in names))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = figures["base"]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.size:,} memories, {args.rounds} rounds of "
          f"{args.queries} queries, load average (1 min) per round {' '.join(f'{x:.1f}' for x in loads)}, "
          f"end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; baseline {args.base}.\n")
    print("| variant | hybrid p50 / p95 ms | x base | per-round p50 | query vector cached p50 | text side p50 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        f = figures[name]
        p95 = sorted(f["hybrid"])[int(0.95 * (len(f["hybrid"]) - 1))]
        print(f"| {name} | {p50(f['hybrid']):.1f} / {p95:.1f} | {p50(f['hybrid']) / p50(base['hybrid']):.2f} | "
              f"{' '.join(f'{x:.1f}' for x in per_round[name])} | {p50(f['cached']):.1f} | {p50(f['text']):.1f} |")
    print(f"\nTop 10 (ids and scores to 6 decimals, and the method) equal to the baseline's on "
          f"{compared - differ} of {compared} queries.")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
