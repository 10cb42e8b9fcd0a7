"""The whole store on PostgreSQL beside SQLite, in the same run: check, capture and search latency at 10k (and
100k) memories in one scope, and 8 writer processes capturing overlapping texts at once.

Latency: the bench corpus (bench/corpus.py, real MiniLM vectors cached in bench/out/) is loaded into a SQLite
store (bench_store.build_store) and a PostgreSQL store (bench_postgres.build_postgres: COPY, no HNSW).
Then, alternating SQLite and PostgreSQL call by call so both see the same load, through `Store` (the data layer,
the three tiers, the decision log): `check_duplicate` of a held-out query sentence (its check row written),
`capture` of another (stored: memory, vector, recent row, check row, decision), and `search` of a query over the
domain. Vectors come from the cache (a lookup embedder): the model's time is the same on both and not measured.

Writers: N processes for D seconds capture texts drawn at random: a quarter each a group's base sentence, its
exact repeat (case and spacing changed), its rewording (its nearest corpus neighbour that a serial capture into
an empty store skips as a semantic duplicate), and a new corpus sentence (each writer its own). Then: lost (a capture answered but its text held by no
active memory), stored twice (an exact repeat or a rewording active beside its base), errors (any exception), and
captures per second; SQLite first, then PostgreSQL, with the same pool and seed. `--scopes K` spreads the texts
over K domains (teammates' projects; a group's texts in one), and `postgresql-store-lock` is PostgreSQL with
every writer taking the store's one lock (the baseline of the per-scope locks), `--rounds` alternating them.

`--cache`: the scope's sign bits in memory where the warm worker and the MCP server keep them (db/bitcache.py,
its thresholds: SQLite from 50k, PostgreSQL from 5k), and PostgreSQL's exact scan beside them ("postgresql-scan":
a hook without the worker; checks only, on the same database), the three alternating call by call.

    nice -n 10 python -m bench.bench_pg_store [--sizes 10000] [--calls 200] [--writers 8] [--seconds 120] [--cache]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import numpy as np  # noqa: E402

from bench import corpus as corpus_mod  # noqa: E402
from bench.bench_postgres import build_postgres  # noqa: E402
from bench.bench_store import DOMAIN, K, NAMESPACE, build_store, machine_info, md_table, near_neighbours_found, \
    p50_95  # noqa: E402
from subcog_store.text.normalize import content_hash  # noqa: E402

OUT = corpus_mod.OUT_DIR
ENV = {"SUBCOG_WORKER_ENABLED": "false"}


class LookupEmbedder:
    """The real model's vectors of known texts (by normalized content hash), computed before the run."""

    dimensions = 384
    loaded = True

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors

    def load(self) -> None:
        pass

    def embed_batch(self, texts):
        return np.stack([self.vectors[content_hash(t)] for t in texts]).astype(np.float32)


def _store(target, vectors):
    from subcog_store.store import Store

    return Store(target, embedder=LookupEmbedder(vectors), environ=dict(ENV), fetch_model=False)


def extended(vectors: np.ndarray, n: int, seed: int = 11) -> np.ndarray:
    """`n` unit vectors: the real ones, then each real one again with noise (cosine ~0.8 to its source), so a
    100k scope has the corpus's clusters without embedding 100k sentences (latency only: which memory a vector
    belongs to does not matter to how long a check takes)."""
    if n <= len(vectors):
        return vectors
    rng = np.random.default_rng(seed)
    extra = vectors[np.arange(n - len(vectors)) % len(vectors)]
    extra = extra + rng.standard_normal(extra.shape).astype(np.float32) * 0.038
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.vstack([vectors, extra.astype(np.float32)])


# -- latency ---------------------------------------------------------------------------------------------------
OPS = ("check", "capture", "search")
# where a check's time goes: its three tiers (CheckResult.tier_ms), and the rest (the snapshot's newest row, the
# check's log row written in its own transaction, Python)
PARTS = ("check: exact", "check: semantic", "check: recent", "check: the rest")


def latency(n: int, corpus, vectors: np.ndarray, qvectors: np.ndarray, server, calls: int, offset: int = 0,
            cache: bool = False) -> dict:
    """Check, capture and search latency; the checks of queries offset.. (the near neighbours at or above 0.85 of
    each among the corpus rows, by numpy: how many the check's neighbours hold, per backend). `cache`: the scope's
    sign bits in memory where the warm worker and the MCP server keep them (db/bitcache.py, its thresholds), and
    PostgreSQL once more without them ("postgresql-scan": a hook run without the worker), the three alternating."""
    from subcog_store.db import bitcache

    matrix = np.ascontiguousarray(vectors[:n])
    lite_path = OUT / f"pg-store-bench-{n}.db"
    build_store(lite_path, corpus.sentences[:n], matrix)
    url = server.database("bench", migrated=True)
    pg_build = build_postgres(url, corpus.sentences[:n], matrix, hnsw=False)
    known = {content_hash(t): v for t, v in zip(corpus.queries, qvectors)}
    stores = {"sqlite": _store(lite_path, known), "postgresql": _store(url, known)}
    if cache:
        stores["postgresql-scan"] = _store(url, known)
        bitcache.enable()
        for backend in ("sqlite", "postgresql"):
            started = time.perf_counter()
            if bitcache.warm(stores[backend].con, NAMESPACE, DOMAIN):
                print(f"{backend}: the scope's sign bits loaded in {time.perf_counter() - started:.1f} s", flush=True)
    half = len(corpus.queries) // 2
    times: dict[str, dict[str, list[float]]] = {op: {b: [] for b in stores} for op in OPS + PARTS}
    knn: dict[str, dict[str, int]] = {b: {} for b in stores}
    near = {b: [0, 0] for b in stores}    # wanted, found
    try:
        for j in range(offset, offset + min(calls, half - offset)):
            sims = matrix @ qvectors[j]
            top = np.argsort(-sims)[:K]
            for backend, store in stores.items():
                bitcache.enable(cache and backend != "postgresql-scan")
                t0 = time.perf_counter()
                result = store.check_duplicate(corpus.queries[j], NAMESPACE, DOMAIN)
                times["check"][backend].append((time.perf_counter() - t0) * 1000)
                for tier in ("exact", "semantic", "recent"):
                    times[f"check: {tier}"][backend].append(result.tier_ms.get(tier, 0.0))
                times["check: the rest"][backend].append(times["check"][backend][-1] - sum(result.tier_ms.values()))
                knn[backend][str(result.knn)] = knn[backend].get(str(result.knn), 0) + 1
                got = [i for i in (int(nb.memory_id, 16) for nb in result.neighbours) if i < n]
                wanted, found = near_neighbours_found(got, sims, top)
                near[backend][0] += wanted
                near[backend][1] += found
                if backend == "postgresql-scan":   # the same database as "postgresql": its captures are repeats
                    continue
                t0 = time.perf_counter()
                store.capture(corpus.queries[half + j], NAMESPACE, DOMAIN)
                times["capture"][backend].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                store.search(corpus.queries[j], domain=DOMAIN, limit=5)
                times["search"][backend].append((time.perf_counter() - t0) * 1000)
    finally:
        bitcache.enable(False)
        bitcache.clear()
        for store in stores.values():
            store.close()
        server.drop(url)
    return {"n": n, "calls": len(times["check"]["sqlite"]), "times": times, "knn": knn, "pg_build": pg_build,
            "near": near, "offset": offset}


# -- writers ---------------------------------------------------------------------------------------------------
def pool(corpus, vectors: np.ndarray, groups: int, seed: int = 7) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Groups of (base, exact repeat, rewording): the rewording is the base's nearest corpus neighbour that a
    serial capture skips as a semantic duplicate of it (checked in a throwaway SQLite store)."""
    import tempfile

    rng = random.Random(seed)
    n = len(vectors)
    out, known, used = [], {}, set()
    nearest, best = np.zeros(n, dtype=int), np.zeros(n)
    for start in range(0, n, 1000):          # each sentence's nearest other one, in blocks
        sims = vectors[start:start + 1000] @ vectors.T
        sims[np.arange(len(sims)), np.arange(start, start + len(sims))] = -1
        nearest[start:start + 1000], best[start:start + 1000] = sims.argmax(1), sims.max(1)
    candidates = [i for i in range(n) if best[i] >= 0.9]
    rng.shuffle(candidates)
    with tempfile.TemporaryDirectory() as tmp:
        probe = _store(Path(tmp) / "probe.db", known)   # one scope (domain) per pair: nothing else is near
        for i in candidates[:2000]:
            if len(out) >= groups:
                break
            j = int(nearest[i])
            if i in used or j in used:
                continue
            base, other = corpus.sentences[i], corpus.sentences[j]
            vecs = {content_hash(base): vectors[i], content_hash(other): vectors[j]}
            known.update(vecs)
            probe.capture(base, NAMESPACE, f"p{i}")
            if probe.capture(other, NAMESPACE, f"p{i}").decision != "semantic_skip":
                continue
            used.update((i, j))
            repeat = "  " + base.upper() + "  "
            out.append({"base": base, "repeat": repeat, "reworded": other})
        probe.close()
    for i in range(n):                         # new texts: every other corpus sentence
        if i not in used:
            known[content_hash(corpus.sentences[i])] = vectors[i]
    out.append({"new": [corpus.sentences[i] for i in range(n) if i not in used]})
    return out, known


def scope_of(text: str, scopes: int) -> str:
    """The domain a group's texts are captured in when the writers spread over `scopes` scopes (teammates' projects):
    a group's base, repeat and rewording always in the same one."""
    return DOMAIN if scopes <= 1 else f"{DOMAIN}-{int(content_hash(text)[:8], 16) % scopes}"


def _store_wide_lock() -> None:
    """The baseline: every writer takes the store's one lock, as before the per-scope locks (this process only)."""
    from subcog_store.postgres import adapter

    scoped = adapter.write_transaction
    adapter.write_transaction = lambda con, scopes=(): scoped(con)


def _writer(target: str, pool_path: str, seed: int, seconds: float, go: str, out_path: str, scopes: int = 1,
            store_lock: bool = False) -> None:
    import pickle

    if store_lock:
        _store_wide_lock()
    with open(pool_path, "rb") as f:
        groups, known = pickle.load(f)
    rng = random.Random(seed)
    *groups, fresh = groups
    mine = iter(fresh["new"][seed % 1000::8])   # this writer's new texts (writers are seeded 1000..1007)
    store = _store(target, known)
    results, errors = [], []
    while not os.path.exists(go):
        time.sleep(0.01)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        group = rng.choice(groups)
        kind = rng.choice(("base", "repeat", "reworded", "new"))
        text = next(mine, group["base"]) if kind == "new" else group[kind]
        domain = scope_of(group["base"] if kind != "new" else text, scopes)
        try:
            r = store.capture(text, NAMESPACE, domain)
            results.append((group["base"], kind, r.decision, r.memory_id))
        except Exception as e:  # noqa: BLE001 - every error is counted
            errors.append(f"{type(e).__name__}: {e}"[:200])
    store.close()
    with open(out_path, "w") as f:
        json.dump({"results": results, "errors": errors}, f)


def writers(target: str, groups: list[dict], known: dict, count: int, seconds: float, work: Path, scopes: int = 1,
            store_lock: bool = False) -> dict:
    import pickle

    pool_path = work / "pool.pkl"
    with open(pool_path, "wb") as f:
        pickle.dump((groups, known), f)
    go = work / f"go-{time.monotonic_ns()}"
    ctx = mp.get_context("spawn")
    outs = [work / f"w{i}-{time.monotonic_ns()}.json" for i in range(count)]
    procs = [ctx.Process(target=_writer, args=(target, str(pool_path), 1000 + i, seconds, str(go), str(outs[i]),
                                               scopes, store_lock)) for i in range(count)]
    for p in procs:
        p.start()
    time.sleep(5)          # every writer opened its store (the model is a lookup: nothing to load)
    go.touch()
    t0 = time.perf_counter()
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - t0
    results, errors = [], []
    for out in outs:
        data = json.loads(out.read_text()) if out.exists() else {"results": [], "errors": ["writer died"]}
        results += data["results"]
        errors += data["errors"]
    return {"results": results, "errors": errors, "seconds": elapsed} | audit(target, groups, results, known, scopes)


def audit(target: str, groups: list[dict], results: list, known: dict, scopes: int = 1) -> dict:
    from subcog_store.db import memories

    store = _store(target, known)
    try:
        active = {m.content_hash: m for m in memories.listed(store.con, NAMESPACE, None, "active", 10 ** 7)}
        active_ids = {m.id for m in active.values()}
    finally:
        store.close()
    lost = sum(1 for base, kind, decision, mid in results if mid not in active_ids)
    twice = 0
    for g in groups[:-1]:
        if content_hash(g["reworded"]) in active and content_hash(g["base"]) in active:
            twice += 1
    return {"lost": lost, "stored_twice": twice, "active": len(active)}


def report(lat: list[dict], wr: dict, info: dict, args) -> str:
    parts = [f"machine: {json.dumps(info)}", ""]
    if lat:
        others = [b for b in lat[0]["times"]["check"] if b != "sqlite"]
        header = ["memories", "op", "SQLite p50 / p95 ms"] + [f"{b} p50 / p95 ms, ratio p50" for b in others]
        rows = []
        for r in lat:
            for op in [op for op in OPS + PARTS if op in r["times"]]:
                t = r["times"][op]
                rows.append([f"{r['n']:,}", op, p50_95(t["sqlite"])] + [
                    p50_95(t[b]) + (f", {np.median(t[b]) / np.median(t['sqlite']):.1f}x"
                                    if np.median(t["sqlite"]) > 0 else "") if t[b] else "-" for b in others])
        parts += [md_table(header, rows), ""]
        parts += [f"knn paths at {r['n']:,}: {json.dumps(r['knn'])}; PG HNSW build {r['pg_build']['index_build_s']} s; "
                  f"near neighbours >= 0.85 found (of the true top {K}, found/wanted): "
                  + ", ".join(f"{b} {f}/{w}" for b, (w, f) in r.get("near", {}).items()) for r in lat]
    if wr:
        header = ["backend", "writers x s", "scopes", "captures", "per second", "lost", "stored twice", "errors",
                  "active at the end"]
        rows = [[b, f"{args.writers} x {args.seconds:g}", args.scopes, len(w["results"]),
                 f"{len(w['results']) / w['seconds']:.1f}",
                 w["lost"], w["stored_twice"], len(w["errors"]), w["active"]] for b, w in wr.items()]
        parts += ["", md_table(header, rows)]
        rate = {}
        for b, w in wr.items():
            rate.setdefault(b.split(" #")[0], []).append(len(w["results"]) / w["seconds"])
        if "postgresql" in rate and "postgresql-store-lock" in rate:
            parts.append(f"per-scope locks / the store's one lock: captures per second "
                         f"{np.mean(rate['postgresql']) / np.mean(rate['postgresql-store-lock']):.2f}x "
                         f"(means of {len(rate['postgresql'])} alternating rounds)")
        for b, w in wr.items():
            if w["errors"]:
                parts.append(f"{b} errors (first): {w['errors'][:3]}")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000", help="memories in the scope (0: skip the latency part)")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--offset", type=int, default=0, help="the first query the checks use (queries before it "
                        "left out: e.g. those that chose a constant)")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120.0, help="how long the writers run (0: skip them)")
    parser.add_argument("--groups", type=int, default=60)
    parser.add_argument("--scopes", type=int, default=1, help="domains the writers' texts are spread over")
    parser.add_argument("--backends", default="sqlite,postgresql,postgresql-store-lock",
                        help="writer runs, in order, each round: postgresql-store-lock is the baseline of the "
                             "per-scope locks (every writer takes the store's one lock)")
    parser.add_argument("--rounds", type=int, default=1, help="writer runs of each backend, alternating")
    parser.add_argument("--cache", action="store_true", help="sign bits in memory, as the worker keeps them "
                        "(and PostgreSQL's exact scan beside them)")
    parser.add_argument("--embedded", type=int, default=10_000,
                        help="corpus sentences with real vectors; beyond them, synthetic ones (see extended)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if int(s)]
    corpus = corpus_mod.build(max(sizes + [10_000]))
    embedded = min(max(sizes + [10_000]), args.embedded)
    vectors, qvectors, _ = corpus_mod.embeddings(corpus, embedded)
    vectors = extended(vectors, max(sizes + [10_000]))
    from subcog_store.postgres.local_server import start

    server = start()
    lat, wr = [], {}
    try:
        for n in sizes:
            lat.append(latency(n, corpus, vectors, qvectors, server, args.calls, args.offset,
                               args.cache))
            print(report(lat[-1:], {}, {}, args), flush=True)
        if args.seconds:
            import tempfile

            groups, known = pool(corpus, vectors[:10_000], args.groups)
            print(f"writer pool: {len(groups) - 1} groups of base, repeat and rewording, and new texts", flush=True)
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                for round_ in range(args.rounds):
                    for backend in args.backends.split(","):
                        target = (str(work / f"writers{round_}.db") if backend == "sqlite" else
                                  server.database("w", migrated=True))
                        name = backend if args.rounds == 1 else f"{backend} #{round_ + 1}"
                        wr[name] = writers(target, groups, known, args.writers, args.seconds, work, args.scopes,
                                           store_lock=backend == "postgresql-store-lock")
                        print(report([], {name: wr[name]}, {}, args), flush=True)
    finally:
        server.stop()
    text = report(lat, wr, machine_info() | {"load": os.getloadavg()}, args)
    print(text)
    (OUT / "bench_pg_store.json").write_text(json.dumps({"latency": lat, "writers": {
        b: {k: v for k, v in w.items() if k != "results"} | {"captures": len(w["results"])} for b, w in wr.items()}},
        default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
