"""The whole store on PostgreSQL beside SQLite, in the same run: check, capture and search latency at 10k (and
100k) memories in one scope, and 8 writer processes capturing overlapping texts at once.

Latency: the bench corpus (bench/corpus.py, real MiniLM vectors cached in bench/out/) is loaded into a SQLite
store (bench_store.build_store) and a PostgreSQL store (bench_postgres.build_postgres: COPY, no HNSW).
Then, alternating SQLite and PostgreSQL call by call so both see the same load, through `Store` (the data layer,
the three tiers, the decision log): `check_duplicate` of a held-out query sentence (its check row written),
`capture` of another (stored: memory, vector, recent row, check row, decision), and `search` of a query over the
domain. Vectors come from the cache (a lookup embedder): the model's time is the same on both and not measured.

Writers: N processes for D seconds capture texts drawn at random, a third each: a group's text repeated exactly
(the base sentence, or it in other case and spacing), its rewording (phrases swapped for others of the same
meaning, embedded by the real model, which a serial capture into an empty store skips as a semantic duplicate of
the base in either order), and a new corpus sentence (each writer its own). Then: lost (a capture answered but its text held by no
active memory), stored twice (an exact repeat or a rewording active beside its base), errors (any exception), and
captures per second; SQLite first, then PostgreSQL, with the same pool and seed. `--scopes K` spreads the texts
over K domains (teammates' projects; a group's texts in one), and `postgresql-store-lock` is PostgreSQL with
every writer taking the store's one lock (the baseline of the per-scope locks), `--rounds` alternating them.

Checks on PostgreSQL also run with the exact scan of the scope as the KNN ("postgresql-exact", the check before
PostgreSQL's stored sign bits, migration PG 012; checks only, on the same database). `--cache`: the scope's sign
bits in memory where the warm worker and the MCP server keep them (db/bitcache.py, its thresholds: SQLite from
50k, PostgreSQL from 5k), and PostgreSQL without them beside ("postgresql-nocache": a hook without the worker, a
command), all alternating call by call.

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
def _exact_scan(con, vector, namespace: str, domain: str, k: int, floor: float):
    """The PostgreSQL check's KNN before its sign bits (migration PG 012): every vector of the scope compared
    ("postgresql-exact", the baseline)."""
    from subcog_store.db.knn import Hit
    from subcog_store.postgres import knn as pg_knn

    found, how = pg_knn.nearest(con.raw, vector, namespace, domain, k, floor)
    return [Hit(*hit) for hit in found], how


OPS = ("check", "capture", "search")
# where a check's time goes: its three tiers (CheckResult.tier_ms), and the rest (the snapshot's newest row, the
# check's log row written in its own transaction, Python)
PARTS = ("check: exact", "check: semantic", "check: recent", "check: the rest")


def latency(n: int, corpus, vectors: np.ndarray, qvectors: np.ndarray, server, calls: int, offset: int = 0,
            cache: bool = False) -> dict:
    """Check, capture and search latency; the checks of queries offset.. (the near neighbours at or above 0.85 of
    each among the corpus rows, by numpy: how many the check's neighbours hold, per backend); PostgreSQL's check
    once more with its KNN the exact scan of the scope ("postgresql-exact": before its sign bits), alternating.
    `cache`: the scope's sign bits in memory where the warm worker and the MCP server keep them (db/bitcache.py,
    its thresholds), and PostgreSQL once more without them ("postgresql-nocache": a hook run without the worker,
    a command: the stored sign bits), all alternating."""
    from subcog_store.db import bitcache
    from subcog_store.db import knn as knn_mod

    by_sign_bits = knn_mod.nearest
    matrix = np.ascontiguousarray(vectors[:n])
    lite_path = OUT / f"pg-store-bench-{n}.db"
    build_store(lite_path, corpus.sentences[:n], matrix)
    url = server.database("bench", migrated=True)
    pg_build = build_postgres(url, corpus.sentences[:n], matrix, hnsw=False)
    known = {content_hash(t): v for t, v in zip(corpus.queries, qvectors)}
    stores = {"sqlite": _store(lite_path, known), "postgresql": _store(url, known)}
    checks_only = {"postgresql-nocache", "postgresql-exact"}   # the same database as "postgresql": checks only
    if cache:
        stores["postgresql-nocache"] = _store(url, known)
    stores["postgresql-exact"] = _store(url, known)
    if cache:
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
                bitcache.enable(cache and backend not in checks_only)
                knn_mod.nearest = _exact_scan if backend == "postgresql-exact" else by_sign_bits
                t0 = time.perf_counter()
                result = store.check_duplicate(corpus.queries[j], NAMESPACE, DOMAIN)
                knn_mod.nearest = by_sign_bits
                times["check"][backend].append((time.perf_counter() - t0) * 1000)
                for tier in ("exact", "semantic", "recent"):
                    times[f"check: {tier}"][backend].append(result.tier_ms.get(tier, 0.0))
                times["check: the rest"][backend].append(times["check"][backend][-1] - sum(result.tier_ms.values()))
                knn[backend][str(result.knn)] = knn[backend].get(str(result.knn), 0) + 1
                got = [i for i in (int(nb.memory_id, 16) for nb in result.neighbours) if i < n]
                wanted, found = near_neighbours_found(got, sims, top)
                near[backend][0] += wanted
                near[backend][1] += found
                if backend in checks_only:   # the same database as "postgresql": its captures are repeats
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
# Phrases swapped for others of the same meaning (names, numbers and facts kept): a base sentence of the corpus
# with every one it holds swapped is its rewording, which the real model embeds.
REWORDINGS = [
    ("Decided to use", "We picked"), ("instead of", "rather than"), ("because", "since"), ("We chose", "We picked"),
    ("listens on port", "serves on port"), ("talks to it", "reaches it"), ("breaks", "crashes"),
    ("Set the", "Changed the"), ("caused cascading", "led to cascading"), ("wrap every", "put every"),
    ("at most", "no more than"), ("fails when", "breaks when"), ("fixed it by", "solved it by"),
    ("must be idempotent", "has to be idempotent"), ("takes", "needs"), ("took", "needed"),
    ("adds an index", "creates an index"), ("Never call", "Do not call"), ("read from", "consume from"),
    ("asked that all", "requested that all"), ("is capped at", "is limited to"),
    ("changed the default", "altered the default"), ("answers", "returns"), ("rejects", "refuses"),
    ("is written in", "is implemented in"), ("gates", "guards"), ("remove it once", "delete it once"),
    ("in batches of", "in chunks of"), ("validate input", "check input"), ("must answer", "has to respond"),
    ("owns the", "is the owner of the"), ("Bumped", "Upgraded"), ("falls back to", "reverts to"),
    ("writes", "produces"), ("go to", "are sent to"), ("caches the", "stores the"), ("come from", "are loaded from"),
]


def reworded(text: str) -> str | None:
    """`text` with every phrase of REWORDINGS it holds swapped (None: it holds none)."""
    out = text
    for phrase, other in REWORDINGS:
        out = out.replace(phrase, other)
    return out if out != text else None


def pool(corpus, vectors: np.ndarray, groups: int, seed: int = 7) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Groups of (base, exact repeat, rewording): a corpus sentence, itself in other case and spacing, and its
    rewording (`reworded`, embedded by the real model) that a serial capture into an empty store skips as a
    semantic duplicate of the base in either order (checked in a throwaway SQLite store), so any order the
    writers capture them in must store one; then the new texts (every other corpus sentence)."""
    import tempfile

    rng = random.Random(seed)
    order = list(range(len(vectors)))
    rng.shuffle(order)
    tried = [(i, other) for i in order[:20 * groups] if (other := reworded(corpus.sentences[i]))][:4 * groups]
    other_vectors, _ = corpus_mod.embed_cached([other for _, other in tried], log=lambda *a, **k: None)
    out, known, used = [], {}, set()
    with tempfile.TemporaryDirectory() as tmp:
        probe = _store(Path(tmp) / "probe.db", known)   # one scope (domain) per order: nothing else is near
        for (i, other), other_vector in zip(tried, other_vectors):
            if len(out) >= groups:
                break
            base = corpus.sentences[i]
            known.update({content_hash(base): vectors[i], content_hash(other): other_vector})
            probe.capture(base, NAMESPACE, f"p{i}")
            probe.capture(other, NAMESPACE, f"q{i}")
            if probe.capture(other, NAMESPACE, f"p{i}").decision != "semantic_skip" or \
                    probe.capture(base, NAMESPACE, f"q{i}").decision != "semantic_skip":
                continue
            used.add(i)
            out.append({"base": base, "repeat": "  " + base.upper() + "  ", "reworded": other})
        probe.close()
    for i in range(len(vectors)):              # new texts: every other corpus sentence
        if i not in used:
            known[content_hash(corpus.sentences[i])] = vectors[i]
    out.append({"new": [corpus.sentences[i] for i in range(len(vectors)) if i not in used]})
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
        kind = rng.choice(("repeat", "reworded", "new"))   # a third each, as the issue names them
        text = (next(mine, group["base"]) if kind == "new" else group["reworded"] if kind == "reworded"
                else group[rng.choice(("base", "repeat"))])   # an exact repeat: the text itself or its case/spacing
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
