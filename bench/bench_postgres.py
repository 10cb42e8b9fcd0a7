"""PostgreSQL beside SQLite: the semantic tier's KNN at 10k and 100k memories in one scope, in the same run.

For each size, the same corpus rows and vectors (bench/corpus.py, embeddings cached in bench/out/) go into a
SQLite store (bench_store.build_store: the store's own SQL) and into a PostgreSQL store (the pgserver wheel's
server on a Unix socket, or --url; COPY, then the HNSW index built once, its build time reported). Then the
same query vectors, alternating SQLite and PostgreSQL query by query so both see the same machine load:

- SQLite `db/knn.nearest` (sign-bit candidates re-scored exactly), PostgreSQL `postgres/knn.nearest` (HNSW
  candidates, exact scan of the scope when they cannot show completeness) and its exact scan alone;
- p50 / p95 latency, which path answered, and the near neighbours found: of the true top 5 at or above 0.85
  (numpy brute force), how many each returned (the bar: all of them).

    python -m bench.bench_postgres [--sizes 10000,100000] [--queries 200] [--url postgresql://...]
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import numpy as np  # noqa: E402

from bench import corpus as corpus_mod  # noqa: E402
from bench.bench_store import DOMAIN, FLOOR, K, NAMESPACE, build_store, machine_info, md_table, memory_id, \
    near_neighbours_found, p50_95  # noqa: E402
from subcog_store.db import knn as sqlite_knn  # noqa: E402
from subcog_store.db.connection import connect as connect_sqlite  # noqa: E402
from subcog_store.postgres import knn as pg_knn  # noqa: E402
from subcog_store.postgres.connection import connect as connect_pg  # noqa: E402
from subcog_store.postgres.vectors import Vector, register  # noqa: E402

OUT = corpus_mod.OUT_DIR


def build_postgres(url: str, sentences: list[str], vectors: np.ndarray) -> dict:
    """Memories and vectors by COPY with the HNSW indexes dropped, then the namespace's index built once."""
    con = connect_pg(url)
    register(con)
    index = f"memory_vectors_hnsw_{NAMESPACE}"
    definition = con.execute("select pg_get_indexdef(%s::regclass)", (index,)).fetchone()[0]
    con.execute(f"drop index {index}")
    t0 = time.perf_counter()
    with con.cursor() as cur:
        with cur.copy("copy memories (seq, id, domain, namespace, content, created_at, updated_at, source) "
                      "from stdin") as copy:
            for i, text in enumerate(sentences):
                copy.write_row((i + 1, memory_id(i), DOMAIN, NAMESPACE, text, "", "", "bench"))
        with cur.copy("copy memory_vectors (memory_seq, namespace, domain, embedding) from stdin "
                      "with (format binary)") as copy:
            copy.set_types(["int8", "text", "text", "vector"])
            for i in range(len(sentences)):
                copy.write_row((i + 1, NAMESPACE, DOMAIN, Vector(vectors[i])))
        cur.execute("select setval(pg_get_serial_sequence('memories', 'seq'), %s)", (len(sentences),))
    loaded = time.perf_counter() - t0
    t0 = time.perf_counter()
    con.execute("set maintenance_work_mem = '1GB'")
    con.execute(definition)
    built = time.perf_counter() - t0
    con.execute("vacuum analyze memories")
    con.execute("vacuum analyze memory_vectors")
    con.close()
    return {"load_s": round(loaded, 1), "index_build_s": round(built, 1)}


def measure(n: int, sentences: list[str], vectors: np.ndarray, qvectors: np.ndarray, url: str, queries: int
            ) -> dict:
    matrix = np.ascontiguousarray(vectors[:n])
    lite_path = OUT / f"pg-bench-{n}.db"
    lite_build = build_store(lite_path, sentences[:n], matrix)
    pg_build = build_postgres(url, sentences[:n], matrix)
    lite = connect_sqlite(lite_path)
    pg = connect_pg(url)
    register(pg)
    times = {"sqlite": [], "postgresql": [], "postgresql exact": []}
    paths: dict[str, dict[str, int]] = {"sqlite": {}, "postgresql": {}}
    found = {"sqlite": 0, "postgresql": 0, "postgresql exact": 0}
    wanted = 0
    params = {"namespace": NAMESPACE, "domain": DOMAIN, "k": K}
    for j in range(min(10, len(qvectors))):   # warm both
        sqlite_knn.nearest(lite, qvectors[j], NAMESPACE, DOMAIN, K, FLOOR)
        pg_knn.nearest(pg, qvectors[j], NAMESPACE, DOMAIN, K, FLOOR)
    for j in range(min(queries, len(qvectors))):
        qv = qvectors[j]
        sims = matrix @ qv
        top = np.argpartition(-sims, K)[:K]
        top = top[np.argsort(-sims[top])]
        answers = {}
        for name, run in (("sqlite", lambda: sqlite_knn.nearest(lite, qv, NAMESPACE, DOMAIN, K, FLOOR)),
                          ("postgresql", lambda: pg_knn.nearest(pg, qv, NAMESPACE, DOMAIN, K, FLOOR)),
                          ("postgresql exact", lambda: (pg_knn.exact(pg, params | {"embedding": Vector(qv)}),
                                                        "exact scan"))):
            t0 = time.perf_counter()
            hits, how = run()
            times[name].append((time.perf_counter() - t0) * 1000)
            if name in paths:
                paths[name][how] = paths[name].get(how, 0) + 1
            answers[name] = [int(h.memory_id, 16) for h in hits]
        for name, got in answers.items():
            want, have = near_neighbours_found(got, sims, top)
            found[name] += have
        wanted += near_neighbours_found([], sims, top)[0]
    lite.close()
    pg.close()
    return {"n": n, "queries": len(times["sqlite"]), "sqlite_build": lite_build, "pg_build": pg_build,
            "times": times, "paths": paths, "near": wanted, "found": found}


def report(results: list[dict], info: dict) -> str:
    header = ["memories", "SQLite KNN p50 / p95 ms", "PostgreSQL KNN p50 / p95 ms", "ratio p50",
              "PostgreSQL exact scan p50 / p95", "near neighbours >= 0.85 found (SQLite / PG / PG exact)",
              "PG paths", "PG HNSW build s"]
    rows = []
    for r in results:
        t = r["times"]
        ratio = np.median(t["postgresql"]) / np.median(t["sqlite"])
        found = r["found"]
        rows.append([f"{r['n']:,}", p50_95(t["sqlite"]), p50_95(t["postgresql"]), f"{ratio:.1f}x",
                     p50_95(t["postgresql exact"]),
                     f"{found['sqlite']} / {found['postgresql']} / {found['postgresql exact']} of {r['near']}",
                     ", ".join(f"{k} {v}" for k, v in sorted(r["paths"]["postgresql"].items())),
                     r["pg_build"]["index_build_s"]])
    return f"machine: {json.dumps(info)}\n\n" + md_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--url", help="a PostgreSQL superuser URL (default: start the pgserver wheel's server)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    corpus = corpus_mod.build(max(sizes))
    vectors, qvectors, _ = corpus_mod.embeddings(corpus, max(sizes))
    from subcog_store.postgres.local_server import LocalServer, start

    server = LocalServer(args.url) if args.url else start()
    results = []
    try:
        for n in sizes:
            url = server.database("bench")
            results.append(measure(n, corpus.sentences, vectors, qvectors, url, args.queries))
            server.drop(url)
            print(report(results[-1:], {}), flush=True)
    finally:
        server.stop()
    text = report(results, machine_info())
    print(text)
    Path(OUT / "bench_postgres.json").write_text(json.dumps(results, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
