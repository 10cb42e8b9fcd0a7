"""Benchmark of the batch dedup (`subcog-store dedup`) against the original design's plain algorithm.

    python -m bench.bench_dedup [--sizes 1000,10000,100000]

For each size: a store of realistic memories (bench/corpus.py) with about 10% planted duplicates (reworded
variants, case/punctuation variants, clause-order swaps of a base memory, in its namespace) and about 2%
near-miss changed facts (a number changed: must NOT merge), built by bulk insert with the store's own SQL.
Then, each in a fresh subprocess (so ru_maxrss is the peak of that step alone):
  * ours: `batch.dedup(store)` (default thresholds: the namespaces' store-time thresholds);
  * baseline: numpy brute-force top-5 over all embeddings, pairwise keep-higher (the original design), same
    thresholds, in memory (no database writes: its time is a lower bound).
Scored on pairs: a predicted pair is two memories ending in one group; truth pairs are the planted clusters.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
NAMESPACES = [("decisions", 0.3), ("patterns", 0.25), ("learnings", 0.3), ("context", 0.15)]
IMPORTANCE = [0.3, 0.5, 0.5, 0.5, 0.7, 0.9]
DUP_P, NEAR_P = 0.074, 0.02
TARGETS = {1000: 1.0, 10000: 10.0, 100000: 120.0}
REWORD = [("Decided to use", "We decided to go with"), ("because", "since"), ("instead of", "rather than"),
          ("Learned that", "TIL:"), ("Learned:", "Lesson learned:"), ("fails when", "breaks whenever"),
          ("Never call", "Do not ever call"), ("must", "has to"), ("Use ", "Prefer "), ("Pattern:", "Recurring pattern:"),
          ("is capped at", "is limited to"), ("We chose", "We picked"), ("asked that", "requested that"),
          ("listens on", "serves on"), ("Run the", "Execute the"), ("takes", "needs"), ("about", "roughly"),
          ("The ", "Our "), (" is ", " is currently "), ("expire after", "are evicted after")]


def _variant(rng: random.Random, text: str, kind: int) -> str:
    if kind == 0:      # reworded
        out = text
        for a, b in rng.sample(REWORD, len(REWORD)):
            if a in out:
                out = out.replace(a, b, 1)
                if out != text and rng.random() < 0.5:
                    break
        return out if out != text else "Note: " + text
    if kind == 1:      # case / punctuation
        return text.lower().rstrip(".") + " (noted)"
    parts = re.split(r"(?<=[;:,])\s+", text.rstrip("."), maxsplit=1)   # clause order swap
    if len(parts) == 2:
        return parts[1].rstrip(".").capitalize() + ". " + parts[0].rstrip(";:,") + "."
    return "Reminder: " + text


def _near_miss(rng: random.Random, text: str) -> str | None:
    numbers = list(re.finditer(r"(?<![\w.])(\d{1,4})(?![\w.])", text))
    if not numbers:
        return None
    m = rng.choice(numbers)
    value = int(m.group(1))
    return text[:m.start()] + str(value + rng.randint(1, 9) * (1 if value < 5 else rng.choice([1, -1]))) + text[m.end():]


def plant(size: int) -> dict:
    """The memories of a `size` store: texts, namespaces, importances, times, planted cluster ids."""
    from bench.corpus import build

    corpus = build(100_000)
    rng = random.Random(4242)
    rows, clusters = [], []      # rows: (text, namespace, importance, base_index or -1, cluster id or -1)
    from subcog_store.text.normalize import content_hash
    # Every corpus sentence may become a base memory: a variant must not equal any of them (nor each other).
    seen = {content_hash(t) for t in corpus.sentences}
    i = 0
    while len(rows) < size and i < len(corpus.sentences):
        text = corpus.sentences[i]
        ns = rng.choices([n for n, _ in NAMESPACES], [w for _, w in NAMESPACES])[0]
        imp = rng.choice(IMPORTANCE)
        group = [len(rows)]
        rows.append([text, ns, imp, i, -1, "base"])
        if rng.random() < DUP_P:
            for _ in range(rng.choices([1, 2, 3], [0.7, 0.25, 0.05])[0]):
                v = _variant(rng, text, rng.randrange(3))
                if content_hash(v) in seen:
                    continue
                seen.add(content_hash(v))
                group.append(len(rows))
                rows.append([v, ns, rng.choice(IMPORTANCE), i, -1, "dup"])
        if rng.random() < NEAR_P:
            v = _near_miss(rng, text)
            if v and content_hash(v) not in seen:
                seen.add(content_hash(v))
                rows.append([v, ns, rng.choice(IMPORTANCE), i, -1, "near_miss"])
        if len(group) > 1:
            for r in group:
                rows[r][4] = len(clusters)
            clusters.append(group)
        i += 1
    return {"rows": rows[:size] if len(rows) > size and rows[size - 1][4] == -1 else rows,
            "clusters": [g for g in clusters if max(g) < len(rows)]}


def build_store(size: int, path: Path) -> dict:
    import numpy as np

    from bench.corpus import embed_cached
    from subcog_store.db.connection import immediate
    from subcog_store.db.memories import add_vector
    from subcog_store.db.sqlfiles import q
    from subcog_store.store import Store

    data = plant(size)
    rows = data["rows"]
    # Base memories are a prefix of the corpus (its cached chunks); only the planted variants are new.
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    bases = [r[3] for r in rows if r[5] == "base"]
    assert bases == list(range(len(bases)))
    from bench.corpus import build
    base_vectors, info = embed_cached(build(100_000).sentences[:len(bases)], log=log)
    extra_vectors, extra_info = embed_cached([r[0] for r in rows if r[5] != "base"], log=log)
    info["embedded_now"] += extra_info["embedded_now"]
    vectors = np.zeros((len(rows), 384), dtype=np.float32)
    vectors[[n for n, r in enumerate(rows) if r[5] == "base"]] = base_vectors
    others = [n for n, r in enumerate(rows) if r[5] != "base"]
    if others:
        vectors[others] = extra_vectors
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    store = Store(path, environ={})
    t0 = time.perf_counter()
    base = 1_700_000_000
    with immediate(store.con):
        for n, (text, ns, imp, _, _, kind) in enumerate(rows):
            at = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(base + n * 60))
            seq, _ = store.con.execute(q("insert_memory"), {
                "id": f"{n + 1:012x}", "domain": "project", "namespace": ns, "content": text, "importance": imp,
                "tags": json.dumps([kind]), "source": "bench", "session_id": None, "created_at": at,
                "now": at}).fetchone()
            add_vector(store.con, seq, ns, "project", np.ascontiguousarray(vectors[n]).tobytes())
    store.close()
    truth = [[f"{r + 1:012x}" for r in g] for g in data["clusters"]]
    meta = {"size": len(rows), "planted_clusters": len(truth), "planted_duplicates": sum(len(g) - 1 for g in truth),
            "near_misses": sum(1 for r in rows if r[5] == "near_miss"), "build_s": round(time.perf_counter() - t0, 1),
            "embedded_now": info["embedded_now"], "truth": truth,
            "namespaces": {n: sum(1 for r in rows if r[1] == n) for n, _ in NAMESPACES}}
    return meta


def run_ours(path: Path) -> dict:
    from subcog_store.batch.run import dedup
    from subcog_store.store import Store

    store = Store(path, environ={})
    t0 = time.perf_counter()
    report = dedup(store, progress=False)
    seconds = time.perf_counter() - t0
    groups = [c.members for c in report.clusters if c.applied]
    store.close()
    return {"seconds": seconds, "groups": groups, "removed": report.removed, "warnings": report.warnings,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_baseline(path: Path) -> dict:
    """The original design: brute-force top-5 over all embeddings, pairwise keep-higher (no guard, no scope)."""
    import numpy as np

    from subcog_store.config import Settings
    from subcog_store.store import Store

    store = Store(path, environ={})
    t0 = time.perf_counter()
    rows = store.con.execute("select m.id, m.namespace, m.importance, m.created_at, v.embedding from memories m "
                             "join memory_vectors v on v.memory_seq = m.seq where m.status = 'active'").fetchall()
    ids = [r[0] for r in rows]
    settings = Settings.load({}, {})
    limit = np.array([settings.threshold(r[1]) for r in rows], dtype=np.float32)
    keep_key = [(r[2], r[3]) for r in rows]
    V = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), 384)
    pairs = []
    for start in range(0, len(V), 256):
        S = V[start:start + 256] @ V.T
        for r in range(S.shape[0]):
            S[r, start + r] = -2
        top = np.argpartition(-S, 5, axis=1)[:, :5]
        for r in range(S.shape[0]):
            for c in top[r]:
                if S[r, c] >= limit[start + r]:
                    pairs.append((float(S[r, c]), start + r, int(c)))
    alive = [True] * len(ids)
    parent = list(range(len(ids)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for _, a, b in sorted(pairs, reverse=True):
        if not (alive[a] and alive[b]):
            continue
        loser = a if keep_key[a] < keep_key[b] else b
        alive[loser] = False
        parent[find(a)] = find(b)
    seconds = time.perf_counter() - t0
    groups: dict[int, list[str]] = {}
    for x in range(len(ids)):
        groups.setdefault(find(x), []).append(ids[x])
    store.close()
    return {"seconds": seconds, "groups": [g for g in groups.values() if len(g) > 1],
            "removed": alive.count(False), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def score(groups: list[list[str]], truth: list[list[str]]) -> dict:
    def pairs(gs):
        return {(a, b) for g in gs for a in g for b in g if a < b}
    p, t = pairs(groups), pairs(truth)
    exact = len({frozenset(g) for g in groups} & {frozenset(g) for g in truth})
    return {"clusters": len(groups), "exact": exact, "precision": len(p & t) / len(p) if p else 1.0,
            "recall": len(p & t) / len(t) if t else 1.0}


def child(step: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.bench_dedup", "--step", step, "--db", str(path)],
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    if out.returncode != 0:
        raise SystemExit(f"{step} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--step", choices=("ours", "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        result = (run_ours if args.step == "ours" else run_baseline)(Path(args.db))
        print(json.dumps(result))
        return 0
    OUT.mkdir(exist_ok=True)
    lines = ["| memories | planted clusters (dups / near-misses) | method | duration | target | peak RSS | "
             "clusters found | exact | pair precision | pair recall | verdict |",
             "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    results = []
    for size in [int(s) for s in args.sizes.split(",")]:
        path = OUT / f"dedup-{size}.db"
        print(f"building {size} ...", file=sys.stderr, flush=True)
        meta = build_store(size, path)
        truth = meta.pop("truth")
        for name, step in (("subcog dedup", "ours"), ("baseline (numpy top-5, keep-higher)", "baseline")):
            for suffix in ("-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
            work = OUT / f"dedup-{size}-{step}.db"
            work.write_bytes(path.read_bytes())
            r = child(step, work)
            s = score(r["groups"], truth)
            target = TARGETS.get(size)
            ok = (target is None or r["seconds"] < target) and r["peak_mb"] < 1024
            verdict = ("PASS" if ok else "MISS") if step == "ours" else "-"
            lines.append(f"| {meta['size']:,} | {meta['planted_clusters']} ({meta['planted_duplicates']} / "
                         f"{meta['near_misses']}) | {name} | {r['seconds']:.2f} s | "
                         f"{'< %g s' % target if target else '-'} | {r['peak_mb']:.0f} MB | {s['clusters']} | "
                         f"{s['exact']} | {s['precision']:.3f} | {s['recall']:.3f} | {verdict} |")
            results.append({"size": size, "method": step, **meta, **s, "seconds": r["seconds"],
                            "peak_mb": r["peak_mb"], "removed": r["removed"], "warnings": r.get("warnings")})
            print(lines[-1], file=sys.stderr, flush=True)
            work.unlink(missing_ok=True)
            for suffix in ("-wal", "-shm"):
                Path(str(work) + suffix).unlink(missing_ok=True)
    (OUT / "bench_dedup.json").write_text(json.dumps(results, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
