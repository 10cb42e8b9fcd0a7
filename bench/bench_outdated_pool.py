"""The changed-facts detector's candidates (dedup/outdated.py): the SIGN_POOL nearest by sign bits re-scored,
beside the exact float scan of the domain it replaced, in the same run.

    python -m bench.bench_outdated_pool [--sizes 10000,30000] [--queries 200] [--pools 32,48,64,96] [--labelled]

1. Cost and recall on bench/corpus.py's real vectors (its embedding cache, SUBCOG_BENCH_EMBED_CACHE): the first N
   vectors in vec0 tables shaped as the store's (memory_vectors, memory_bits: eight namespaces, one domain), the
   queries drawn from the rest of the 100,000; CPU ms per query of the exact scan (the query main ran before) and
   of each pool size, and the share of the exact ten nearest at cosine >= FLOOR the pool finds.
2. `--labelled` (held out: no constant was chosen on it): for each labelled update of bench/recall's two sets,
   embedded by the shipped model, whether its older memory is among the ten candidates of its project plus 0,
   10,000 or 100,000 corpus memories, by the exact scan and by the shipped pool (numpy sign bits, as the SQL).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import apsw
import numpy as np
import sqlite_vec

from bench import corpus as corpus_mod
from subcog_store.dedup.outdated import CANDIDATES, FLOOR, SIGN_POOL

TABLES = """
create virtual table mv using vec0(memory_seq integer primary key, namespace text partition key, domain text,
  embedding float[384] distance_metric=l2, chunk_size=256);
create virtual table mb using vec0(memory_seq integer primary key, namespace text partition key, domain text,
  bits bit[384], chunk_size=256);
"""
EXACT = """select memory_seq, 1.0 - distance * distance / 2.0 from mv
where embedding match ?1 and k = ?2 and domain = 'd' order by distance"""
POOL = """with cand as (select memory_seq from mb where bits match vec_quantize_binary(?1) and k = ?3 and domain = 'd')
select cand.memory_seq, 1.0 - d * d / 2.0 from (select cand.memory_seq, vec_distance_l2(v.embedding, ?1) d
  from cand join mv v on v.memory_seq = cand.memory_seq) cand order by d limit ?2"""


def corpus_vectors() -> np.ndarray:
    corpus = corpus_mod.build(corpus_mod.FILLER_CORPUS, n_queries=10, n_fresh=10)
    vectors, _ = corpus_mod.embed_cached(corpus.sentences[:corpus_mod.FILLER_CORPUS], log=lambda *a: None)
    return vectors.astype(np.float32)


def cost_and_recall(vectors: np.ndarray, n: int, n_queries: int, pools: list[int]) -> None:
    rng = np.random.default_rng(1)
    queries = vectors[rng.choice(np.arange(n, len(vectors)), n_queries, replace=False)]
    con = apsw.Connection(":memory:")
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.execute(TABLES)
    with con:
        for i, v in enumerate(vectors[:n]):
            row = (i + 1, f"ns{i % 8}", "d", v.tobytes())
            con.execute("insert into mv values (?, ?, ?, ?)", row)
            con.execute("insert into mb values (?, ?, ?, vec_quantize_binary(?))", row)

    def run(sql: str, *pool: int) -> tuple[list[set[int]], float]:
        started = time.process_time()
        found = [{s for s, c in con.execute(sql, (q.tobytes(), CANDIDATES, *pool)) if c >= FLOOR} for q in queries]
        return found, (time.process_time() - started) / len(queries) * 1000

    exact, exact_ms = run(EXACT)
    wanted = sum(len(e) for e in exact)
    print(f"\n{n:,} memories, {n_queries} queries: exact scan {exact_ms:.2f} CPU ms a query, {wanted} neighbours "
          f">= {FLOOR} among the ten nearest\n")
    print("| pool | CPU ms a query | / exact | exact ten nearest found |\n| --- | --- | --- | --- |")
    for pool in pools:
        got, ms = run(POOL, pool)
        found = sum(len(e & g) for e, g in zip(exact, got))
        print(f"| {pool}{' (shipped)' if pool == SIGN_POOL else ''} | {ms:.2f} | {ms / exact_ms:.2f} | "
              f"{found}/{wanted} = {found / max(1, wanted):.4f} |")


def labelled(vectors: np.ndarray) -> None:
    from bench.recall import sets
    from subcog_store.model.embedder import Embedder

    embedder = Embedder()
    embedder.load()
    filler_bits = np.packbits(vectors > 0, axis=1)
    print("\n| set | corpus memories added | labelled updates | older found: exact | older found: pool |"
          "\n| --- | --- | --- | --- | --- |")
    for name in ("dataset", "dataset2"):
        rows, _ = sets.load(Path(__file__).resolve().parent / "recall" / name)
        own = embedder.embed_batch([r.content for r in rows]).astype(np.float32)
        where = {r.key: i for i, r in enumerate(rows)}
        for n in (0, 10_000, 100_000):
            pairs = exact_hits = pool_hits = 0
            for project in sorted({r.project for r in rows}):
                idx = [i for i, r in enumerate(rows) if r.project == project]
                domain = np.concatenate([own[idx], vectors[:n]])
                bits = np.concatenate([np.packbits(own[idx] > 0, axis=1), filler_bits[:n]])
                for position, i in enumerate(idx):
                    if not rows[i].updates:
                        continue
                    sims = domain @ own[i]
                    sims[position] = -9.0   # not itself
                    hamming = np.unpackbits(bits ^ np.packbits(own[i] > 0), axis=1).sum(1)
                    hamming[position] = 10_000
                    pool = np.argsort(hamming, kind="stable")[:SIGN_POOL]
                    by_pool = [j for j in pool[np.argsort(-sims[pool])][:CANDIDATES] if sims[j] >= FLOOR]
                    by_exact = [j for j in np.argsort(-sims)[:CANDIDATES] if sims[j] >= FLOOR]
                    older = idx.index(where[rows[i].updates])
                    pairs += 1
                    exact_hits += older in by_exact
                    pool_hits += older in by_pool
            print(f"| {name} | {n:,} | {pairs} | {exact_hits} | {pool_hits} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pools", default="32,48,64,96")
    parser.add_argument("--labelled", action="store_true")
    args = parser.parse_args(argv)
    vectors = corpus_vectors()
    for n in (int(s) for s in args.sizes.split(",") if s):
        cost_and_recall(vectors, n, args.queries, [int(p) for p in args.pools.split(",")])
    if args.labelled:
        labelled(vectors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
