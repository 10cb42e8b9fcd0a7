"""How complete and how fast the PostgreSQL check's KNN before migration 010 (HNSW candidates, exact fallback:
bench_postgres.hnsw_nearest) is per `hnsw.ef_search`, at 100,000 real vectors; the record of why it was replaced.

The bench corpus's first N sentences (real MiniLM vectors, cached: bench/corpus.py) go into one scope of a
PostgreSQL store (bench_postgres.build_postgres: COPY, then the HNSW index built once). For each query vector,
the ef_search values alternate query by query (the same load for each): `hnsw_nearest` with that many
candidates, its latency, its path (HNSW or exact scan), and the near neighbours found (the true top K at or
above 0.85 by numpy, tie-tolerant: bench_store.near_neighbours_found). Queries 0..split-1 choose (the smallest
value that finds them all), split..2*split-1 report.

    nice -n 10 python -m bench.bench_pg_ef [--size 100000] [--split 150] [--efs 40,100,200,400]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from bench import corpus as corpus_mod
from bench import bench_postgres
from bench.bench_postgres import build_postgres, hnsw_nearest
from bench.bench_store import DOMAIN, FLOOR, K, NAMESPACE, md_table, near_neighbours_found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--split", type=int, default=150)
    parser.add_argument("--efs", default="40,100,200,400")
    args = parser.parse_args(argv)
    from subcog_store.postgres.connection import connect
    from subcog_store.postgres.local_server import start
    from subcog_store.postgres.vectors import register

    corpus = corpus_mod.build(args.size)
    vectors, qvectors, _ = corpus_mod.embeddings(corpus, args.size)
    matrix = np.ascontiguousarray(vectors[:args.size])
    efs = [int(e) for e in args.efs.split(",")]
    server = start()
    try:
        url = server.database("ef", migrated=True)
        print("build", build_postgres(url, corpus.sentences[:args.size], matrix), flush=True)
        con = connect(url)
        register(con)
        res = {(ef, part): {"wanted": 0, "found": 0, "ms": [], "paths": {}} for ef in efs for part in (0, 1)}
        for j in range(2 * args.split):
            sims = matrix @ qvectors[j]
            top = np.argsort(-sims)[:K]
            for ef in efs:
                bench_postgres.HNSW_CANDIDATES = ef
                con.execute(f"set hnsw.ef_search = {ef}")
                t0 = time.perf_counter()
                hits, how = hnsw_nearest(con, qvectors[j], NAMESPACE, DOMAIN, K, FLOOR)
                r = res[(ef, j // args.split)]
                r["ms"].append((time.perf_counter() - t0) * 1000)
                wanted, found = near_neighbours_found([int(h.memory_id, 16) for h in hits], sims, top)
                r["wanted"] += wanted
                r["found"] += found
                r["paths"][how] = r["paths"].get(how, 0) + 1
        con.close()
    finally:
        server.stop()
    rows = [[ef, f"{res[(ef, 0)]['found']} / {res[(ef, 0)]['wanted']}", f"{res[(ef, 1)]['found']} / "
             f"{res[(ef, 1)]['wanted']}", "%.1f / %.1f" % (np.percentile(res[(ef, 1)]["ms"], 50),
                                                          np.percentile(res[(ef, 1)]["ms"], 95)),
             res[(ef, 1)]["paths"]] for ef in efs]
    print(f"load {os.getloadavg()}")
    print(md_table(["ef_search", f"found, queries 0-{args.split - 1}", f"found, queries {args.split}-"
                    f"{2 * args.split - 1}", "KNN p50 / p95 ms (held out)", "paths (held out)"], rows))
    chosen = [ef for ef in efs if res[(ef, 0)]["found"] == res[(ef, 0)]["wanted"]]
    print(f"chosen (the smallest complete on the first queries): {chosen[0] if chosen else 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
