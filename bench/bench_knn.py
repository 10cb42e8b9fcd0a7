"""KNN for the semantic tier (issue #13), the research that chose subcog_store/db/knn.py: the exact float vec0
scan beside binary-quantized candidates re-scored exactly, sqlite-vec 0.1.10a4's `rescore` and `diskann`
indexes, and numpy brute force. (bench/bench_store.py measures the KNN the store ships; this script keeps its
own copy of the design, `certified_knn`, so it can run the same method on 0.1.10a4's tables.)

The bar: no neighbour at or above 0.85 cosine is ever missed (checked against numpy brute force on the bench
corpus, bench/corpus.py), and the database stays one file the stock sqlite3 shell can read. For each size a
file database is built in bench/out/ (the 1M one is kept and reused: knn-1000000.db), holding today's
`memory_vectors` (float[384], partition key namespace, metadata domain) and a `memory_bits` vec0 table
(bit[384] = vec_quantize_binary(embedding), same keys). Methods, timed on the same held-out queries in turn:

- float k=5: today's `find_semantic_neighbours` KNN (exact scan of the scope);
- bits top-K + rescore: the K nearest by Hamming distance re-scored with their float vectors (not certified);
- bits bound: every vector within the Hamming bound H(0.85) (k=4096), re-scored: the complete near set;
- bits certified: what the store would run (see `certified_knn`): exact top-5 for every neighbour >= 0.85,
  falling back to the float scan when it cannot prove it;
- numpy: matrix @ query over an in-memory matrix (a warm worker's best case), single-threaded;
- sqlite-vec 0.1.10a4 (a subprocess in --vec10-python): float k=5, rescore(quantizer=bit, oversample=...),
  diskann(neighbor_quantizer=binary); these indexes accept no partition key or metadata column.

    python -m bench.bench_knn --sizes 10000,100000 [--million] [--queries 300] [--no-vec10] [--no-extras]
"""
from __future__ import annotations

import argparse
import json
import math
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
FLOOR = 0.85                 # no neighbour at or above this cosine may be missed
BITS = 384
TAIL = 1e-9                  # per-pair miss probability allowed by the Hamming bound (SimHash model)
FIRST, CAP = 256, 4096       # candidates of the certified KNN's first pass; vec0's k limit
NS, DOMAIN = "decisions", "project"

FLOAT_DDL = """create virtual table memory_vectors using vec0(
  memory_seq integer primary key, namespace text partition key, domain text,
  embedding float[384] distance_metric=l2, chunk_size=256)"""
BITS_DDL = """create virtual table memory_bits using vec0(
  memory_seq integer primary key,      -- = memories.seq = memory_vectors.memory_seq
  namespace text partition key,
  domain text,
  bits bit[384],                       -- vec_quantize_binary(embedding): one sign bit per dimension
  chunk_size=256)"""
INSERT_FLOAT = ("insert into memory_vectors (memory_seq, namespace, domain, embedding) "
                "values (:seq, :namespace, :domain, :embedding)")
INSERT_BITS = ("insert into memory_bits (memory_seq, namespace, domain, bits) "
               "values (:seq, :namespace, :domain, vec_quantize_binary(:embedding))")
FLOAT_KNN = """select memory_seq, distance
from memory_vectors
where embedding match :embedding and k = :k and namespace = :namespace and domain = :domain"""
# Candidates by Hamming distance (at most :candidates, none beyond :max_hamming), re-scored exactly with their
# float vectors (point lookups in memory_vectors); also says how many candidates there were and how far the
# farthest one was, which is what certifies the answer.
RESCORED_KNN = """with cand as (
  select memory_seq, distance as hamming
  from memory_bits
  where bits match vec_quantize_binary(:embedding)
    and k = :candidates
    and namespace = :namespace
    and domain = :domain
    and distance <= :max_hamming
), scored as (
  select cand.memory_seq, vec_distance_l2(v.embedding, :embedding) as distance,
         count(*) over () as n_candidates, max(cand.hamming) over () as max_hamming
  from cand join memory_vectors v on v.memory_seq = cand.memory_seq
)
select memory_seq, distance, n_candidates, max_hamming from scored order by distance limit :k"""


# -- the Hamming bound --------------------------------------------------------------------------------------
def _binomial_tail_quantile(n: int, p: float, eps: float) -> int:
    """Smallest H with P(X > H) <= eps for X ~ Binomial(n, p)."""
    logs = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
            + (n - k) * math.log1p(-p) for k in range(n + 1)]
    tail = 0.0
    for h in range(n, -1, -1):
        if tail > eps:
            return h + 1
        tail += math.exp(logs[h])
    return 0


_GRID = 1000
_BOUNDS: dict[float, list[int]] = {}


def set_tail(tail: float) -> None:
    """The default per-pair tail probability of hamming_bound."""
    global TAIL
    TAIL = tail


def hamming_bound(cos: float, tail: float | None = None) -> int:
    """The most sign bits two unit vectors at cosine >= `cos` may disagree on: the 1 - tail quantile of
    Binomial(384, angle/pi), the sign-random-projection (SimHash) model; the cosine is rounded down to a grid of
    0.001 and capped at 0.999 (two vectors at cosine 1.0 in float32 may still differ in a sign bit)."""
    tail = TAIL if tail is None else tail
    if tail not in _BOUNDS:
        _BOUNDS[tail] = [_binomial_tail_quantile(BITS, math.acos(i / _GRID) / math.pi, tail) for i in range(_GRID)]
    return _BOUNDS[tail][max(0, min(_GRID - 1, int(math.floor(cos * _GRID))))]


def cos_of(distance: float) -> float:
    return 1.0 - distance * distance / 2.0


def certified_knn(con, embedding: bytes, namespace: str, domain: str, k: int = 5, floor: float = FLOOR,
                  first: int = FIRST, cap: int = CAP, tail: float | None = None,
                  table_vectors: str = "memory_vectors", table_bits: str = "memory_bits"
                  ) -> tuple[list[tuple[int, float]], str]:
    """The exact k nearest among the neighbours at cosine >= floor, proved so, or the float scan.

    1. The `first` nearest by Hamming distance within H(floor), re-scored. Fewer than `first`: every vector
       within the bound was re-scored: complete. Else c = max(floor, the k-th best cosine found): a vector
       not re-scored is at least max_hamming away, so if max_hamming > H(c) none can beat the k-th: proved.
    2. Else every vector within H(c) (at most `cap`), re-scored: complete if fewer than `cap`.
    3. Else the float scan (today's query)."""
    p = {"embedding": embedding, "namespace": namespace, "domain": domain, "k": k}
    rescored, float_knn = RESCORED_KNN, FLOAT_KNN
    if table_vectors != "memory_vectors" or table_bits != "memory_bits":
        rescored = rescored.replace("memory_vectors", table_vectors).replace("memory_bits", table_bits)
        float_knn = float_knn.replace("memory_vectors", table_vectors)
    rows = con.execute(rescored, p | {"candidates": first, "max_hamming": hamming_bound(floor, tail)}).fetchall()
    if not rows or rows[0][2] < first:
        return [(r[0], r[1]) for r in rows], "complete"
    c = max(floor, cos_of(rows[k - 1][1]) if len(rows) >= k else floor)
    if rows[0][3] > hamming_bound(c, tail):
        return [(r[0], r[1]) for r in rows], "proved"
    rows = con.execute(rescored, p | {"candidates": cap, "max_hamming": hamming_bound(c, tail)}).fetchall()
    if rows[0][2] < cap:
        return [(r[0], r[1]) for r in rows], "second pass"
    return [tuple(r) for r in con.execute(float_knn, p).fetchall()], "float fallback"


# -- helpers --------------------------------------------------------------------------------------------------
def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def pct(values, p) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), p)) if len(values) else float("nan")


def p50_95(values) -> str:
    return f"{pct(values, 50):.2f} / {pct(values, 95):.2f}"


def md_table(header, rows) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return "\n".join(out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def open_db(path):
    """apsw connection with the sqlite-vec of this interpreter, the store's pragmas (mmap 1 GiB, WAL)."""
    import importlib.util

    import apsw

    spec = importlib.util.find_spec("sqlite_vec")
    con = apsw.Connection(str(path))
    con.enable_load_extension(True)
    con.load_extension(str(Path(next(iter(spec.submodule_search_locations))) / "vec0"))
    con.execute("pragma mmap_size = 1073741824")
    if str(path) != ":memory:":
        con.execute("pragma journal_mode = wal")
    con.execute("pragma synchronous = normal")
    return con


def table_bytes(con, prefix: str) -> int:
    return con.execute("select coalesce(sum(pgsize), 0) from dbstat where name = ? or name like ? escape '\\'",
                       (prefix, prefix.replace("_", "\\_") + "\\_%")).fetchone()[0]


def unlink_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


CPU: list[float] = []   # thread CPU ms of the last timed() call: less sensitive to a busy machine than wall


def timed(fn):
    t0, c0 = time.perf_counter(), time.thread_time()
    out = fn()
    CPU[:] = [(time.thread_time() - c0) * 1000]
    return (time.perf_counter() - t0) * 1000, out


# -- corpus --------------------------------------------------------------------------------------------------
def vectors_for(n: int) -> tuple[np.ndarray, np.ndarray, Path, Path]:
    """The first n corpus vectors and the held-out query vectors (bench/corpus.py, cached embeddings); also
    written as .npy for the 0.1.10a4 subprocess."""
    from bench import corpus as corpus_mod

    corpus = corpus_mod.build(max(n, 100_000))
    vectors, qvectors, info = corpus_mod.embeddings(corpus, n, log=log)
    vpath, qpath = OUT / f"knn-vectors-{n}.npy", OUT / f"knn-queries-{n}.npy"
    if not vpath.exists() or np.load(vpath, mmap_mode="r").shape != vectors.shape:
        np.save(vpath, vectors)
    np.save(qpath, qvectors)
    return np.ascontiguousarray(vectors[:n]), qvectors, vpath, qpath


def truth(matrix: np.ndarray, qvectors: np.ndarray) -> list[dict]:
    """Per query: every corpus row at cosine >= FLOOR (row -> cosine) and the 5 best cosines, by numpy."""
    out = []
    for start in range(0, len(qvectors), 64):
        sims = qvectors[start:start + 64] @ matrix.T
        for row in sims:
            near = np.nonzero(row >= FLOOR)[0]
            top = np.sort(np.partition(row, -5)[-5:])[::-1]
            out.append({"near": dict(zip(near.tolist(), row[near].tolist())), "top": top.tolist()})
    return out


def misses(found_rows: list[int], matrix: np.ndarray, q: np.ndarray, t: dict, k: int = 5) -> int:
    """How many of the true top-k neighbours at cosine >= FLOOR the answer lacks (tie-tolerant: compares the
    i-th best cosine found with the i-th best that exists)."""
    want = [s for s in t["top"][:k] if s >= FLOOR]
    got = sorted((float(matrix[i] @ q) for i in found_rows), reverse=True)[:k]
    return sum(1 for i, s in enumerate(want) if i >= len(got) or got[i] < s - 1e-5)


# -- building --------------------------------------------------------------------------------------------------
def build(path: Path, matrix: np.ndarray, reuse: bool) -> dict:
    n = len(matrix)
    if reuse and path.exists():
        con = open_db(path)
        try:
            have = con.execute("select count(*) from memory_bits_rowids").fetchone()[0]
        except Exception:  # noqa: BLE001
            have = -1
        con.close()
        if have == n:
            return json.loads(Path(str(path) + ".json").read_text())
    unlink_db(path)
    con = open_db(path)
    con.execute(FLOAT_DDL)
    con.execute(BITS_DDL)
    info = {}
    for name, sql in (("float", INSERT_FLOAT), ("bits", INSERT_BITS)):
        t0 = time.perf_counter()
        con.execute("begin")
        con.executemany(sql, ({"seq": i + 1, "namespace": NS, "domain": DOMAIN, "embedding": matrix[i].tobytes()}
                              for i in range(n)))
        con.execute("commit")
        info[f"{name}_rows_per_s"] = n / (time.perf_counter() - t0)
    con.execute("pragma wal_checkpoint(truncate)")
    info["float_bytes"] = table_bytes(con, "memory_vectors")
    info["bits_bytes"] = table_bytes(con, "memory_bits")
    con.close()
    Path(str(path) + ".json").write_text(json.dumps(info))
    return info


# -- measuring --------------------------------------------------------------------------------------------------
def measure(n: int, cfg) -> dict:
    matrix, qvectors, vpath, qpath = vectors_for(n)
    qvectors = qvectors[:cfg.queries]
    path = OUT / f"knn-{n}.db"
    log(f"[{n:,}] building {path.name} (load {load()}) ...")
    res = {"n": n, "load_start": load(), "build": build(path, matrix, reuse=n >= 1_000_000)}
    log(f"[{n:,}] ground truth ...")
    gt = truth(matrix, qvectors)
    res["near_per_query"] = [len(t["near"]) for t in gt]
    con = open_db(path)
    bound = hamming_bound(FLOOR)
    base = {"namespace": NS, "domain": DOMAIN, "k": 5}

    def run_rescored(q, candidates, max_hamming, k=5):
        rows = con.execute(RESCORED_KNN, base | {"embedding": q, "candidates": candidates,
                                                   "max_hamming": max_hamming, "k": k}).fetchall()
        return [r[0] - 1 for r in rows], (rows[0][2] if rows else 0)

    def certified(q, first, tail):
        rows, path_taken = certified_knn(con, q, NS, DOMAIN, first=first, tail=tail)
        return [r[0] - 1 for r in rows], path_taken

    methods = {
        "float k=5 (today)": lambda q: ([r[0] - 1 for r in con.execute(FLOAT_KNN, base | {"embedding": q})], None),
        "bits top-64 + rescore": lambda q: run_rescored(q, 64, BITS),
        f"bits bound H={bound} (k<=4096) + rescore, all": lambda q: run_rescored(q, CAP, bound, k=-1),
        f"bits certified, first={FIRST}, tail {TAIL:g} (store design)": lambda q: certified(q, FIRST, TAIL),
        f"bits certified, first={FIRST // 2}, tail {TAIL:g}": lambda q: certified(q, FIRST // 2, TAIL),
        f"bits certified, first={FIRST}, tail {TAIL * 1e-3:g}": lambda q: certified(q, FIRST, TAIL * 1e-3),
        "numpy brute force (in memory)": lambda q: (lambda s: (np.argpartition(-s, 5)[:5].tolist(), None))(
            matrix @ np.frombuffer(q, dtype=np.float32)),
    }
    stats = {m: {"ms": [], "cpu": [], "missed": 0, "extra": []} for m in methods}
    names = list(methods)
    for j in range(min(10, len(qvectors))):  # warm-up
        for m in names:
            methods[m](qvectors[j].tobytes())
    log(f"[{n:,}] {len(qvectors)} queries x {len(names)} methods (load {load()}) ...")
    near_total = near_missed_bound = 0
    for j, qv in enumerate(qvectors):
        q = qv.tobytes()
        order = names[j % len(names):] + names[:j % len(names)]  # rotate the order
        for m in order:
            ms, (found, extra) = timed(lambda: methods[m](q))
            st = stats[m]
            st["ms"].append(ms)
            st["cpu"].append(CPU[0])
            st["extra"].append(extra)
            if m.startswith("bits bound"):
                near = gt[j]["near"]
                near_total += len(near)
                near_missed_bound += len(set(near) - set(found)) if extra < CAP else 0
                st["missed"] += misses(found, matrix, qv, gt[j]) if extra < CAP else 0
            else:
                st["missed"] += misses(found, matrix, qv, gt[j])
    res["load_end"] = load()
    res["methods"] = stats
    res["near_total"], res["near_missed_bound"] = near_total, near_missed_bound
    res["bound"] = bound
    con.close()
    if cfg.vec10 and cfg.vec10_python and Path(cfg.vec10_python).exists():
        log(f"[{n:,}] sqlite-vec 0.1.10a4 subprocess (load {load()}) ...")
        out = OUT / f"knn10-{n}.json"
        subprocess.run([cfg.vec10_python, "-m", "bench.bench_knn", "--worker-vec10", str(vpath), str(qpath),
                        str(out), "--queries", str(cfg.queries), "--diskann-max", str(cfg.diskann_max),
                        "--tail", str(TAIL), "--first", str(FIRST)],
                       cwd=Path(__file__).resolve().parent.parent, check=True)
        v10 = json.loads(out.read_text())
        for m, st in v10["methods"].items():
            st["missed"] = sum(misses([i - 1 for i in ids], matrix, qvectors[j], gt[j])
                               for j, ids in enumerate(st.pop("ids")))
        res["vec10"] = v10
    return res


def worker_vec10(vpath: str, qpath: str, out: str, queries: int, diskann_max: int) -> None:
    """Runs under the sqlite-vec 0.1.10a4 interpreter: today's float table and the bits table (the store
    design), a rescore index and a diskann index (single scope: they take no partition key or metadata)."""
    matrix = np.load(vpath)
    qvectors = np.load(qpath)[:queries]
    n = len(matrix)
    path = OUT / f"knn10-{n}.db"
    unlink_db(path)
    con = open_db(path)
    ver = con.execute("select vec_version()").fetchone()[0]
    tables = {"memory_vectors": (FLOAT_DDL, INSERT_FLOAT), "memory_bits": (BITS_DDL, INSERT_BITS),
              "rs": ("create virtual table rs using vec0(memory_seq integer primary key, embedding float[384] "
                     "distance_metric=l2 indexed by rescore(quantizer=bit, oversample=8), chunk_size=256)",
                     "insert into rs (memory_seq, embedding) values (:seq, :embedding)")}
    if n <= diskann_max:
        tables["dk"] = ("create virtual table dk using vec0(memory_seq integer primary key, embedding float[384] "
                        "distance_metric=l2 indexed by diskann(neighbor_quantizer=binary, n_neighbors=72))",
                        "insert into dk (memory_seq, embedding) values (:seq, :embedding)")
    res = {"version": ver, "build": {}, "methods": {}, "load_start": load()}
    for name, (ddl, insert) in tables.items():
        con.execute(ddl)
        t0 = time.perf_counter()
        con.execute("begin")
        con.executemany(insert, ({"seq": i + 1, "namespace": NS, "domain": DOMAIN, "embedding": matrix[i].tobytes()}
                                 for i in range(n)))
        con.execute("commit")
        res["build"][name] = {"rows_per_s": n / (time.perf_counter() - t0)}
    con.execute("pragma wal_checkpoint(truncate)")
    for name in tables:
        res["build"][name]["bytes"] = table_bytes(con, name)
    knn = "select memory_seq from {t} where embedding match ? and k = 5"
    base = {"namespace": NS, "domain": DOMAIN, "k": 5}
    variants = [
        ("0.1.10a4 float k=5 (today's table)", None,
         lambda q: [r[0] for r in con.execute(FLOAT_KNN, base | {"embedding": q})]),
        (f"0.1.10a4 bits certified, first={FIRST} (store design)", None,
         lambda q: [r[0] for r in certified_knn(con, q, NS, DOMAIN, first=FIRST)[0]])]
    for os_ in (8, 32):
        variants.append((f"0.1.10a4 rescore(bit) oversample={os_}", ("rs", f"oversample={os_}"),
                         lambda q: [r[0] for r in con.execute(knn.format(t="rs"), (q,))]))
    if "dk" in tables:
        for L in (128, 512):
            variants.append((f"0.1.10a4 diskann(binary, 72) L={L}", ("dk", f"search_list_size_search={L}"),
                             lambda q: [r[0] for r in con.execute(knn.format(t="dk"), (q,))]))
    for label, command, fn in variants:
        if command:
            con.execute(f"insert into {command[0]}({command[0]}) values (?)", (command[1],))
        for j in range(min(10, len(qvectors))):
            fn(qvectors[j].tobytes())
        ms, cpu, ids = [], [], []
        for qv in qvectors:
            t, found = timed(lambda: fn(qv.tobytes()))
            ms.append(t)
            cpu.append(CPU[0])
            ids.append(found)
        res["methods"][label] = {"ms": ms, "cpu": cpu, "ids": ids}
    res["load_end"] = load()
    con.close()
    unlink_db(path)
    Path(out).write_text(json.dumps(res))


# -- extras: capture inserts, delete, partitions ---------------------------------------------------------------
def extras(n: int, cfg) -> dict:
    """On a copy of the n-store: per-transaction inserts with and without the bits table; DELETE of half."""
    matrix, qvectors, _, _ = vectors_for(n)
    path = OUT / f"knn-extra-{n}.db"
    unlink_db(path)
    con = open_db(path)
    con.execute(FLOAT_DDL)
    con.execute(BITS_DDL)
    con.execute("begin")
    for sql in (INSERT_FLOAT, INSERT_BITS):
        con.executemany(sql, ({"seq": i + 1, "namespace": NS, "domain": DOMAIN, "embedding": matrix[i].tobytes()}
                              for i in range(n)))
    con.execute("commit")
    res = {"n": n, "load": load()}
    # capture-like inserts: one transaction each, float only vs float + bits
    fresh = qvectors[:400]
    times = {"float": [], "float+bits": []}
    for j, v in enumerate(fresh):
        kind = "float" if j % 2 else "float+bits"
        p = {"seq": n + 1 + j, "namespace": NS, "domain": DOMAIN, "embedding": v.tobytes()}
        t0 = time.perf_counter()
        con.execute("begin immediate")
        con.execute(INSERT_FLOAT, p)
        if kind == "float+bits":
            con.execute(INSERT_BITS, p)
        con.execute("commit")
        times[kind].append((time.perf_counter() - t0) * 1000)
    res["insert_ms"] = times

    def size_and_knn(label):
        con.execute("pragma wal_checkpoint(truncate)")
        pages, free = (con.execute(f"pragma {x}").fetchone()[0] for x in ("page_count", "freelist_count"))
        q = qvectors[500].tobytes()
        base = {"namespace": NS, "domain": DOMAIN, "k": 5, "embedding": q}
        ms, ms_c = [], []
        for _ in range(30):
            timed(lambda: con.execute(FLOAT_KNN, base).fetchall())
            ms.append(CPU[0])
            timed(lambda: certified_knn(con, q, NS, DOMAIN))
            ms_c.append(CPU[0])
        res.setdefault("delete", []).append({
            "step": label, "file_mb": pages * 4096 / 1e6, "free_mb": free * 4096 / 1e6,
            "vectors_mb": table_bytes(con, "memory_vectors") / 1e6, "bits_mb": table_bytes(con, "memory_bits") / 1e6,
            "float_knn_ms": pct(ms, 50), "certified_ms": pct(ms_c, 50),
            "chunks": con.execute("select count(*) from memory_vectors_chunks").fetchone()[0]})

    size_and_knn(f"{n:,} rows")
    rng = np.random.default_rng(7)
    gone = rng.choice(np.arange(1, n + 1), n // 2, replace=False)
    con.execute("begin")
    con.executemany("delete from memory_vectors where memory_seq = ?", ((int(s),) for s in gone))
    con.executemany("delete from memory_bits where memory_seq = ?", ((int(s),) for s in gone))
    con.execute("commit")
    size_and_knn(f"after deleting a random half ({n // 2:,})")
    con.execute("begin")
    for sql in (INSERT_FLOAT, INSERT_BITS):
        con.executemany(sql, ({"seq": n + 1000 + int(i), "namespace": NS, "domain": DOMAIN,
                               "embedding": matrix[int(s) - 1].tobytes()} for i, s in enumerate(gone)))
    con.execute("commit")
    size_and_knn(f"after inserting {n // 2:,} again")
    con.execute("vacuum")
    size_and_knn("after VACUUM")
    con.close()
    unlink_db(path)
    return res


def partitions(matrix: np.ndarray, qvectors: np.ndarray, queries: int) -> dict:
    """1M vectors over 14 namespaces (skewed) and 2 domains (90/10): today's layout (namespace partition,
    domain metadata) vs both as partition keys; KNN of a large and a small scope."""
    n = len(matrix)
    rng = np.random.default_rng(11)
    share = np.array([30, 20, 15, 8, 5, 4, 4, 3, 3, 2, 2, 2, 1, 1], dtype=float)
    ns = rng.choice(len(share), n, p=share / share.sum())
    dom = np.where(rng.random(n) < 0.9, "project", "user")
    path = OUT / f"knn-part-{n}.db"
    info_path = Path(str(path) + ".json")
    layouts = {"ns partition + domain metadata (today)": ("a", "namespace text partition key, domain text"),
               "ns + domain partition keys": ("b", "namespace text partition key, domain text partition key")}
    if not (path.exists() and info_path.exists()):
        unlink_db(path)
        con = open_db(path)
        info = {}
        for label, (t, cols) in layouts.items():
            con.execute(f"create virtual table {t}_f using vec0(memory_seq integer primary key, {cols}, "
                        "embedding float[384] distance_metric=l2, chunk_size=256)")
            con.execute(f"create virtual table {t}_b using vec0(memory_seq integer primary key, {cols}, "
                        "bits bit[384], chunk_size=256)")
            con.execute("begin")
            con.executemany(f"insert into {t}_f values (?, ?, ?, ?)",
                            ((i + 1, f"ns{ns[i]}", dom[i], matrix[i].tobytes()) for i in range(n)))
            con.executemany(f"insert into {t}_b values (?, ?, ?, vec_quantize_binary(?))",
                            ((i + 1, f"ns{ns[i]}", dom[i], matrix[i].tobytes()) for i in range(n)))
            con.execute("commit")
        con.execute("pragma wal_checkpoint(truncate)")
        for label, (t, _) in layouts.items():
            info[label] = {"float_mb": table_bytes(con, f"{t}_f") / 1e6, "bits_mb": table_bytes(con, f"{t}_b") / 1e6}
        con.close()
        info_path.write_text(json.dumps(info))
    info = json.loads(info_path.read_text())
    con = open_db(path)
    res = {"load": load(), "layouts": info, "rows": []}
    for scope in (("ns0", "project"), ("ns0", "user"), ("ns13", "project")):
        size = int(((ns == int(scope[0][2:])) & (dom == scope[1])).sum())
        for label, (t, _) in layouts.items():
            f_sql = FLOAT_KNN.replace("memory_vectors", f"{t}_f")
            ms_f, ms_f_cpu, ms_c, ms_c_cpu = [], [], [], []
            for qv in qvectors[:queries]:
                p = {"embedding": qv.tobytes(), "namespace": scope[0], "domain": scope[1], "k": 5}
                ms_f.append(timed(lambda: con.execute(f_sql, p).fetchall())[0])
                ms_f_cpu.append(CPU[0])
                ms_c.append(timed(lambda: certified_knn(con, p["embedding"], scope[0], scope[1], table_vectors=f"{t}_f",
                                                        table_bits=f"{t}_b"))[0])
                ms_c_cpu.append(CPU[0])
            res["rows"].append([f"{scope[0]}/{scope[1]} ({size:,} vectors)", label,
                                f"{p50_95(ms_f)} ({pct(ms_f_cpu, 50):.2f})", f"{p50_95(ms_c)} ({pct(ms_c_cpu, 50):.2f})"])
    con.close()
    return res


def whole_check(n: int, cfg) -> dict:
    """The whole semantic check (`Store.check_duplicate` of a new sentence: embed + KNN + guard + log) on a
    store built through the store's own SQL, with today's KNN and with `certified_knn` swapped in for
    `semantic_neighbours` (in this process only), and with tuned onnxruntime options (bench_onnx_threads)."""
    import subcog_store.dedup.check as check_mod
    from bench import bench_store, corpus as corpus_mod
    from bench.bench_onnx_threads import Configured
    from subcog_store.store import Store

    from subcog_store.db.connection import connect, immediate
    from subcog_store.db.sqlfiles import q

    corpus = corpus_mod.build(max(n, 100_000))
    matrix, _, _, _ = vectors_for(n)
    path = OUT / f"knn-store-{n}.db"
    unlink_db(path)
    con = connect(path)  # the store's schema, through its own SQL (as bench_store builds it)
    stamp = "2026-11-01T00:00:00.000Z"
    with immediate(con):
        for i, text in enumerate(corpus.sentences[:n]):
            seq, _ = con.execute(q("insert_memory"), {
                "id": bench_store.memory_id(i), "domain": DOMAIN, "namespace": NS, "content": text,
                "importance": 0.5, "tags": "[]", "source": "bench", "session_id": None, "now": stamp,
                "created_at": stamp}).fetchone()
            con.execute(q("insert_vector"), {"seq": seq, "namespace": NS, "domain": DOMAIN,
                                             "embedding": matrix[i].tobytes()})
    con.close()
    con = open_db(path)
    con.execute(BITS_DDL)
    t0 = time.perf_counter()
    con.execute("insert into memory_bits (memory_seq, namespace, domain, bits) "
                "select memory_seq, namespace, domain, vec_quantize_binary(embedding) from memory_vectors")
    res = {"n": n, "load_start": load(), "migrate_s": time.perf_counter() - t0}
    con.execute("pragma wal_checkpoint(truncate)")
    con.close()
    original = check_mod.semantic_neighbours

    def certified_neighbours(con, vector, namespace, domain, k=check_mod.NEIGHBOURS):
        rows, _ = certified_knn(con, vector.astype("float32").tobytes(), namespace, domain, k=k)
        out = []
        for seq, distance in rows:
            row = con.execute("select id, content from memories where seq = ? and status = 'active'", (seq,)).fetchone()
            if row:
                out.append(check_mod.Neighbour(row[0], row[1], cos_of(distance)))
        return out

    ort = {"intra": 2, "inter": 1, "sequential": True, "spin": "0"}
    variants = {"today (float KNN, default onnxruntime)": (original, None),
                "certified KNN, default onnxruntime": (certified_neighbours, None),
                "certified KNN, onnxruntime intra=2 inter=1 sequential spinning=0": (certified_neighbours, ort)}
    stores = {name: Store(path, embedder=Configured(o) if o else None) for name, (_, o) in variants.items()}
    warm = [f"A warm-up sentence that loads the embedding model before anything is timed, number {i}." for i in range(3)]
    for name, store in stores.items():
        check_mod.semantic_neighbours = variants[name][0]
        for text in warm:
            store.check_duplicate(text, NS)
    texts = corpus.queries[:cfg.whole_checks * len(variants)]
    out = {name: {"ms": [], "semantic_ms": [], "reasons": {}} for name in variants}
    names = list(variants)
    try:
        for i, text in enumerate(texts):
            name = names[i % len(names)]
            check_mod.semantic_neighbours = variants[name][0]
            ms, result = timed(lambda: stores[name].check_duplicate(text, NS))
            out[name]["ms"].append(ms)
            out[name]["semantic_ms"].append(result.tier_ms.get("semantic", float("nan")))
            reason = result.reason or "unique"
            out[name]["reasons"][reason] = out[name]["reasons"].get(reason, 0) + 1
        # capture throughput (check + write transaction, embedding each), fresh sentences, alternating
        caps = {name: [] for name in names[:2]}
        for i, text in enumerate(corpus.fresh[:cfg.whole_checks * 2]):
            name = names[i % 2]
            check_mod.semantic_neighbours = variants[name][0]
            ms, _ = timed(lambda: stores[name].capture(text, NS, source="bench"))
            caps[name].append(ms)
        res["capture_ms"] = caps
    finally:
        check_mod.semantic_neighbours = original
        for store in stores.values():
            store.close()
    res["variants"] = out
    res["load_end"] = load()
    unlink_db(path)
    return res


# -- report ---------------------------------------------------------------------------------------------------
def report(results: list[dict], extra: dict | None, parts: dict | None, whole: list[dict] | None = None) -> str:
    import apsw

    con = open_db(":memory:")
    lines = [f"## bench_knn: sqlite-vec {con.execute('select vec_version()').fetchone()[0]}, apsw {apsw.apsw_version()}, "
             f"numpy {np.__version__}, {os.cpu_count()} cores", ""]
    con.close()
    lines.append(f"Hamming bound H(c) = 1 - {TAIL:g} quantile of Binomial(384, arccos(c)/pi): "
                 + ", ".join(f"H({c})={hamming_bound(c)}" for c in (0.85, 0.9, 0.95, 0.98)) + ".")
    for r in results:
        n = r["n"]
        b = r["build"]
        near = r["near_per_query"]
        lines += ["", f"### {n:,} vectors, one scope; load (1/5/15 min) {r['load_start']} at start, "
                      f"{r['load_end']} at end", ""]
        lines.append(f"Queries {len(near)}: {sum(1 for x in near if x)} have a neighbour >= {FLOOR} "
                     f"(median {int(np.median(near))}, max {max(near)} such neighbours). Build: float "
                     f"{b['float_rows_per_s']:,.0f} rows/s, bits {b['bits_rows_per_s']:,.0f} rows/s; size per 10k: "
                     f"float vec0 {b['float_bytes'] / n * 1e4 / 1e6:.2f} MB, bits vec0 "
                     f"{b['bits_bytes'] / n * 1e4 / 1e6:.2f} MB.")
        rows = []
        for m, st in r["methods"].items():
            extra_txt = ""
            xs = [x for x in st["extra"] if x is not None]
            if m.startswith("bits bound"):
                extra_txt = (f"candidates median {int(np.median(xs))}, p95 {int(pct(xs, 95))}, "
                             f"{sum(1 for x in xs if x >= CAP)} queries hit k=4096; near set "
                             f"{r['near_total'] - r['near_missed_bound']}/{r['near_total']} found (unsaturated)")
            elif m.startswith("bits certified"):
                extra_txt = ", ".join(f"{k} {xs.count(k)}" for k in ("complete", "proved", "second pass",
                                                                     "float fallback") if xs.count(k))
            rows.append([m, p50_95(st["ms"]), f"{pct(st['cpu'], 50):.2f}", st["missed"], extra_txt])
        for m, st in (r.get("vec10") or {}).get("methods", {}).items():
            rows.append([m, p50_95(st["ms"]), f"{pct(st['cpu'], 50):.2f}", st["missed"], ""])
        lines.append("")
        lines.append(md_table(["method", "wall p50 / p95 ms", "CPU p50 ms", "top-5 >= 0.85 missed", "notes"], rows))
        if r.get("vec10"):
            v = r["vec10"]
            lines.append("")
            lines.append(f"{v['version']} (load {v['load_start']} -> {v['load_end']}): build " + "; ".join(
                f"{t} {x['rows_per_s']:,.0f} rows/s, {x['bytes'] / n * 1e4 / 1e6:.2f} MB/10k"
                for t, x in v["build"].items()) + " (rs: rescore, dk: diskann).")
    if extra:
        e = extra
        lines += ["", f"### Writes and deletes at {e['n']:,} (load {e['load']})", ""]
        lines.append("One transaction per insert (WAL, synchronous=normal), as a capture does: float only "
                     f"{p50_95(e['insert_ms']['float'])} ms, float + bits {p50_95(e['insert_ms']['float+bits'])} ms.")
        lines.append("")
        lines.append(md_table(["step", "file MB", "free MB", "float vec0 MB", "bits vec0 MB", "chunks",
                               "float KNN CPU p50 ms", "certified CPU p50 ms"],
                              [[d["step"], f"{d['file_mb']:.1f}", f"{d['free_mb']:.1f}", f"{d['vectors_mb']:.1f}",
                                f"{d['bits_mb']:.1f}", d["chunks"], f"{d['float_knn_ms']:.2f}",
                                f"{d['certified_ms']:.2f}"] for d in e["delete"]]))
    for w in whole or []:
        lines += ["", f"### Whole semantic check at {w['n']:,} memories (`Store.check_duplicate` of a new sentence; "
                      f"load {w['load_start']} -> {w['load_end']})", ""]
        lines.append(f"Adding the bits table to the existing store (one INSERT ... SELECT vec_quantize_binary): "
                     f"{w['migrate_s']:.1f} s.")
        lines.append("")
        lines.append(md_table(["variant", "whole check p50 / p95 ms", "semantic tier p50 ms", "outcomes"],
                              [[k, p50_95(v["ms"]), f"{pct(v['semantic_ms'], 50):.2f}",
                                ", ".join(f"{r} {c}" for r, c in sorted(v["reasons"].items()))]
                               for k, v in w["variants"].items()]))
        lines.append("")
        lines.append("`Store.capture` of a fresh sentence (check, embed, one write transaction; the store's own insert "
                     "path, which fills only the float table): " + "; ".join(
                         f"{k}: {p50_95(v)} ms, {1000 / np.mean(v):.0f} captures/s" for k, v in w["capture_ms"].items()))
    if parts:
        lines += ["", f"### Partitions and metadata at 1M (load {parts['load']})", ""]
        lines.append("; ".join(f"{k}: float {v['float_mb']:.0f} MB, bits {v['bits_mb']:.0f} MB"
                               for k, v in parts["layouts"].items()))
        lines.append("")
        lines.append(md_table(["scope", "layout", "float k=5 wall p50 / p95 ms (CPU p50)",
                               "bits certified wall p50 / p95 ms (CPU p50)"],
                              parts["rows"]))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--million", action="store_true", help="add 1,000,000 (built once, kept in bench/out/)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--no-vec10", dest="vec10", action="store_false")
    parser.add_argument("--vec10-python", default="",
                        help="an interpreter with sqlite-vec==0.1.10a4 installed (without it those rows are skipped)")
    parser.add_argument("--diskann-max", type=int, default=100_000, help="skip diskann above this size")
    parser.add_argument("--no-extras", dest="extras", action="store_false")
    parser.add_argument("--extras-size", type=int, default=100_000, help="store size of the write/delete test")
    parser.add_argument("--whole-checks", type=int, default=100, help="whole semantic checks per variant")
    parser.add_argument("--worker-vec10", nargs=3, metavar=("VECTORS", "QUERIES", "OUT"))
    parser.add_argument("--tail", type=float, default=TAIL, help="per-pair tail probability of the bound")
    parser.add_argument("--first", type=int, default=FIRST, help="candidates of the certified first pass")
    parser.add_argument("--json", default=str(OUT / "bench_knn-last.json"))
    cfg = parser.parse_args(argv)
    set_tail(cfg.tail)
    globals()["FIRST"] = cfg.first
    OUT.mkdir(parents=True, exist_ok=True)
    if cfg.worker_vec10:
        worker_vec10(*cfg.worker_vec10, cfg.queries, cfg.diskann_max)
        return 0
    sizes = sorted({int(s.replace("_", "")) for s in cfg.sizes.split(",") if s.strip()}
                   | ({1_000_000} if cfg.million else set()))
    results = []
    for n in sizes:
        if n >= 1_000_000:
            cfg_n = argparse.Namespace(**{**vars(cfg), "queries": min(cfg.queries, 200)})
        else:
            cfg_n = cfg
        results.append(measure(n, cfg_n))
    extra = extras(cfg.extras_size, cfg) if cfg.extras else None
    whole = [whole_check(n, cfg) for n in sizes if n <= 100_000] if cfg.extras else None
    parts = None
    if cfg.million:
        matrix, qvectors, _, _ = vectors_for(1_000_000)
        parts = partitions(matrix, qvectors, 100)
    text = report(results, extra, parts, whole)
    print(text)
    Path(cfg.json).write_text(json.dumps({"sizes": results, "extras": extra, "partitions": parts, "whole": whole},
                                         default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
