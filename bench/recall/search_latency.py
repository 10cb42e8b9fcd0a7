"""`Store.search` latency at N memories, this tree beside a baseline tree, in alternating rounds (same load).

Each round runs one subprocess per tree (this checkout, then `--baseline DIR`, a checkout of the shipped commit, as
in bench_sets.py): the tree builds its own store of the first N sentences of bench/corpus.py's 100,000 (its own
schema; `bench_recall_latency.build`, cached in bench/out/ by schema; vectors from the corpus cache,
SUBCOG_BENCH_EMBED_CACHE to share it), loads the model, warms up, then times `search(limit=10)` for the round's
held-out prompts, each used once: hybrid (embedding the prompt, as the prompt hook through the warm worker does)
and the text side alone. Both trees see the same prompts in the same round; rounds alternate which goes first.
Each search is timed in wall time and in the process's CPU time (every thread, the model's included): on a shared
machine the wall time mostly measures the load; the CPU time is stretched less, but still (shared caches and
cores: at load 5-15 it charged the prompt's embedding about 21 ms where a quiet machine took about 6 ms of wall
time), so compare either only beside the baseline of the same run.

    .venv/bin/python -m bench.recall.search_latency --baseline /tmp/h24base [--size 10000] [--runs 100] [--rounds 4]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from bench.recall.bench_sets import OUT, run_code

DOMAIN = "project"


def measure(n: int, start: int, runs: int) -> dict:
    """Run in the tree under test: search timings on its own n-memory store (see the module docstring)."""
    from bench import corpus
    from bench.recall.bench_recall_latency import build
    from subcog_store.store import Store

    c = corpus.build(size=max(n, corpus.FILLER_CORPUS))
    vectors, _ = corpus.embed_cached(c.sentences[:n], log=lambda s: None)
    built = build(n, c.sentences, vectors, DOMAIN)
    work = OUT / f"search-latency-{n}-{os.getpid()}.db"
    shutil.copyfile(built, work)
    try:
        store = Store(work, fetch_model=False)
        store.search("warm up the model and the page cache", domain=DOMAIN, limit=10)
        out: dict = {"hybrid": [], "text": [], "hybrid_cpu": [], "text_cpu": [], "methods": []}
        for text in c.queries[start:start + runs]:
            t0, c0 = time.perf_counter(), time.process_time()
            res = store.search(text, domain=DOMAIN, limit=10)
            out["hybrid"].append((time.perf_counter() - t0) * 1000)
            out["hybrid_cpu"].append((time.process_time() - c0) * 1000)
            out["methods"].append(res.method)
            t0, c0 = time.perf_counter(), time.process_time()
            store.search(text, domain=DOMAIN, limit=10, use_model=False)
            out["text"].append((time.perf_counter() - t0) * 1000)
            out["text_cpu"].append((time.process_time() - c0) * 1000)
        store.close()
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(work) + suffix).unlink(missing_ok=True)
    out["methods"] = sorted(set(out["methods"]))
    return out


def p50(values: list[float]) -> float:
    return float(np.percentile(values, 50)) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of the shipped commit")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=100, help="prompts per round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", type=Path, default=OUT / "search_latency-last.json")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    trees = {"this tree": None, "shipped": args.baseline}
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "size": args.size,
                 "load_start": os.getloadavg(), "rounds": []}
    for r in range(args.rounds):
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        row: dict = {"load": os.getloadavg()[0]}
        for label, tree in order:
            row[label] = run_code(tree, f"from bench.recall.search_latency import measure; "
                                        f"print(json.dumps(measure({args.size}, {r * args.runs}, {args.runs})))")
            print(f"round {r + 1} {label}: hybrid p50 {p50(row[label]['hybrid']):.1f} ms (CPU "
                  f"{p50(row[label].get('hybrid_cpu', [])):.1f}), text p50 {p50(row[label]['text']):.1f} ms (CPU "
                  f"{p50(row[label].get('text_cpu', [])):.1f}) {row[label]['methods']} (load {row['load']:.1f})",
                  flush=True)
        res["rounds"].append(row)
    for label in trees:
        for side in ("hybrid", "text", "hybrid_cpu", "text_cpu"):   # a baseline without CPU figures: nan
            res[f"{label} {side} p50"] = p50([x for row in res["rounds"] for x in row[label].get(side, [])])
    res["load_end"] = os.getloadavg()
    args.json.write_text(json.dumps(res))
    print(" | ".join(f"{k} {v:.1f} ms" for k, v in res.items() if k.endswith("p50")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
