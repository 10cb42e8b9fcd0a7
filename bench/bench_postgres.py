"""PostgreSQL beside SQLite: the semantic tier's KNN at 10k and 100k memories in one scope, in the same run.

For each size, the same corpus rows and vectors (bench/corpus.py, embeddings cached in bench/out/) go into a
SQLite store (bench_store.build_store: the store's own SQL) and into a PostgreSQL store (the pgserver wheel's
server on a Unix socket, or --url; COPY, then the HNSW index of the check before migration PG 010, built once
for the baseline, its build time reported). Then the same query vectors, the variants in a rotating order query
by query so all see the same machine load:

- SQLite `db/knn.nearest` (sign-bit candidates re-scored exactly); PostgreSQL `postgres/knn.nearest` (the exact
  scan of the scope: complete); the check before it (`hnsw_nearest` below: HNSW candidates, the exact scan when
  they cannot show completeness);
- p50 / p95 latency, CPU per query (this process's, plus the PostgreSQL backend's from /proc when the server
  is local: load stretches wall time more than CPU time), which path answered, and the near neighbours found:
  of the true top 5 at or above 0.85 (numpy brute force), how many each returned (the bar: all of them).

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


HNSW_INDEX = (f"create index memory_vectors_hnsw_{NAMESPACE} on memory_vectors using hnsw (embedding vector_ip_ops) "
              f"with (m = 16, ef_construction = 64) where namespace = '{NAMESPACE}'")   # as migration 003 had it
HNSW_CANDIDATES = 100   # hnsw.ef_search of the check before migration 010


def build_postgres(url: str, sentences: list[str], vectors: np.ndarray, hnsw: bool = True) -> dict:
    """Memories and vectors by COPY, then, for the baseline, the namespace's HNSW index built once."""
    con = connect_pg(url)
    register(con)
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
    if hnsw:
        con.execute(HNSW_INDEX)
    built = time.perf_counter() - t0
    for table in ("memories", "memory_vectors"):
        con.execute(f"vacuum analyze {table}")
    con.close()
    return {"load_s": round(loaded, 1), "index_build_s": round(built, 1)}


# The HNSW candidates the check read before migration PG 010 (on the index this bench builds): the nearest vectors
# of a namespace by pgvector's graph, every domain's, nearest first (the product no longer runs it).
HNSW_CANDIDATES_SQL = """
select n.memory_seq, n.domain, n.similarity, m.id, case when n.domain = %(domain)s then m.content end
from (
  select memory_seq, domain, -(embedding <#> %(embedding)s) as similarity
  from memory_vectors
  where namespace = %(namespace)s
  order by embedding <#> %(embedding)s
  limit %(candidates)s
) n
join memories m on m.seq = n.memory_seq
order by n.similarity desc, n.memory_seq;
"""


def hnsw_nearest(con, vector: np.ndarray, namespace: str, domain: str, k: int, floor: float
                 ) -> tuple[list[pg_knn.Hit], str]:
    """The PostgreSQL check before migration 010: the namespace's HNSW candidates, taken as the answer when the
    farthest is below max(floor, k-th of the scope), else the exact scan (which an HNSW miss does not signal)."""
    params = {"embedding": Vector(vector), "namespace": namespace, "domain": domain, "k": k,
              "candidates": HNSW_CANDIDATES}
    rows = con.execute(HNSW_CANDIDATES_SQL, params).fetchall()
    if len(rows) >= HNSW_CANDIDATES:
        scope = [pg_knn.Hit(r[3], r[4], float(r[2]), r[0]) for r in rows if r[1] == domain]
        threshold = max(floor, scope[k - 1].similarity if len(scope) >= k else floor)
        if float(rows[-1][2]) < threshold:
            return scope[:k], "hnsw"
    return pg_knn.nearest(con, vector, namespace, domain, k, floor)


def _backend_cpu(pid: int | None) -> float:
    """CPU seconds of a local PostgreSQL backend (0 when it is not on this machine)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


VARIANTS = ("sqlite", "postgresql", "postgresql hnsw")


def measure(n: int, sentences: list[str], vectors: np.ndarray, qvectors: np.ndarray, url: str, queries: int
            ) -> dict:
    matrix = np.ascontiguousarray(vectors[:n])
    lite_path = OUT / f"pg-bench-{n}.db"
    lite_build = build_store(lite_path, sentences[:n], matrix)
    pg_build = build_postgres(url, sentences[:n], matrix)
    lite = connect_sqlite(lite_path)
    pg = connect_pg(url)
    register(pg)
    pg.execute(f"set hnsw.ef_search = {HNSW_CANDIDATES}")
    backend = pg.info.backend_pid
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpu = {name: 0.0 for name in VARIANTS}
    paths: dict[str, dict[str, int]] = {name: {} for name in VARIANTS}
    found = {name: 0 for name in VARIANTS}
    wanted = 0
    runs = {
        "sqlite": lambda qv: sqlite_knn.nearest(lite, qv, NAMESPACE, DOMAIN, K, FLOOR),
        "postgresql": lambda qv: pg_knn.nearest(pg, qv, NAMESPACE, DOMAIN, K, FLOOR),
        "postgresql hnsw": lambda qv: hnsw_nearest(pg, qv, NAMESPACE, DOMAIN, K, FLOOR),
    }
    for j in range(min(10, len(qvectors))):   # warm all
        for run in runs.values():
            run(qvectors[j])
    count = min(queries, len(qvectors))
    for j in range(count):
        qv = qvectors[j]
        sims = matrix @ qv
        top = np.argpartition(-sims, K)[:K]
        top = top[np.argsort(-sims[top])]
        order = VARIANTS[j % len(VARIANTS):] + VARIANTS[:j % len(VARIANTS)]
        for name in order:
            c0, b0, t0 = time.process_time(), _backend_cpu(backend), time.perf_counter()
            hits, how = runs[name](qv)
            times[name].append((time.perf_counter() - t0) * 1000)
            cpu[name] += time.process_time() - c0 + _backend_cpu(backend) - b0
            paths[name][how] = paths[name].get(how, 0) + 1
            found[name] += near_neighbours_found([int(h.memory_id, 16) for h in hits], sims, top)[1]
        wanted += near_neighbours_found([], sims, top)[0]
    lite.close()
    pg.close()
    return {"n": n, "queries": count, "sqlite_build": lite_build, "pg_build": pg_build, "times": times,
            "cpu_ms": {name: 1000 * cpu[name] / count for name in VARIANTS}, "paths": paths, "near": wanted,
            "found": found, "load": os.getloadavg()}


def report(results: list[dict], info: dict) -> str:
    header = ["memories", "variant", "p50 / p95 ms", "p50 vs SQLite", "CPU ms / query", "near >= 0.85 found",
              "paths"]
    rows = []
    for r in results:
        t = r["times"]
        for name in VARIANTS:
            rows.append([f"{r['n']:,}", name, p50_95(t[name]), f"{np.median(t[name]) / np.median(t['sqlite']):.2f}x",
                         f"{r['cpu_ms'][name]:.1f}", f"{r['found'][name]} / {r['near']}",
                         ", ".join(f"{k} {v}" for k, v in sorted(r["paths"][name].items()))])
    notes = [f"{r['n']:,}: HNSW build {r['pg_build']['index_build_s']} s; load {r['load']}" for r in results]
    return f"machine: {json.dumps(info)}\n\n" + md_table(header, rows) + "\n" + "\n".join(notes)


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
