"""Where a capture's CPU goes at 10k, this checkout beside a baseline tree: `python -m bench.capture_phases`.

    python -m bench.capture_phases --baseline ../wt-22-base [--baseline TREE ...] [--rounds 4] [--captures 100]
        [--off] [--dump DIR]

Each round runs one child per tree (A B C, C B A, ...), with that tree's own `.venv` and code: it builds bench_store's
store (corpus sentences, one namespace, that tree's schema), loads the model, embeds bench_store's capture texts
(`corpus.fresh[:captures]`) in advance, and times `Store.capture` of each, in CPU (`time.process_time`), as
bench_store's "captures/s, vectors embedded in advance" does. Functions of the capture path that a tree has are
wrapped to add up their CPU (the changed-facts look-up `db.search.nearest_current`, its judge
`text.changes.supersedes` as `dedup/outdated.py` calls it, the whole `find_outdated`, `link_outdated`, the
duplicate check, the write): a phase a tree does not have is blank. The embedding cache of the corpus is the
last baseline's bench/out unless SUBCOG_BENCH_EMBED_CACHE says otherwise (a tree without that variable uses its own).

`--off` adds a third kind of run, this checkout with the changed-facts step switched off in the benchmark only
(`dedup.outdated.find_outdated` replaced by one that finds nothing; there is no product switch): what the capture
costs without issue 24's feature, to tell its cost from the rest. `--dump DIR` writes each run's decisions (the
decision log and the memories, times left out, ids by insertion rank) to DIR/<run>-<round>.txt, so two
checkouts' decisions and links on the same captures can be compared line by line (`cmp`). Every child runs with
PYTHONHASHSEED=0 (the judge iterates sets) and the same SUBCOG_SHARED_DIR (the corpus's natural sentences).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import apsw

from bench.same_outputs import ISO_TIME, TIME_NAME

ROOT = Path(__file__).resolve().parents[1]
EPOCH_TIME = re.compile(r'(\w+_at\\?"): -?[0-9][0-9.e+-]*')   # also inside a JSON text (\")

CHILD = r"""
import json, sys, time
from pathlib import Path
import numpy as np
from bench import bench_store as bs, corpus as corpus_mod

size, captures, path, off = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "off"
acc = {}
if off:   # the changed-facts step switched off, in this benchmark only
    import subcog_store.dedup.outdated as outdated_mod
    outdated_mod.find_outdated = lambda *a, **k: []

def wrap(module, name, key):
    try:
        mod = __import__(module, fromlist=[name])
        fn = getattr(mod, name)
    except (ImportError, AttributeError):
        return
    def timed(*a, **k):
        t0 = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            acc[key] = acc.get(key, 0.0) + time.process_time() - t0
    setattr(mod, name, timed)

wrap("subcog_store.db.search", "nearest_current", "changed-facts look-up (nearest_current)")
wrap("subcog_store.dedup.outdated", "supersedes", "changed-facts judge (supersedes)")
wrap("subcog_store.dedup.outdated", "find_outdated", "find_outdated (look-up + judge)")
wrap("subcog_store.dedup.outdated", "link_outdated", "link_outdated (in the write)")
wrap("subcog_store.dedup.write", "_check", "duplicate check")
wrap("subcog_store.dedup.write", "_apply", "write transaction")
wrap("subcog_store.dedup.write", "revalidate", "of which the re-check under the write lock (revalidate)")
wrap("subcog_store.db.memories", "insert", "of which the row insert (memories.insert)")
try:   # the write lock's enter (marker, BEGIN IMMEDIATE) and its exit (COMMIT), apart
    import contextlib
    import subcog_store.dedup.write as write_mod
    real_immediate = write_mod.immediate
    @contextlib.contextmanager
    def timed_immediate(*a, **k):
        t0 = time.process_time()
        cm = real_immediate(*a, **k)
        con = cm.__enter__()
        acc["of which BEGIN + lock (immediate enter)"] = acc.get("of which BEGIN + lock (immediate enter)", 0.0) + \
            time.process_time() - t0
        try:
            yield con
        except BaseException:
            if not cm.__exit__(*sys.exc_info()):
                raise
        else:
            t0 = time.process_time()
            cm.__exit__(None, None, None)
            acc["of which COMMIT (immediate exit)"] = acc.get("of which COMMIT (immediate exit)", 0.0) + \
                time.process_time() - t0
    write_mod.immediate = timed_immediate
except (ImportError, AttributeError):
    pass
corpus = corpus_mod.build(100_000)
vectors, _, _ = corpus_mod.embeddings(corpus, size, log=lambda *a, **k: None)
bs.build_store(path, corpus.sentences[:size], np.ascontiguousarray(vectors[:size]))
from subcog_store.store import Store
if "_apply" in Store.__dict__:   # a tree before the capture service (f205264): the phases are methods
    orig = Store._apply
    def _apply(self, *a, **k):
        t0 = time.process_time()
        try:
            return orig(self, *a, **k)
        finally:
            acc["write transaction"] = acc.get("write transaction", 0.0) + time.process_time() - t0
    Store._apply = _apply
    orig_check = Store._check
    def _check(self, *a, **k):
        t0 = time.process_time()
        try:
            return orig_check(self, *a, **k)
        finally:
            acc["duplicate check"] = acc.get("duplicate check", 0.0) + time.process_time() - t0
    Store._check = _check
    orig_revalidate = Store._revalidate
    def _revalidate(self, *a, **k):
        t0 = time.process_time()
        try:
            return orig_revalidate(self, *a, **k)
        finally:
            key = "of which the re-check under the write lock (revalidate)"
            acc[key] = acc.get(key, 0.0) + time.process_time() - t0
    Store._revalidate = _revalidate
store = Store(path)
store.check_duplicate("A warm-up sentence that loads the embedding model before anything is timed, number 0.",
                      bs.NAMESPACE, log_check=False)
texts = corpus.fresh[:captures]
store.embed_many(texts)
acc.clear()
decisions = {}
t0 = time.process_time()
for text in texts:
    r = store.capture(text, bs.NAMESPACE, source="bench")
    decisions[r.decision] = decisions.get(r.decision, 0) + 1
total = time.process_time() - t0
out = {"capture (whole)": total}
out.update(acc)
try:   # the changed-facts look-up's SQL alone, in parts, on the capture texts' vectors
    from subcog_store.db import search
    from subcog_store.db.sqlfiles import q
    from subcog_store.dedup.outdated import CANDIDATES, SIGN_POOL
except ImportError:
    search = None
if search is not None and hasattr(search, "nearest_current"):
    con, vecs = store.con, [v.astype("float32").tobytes() for v in store.embedder.embed_batch(texts)]
    bits = ("select memory_seq, distance from memory_bits where bits match vec_quantize_binary(:embedding) "
            "and k = :k and domain = :domain")
    rescored = ("with cand as (" + bits + ") select cand.memory_seq, vec_distance_l2(v.embedding, :embedding) "
                "from cand join memory_vectors v on v.memory_seq = cand.memory_seq")
    def sql(query, k):
        return lambda v: con.execute(query, {"embedding": v, "k": k, "domain": bs.DOMAIN}).fetchall()
    parts = {
        "SQL: whole look-up (nearest_current)":
            lambda v: search.nearest_current(con, v, bs.DOMAIN, CANDIDATES, SIGN_POOL),
        "SQL: sign-bit KNN, k = SIGN_POOL": sql(bits, SIGN_POOL),
        "SQL: sign-bit KNN + float re-score": sql(rescored, SIGN_POOL),
        "SQL: sign-bit KNN, k = CANDIDATES": sql(bits, CANDIDATES),
        "SQL: exact float scan (outdated_candidates_exact)": sql(q("outdated_candidates_exact"), CANDIDATES)}
    for name, fn in parts.items():
        for v in vecs[:5]:
            fn(v)
        t0 = time.process_time()
        for v in vecs:
            fn(v)
        out[name] = time.process_time() - t0
store.close()
print(json.dumps({"ms": {k: v * 1000 / captures for k, v in out.items()}, "decisions": decisions}))
"""


def decisions(db: Path) -> str:
    """The decision log and the memories of a run's store, one row a line: times left out, ids by insertion rank."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    ids = {mid: f"<m{n}>" for n, (mid,) in enumerate(con.execute("SELECT id FROM memories ORDER BY seq"))}
    lines = []
    for table, order in (("dedup_log", "id"), ("memories", "seq")):
        names = [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
        for row in con.execute(f"SELECT * FROM {table} ORDER BY {order}"):
            kept = {n: v for n, v in zip(names, row) if not TIME_NAME.search(n) and n != "seq"}
            lines.append(f"{table}: {json.dumps(kept, sort_keys=True, ensure_ascii=False, default=repr)}")
    con.close()
    text = EPOCH_TIME.sub(r"\1: <time>", ISO_TIME.sub("<time>", "\n".join(lines)))   # times in the undo JSON too
    for mid, label in ids.items():
        text = text.replace(mid, label)
    return text + "\n"


def run_child(tree: Path, size: int, captures: int, env: dict[str, str], off: bool = False, dump: str = "") -> dict:
    db = ROOT / "bench" / "out" / f"capture-phases-{tree.name}{'-off' if off else ''}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    proc = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", CHILD, str(size), str(captures), str(db),
                           "off" if off else "on"],
                          cwd=tree, env=env | {"PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}, capture_output=True,
                          text=True)
    if dump and proc.returncode == 0:   # by this checkout's code, the same for every tree
        Path(dump).write_text(decisions(db))
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, action="append", required=True,
                        help="another source tree (with its .venv); may be given more than once")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--captures", type=int, default=100)
    parser.add_argument("--off", action="store_true", help="also run this checkout with the changed-facts step off")
    parser.add_argument("--dump", type=Path, help="write each run's decisions and memories to this directory")
    cfg = parser.parse_args(argv)
    trees = [ROOT] + [b.resolve() for b in cfg.baseline]
    names = ["today"] + [f"{b.name}" for b in trees[1:]]
    offs = [False] * len(trees)
    if cfg.off:
        trees, names, offs = trees + [ROOT], names + ["today, changed facts off"], offs + [True]
    if cfg.dump:
        cfg.dump.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("SUBCOG_BENCH_EMBED_CACHE", str(trees[-1] / "bench" / "out"))
    # the corpus's natural sentences come from <tree>/../shared: one place for every tree, or a tree kept
    # elsewhere (a copy in /tmp) builds another corpus and captures other texts (66/34 decisions instead of 57/43)
    env.setdefault("SUBCOG_SHARED_DIR", str(ROOT.parent / "shared"))
    runs: list[list[dict]] = [[] for _ in trees]
    for i in range(cfg.rounds):
        order = list(range(len(trees)))
        order = order if i % 2 == 0 else order[::-1]   # A B C, C B A, ...
        for j in order:
            load = os.getloadavg()[0]
            dump = str(cfg.dump.resolve() / f"{names[j].replace(' ', '').replace(',', '-')}-{i + 1}.txt") \
                if cfg.dump else ""
            res = run_child(trees[j], cfg.size, cfg.captures, env, offs[j], dump)
            runs[j].append(res)
            print(f"round {i + 1} {names[j]}: load {load:.1f}, capture {res['ms']['capture (whole)']:.2f} ms CPU, "
                  f"{res['decisions']}", file=sys.stderr, flush=True)
    phases = list(dict.fromkeys(k for tree_runs in runs for r in tree_runs for k in r["ms"]))
    print(f"CPU ms per capture (SQL rows: per query) at {cfg.size:,} memories, {cfg.captures} captures a run, "
          f"median of {cfg.rounds} runs each, today ({ROOT.name}) beside {', '.join(names[1:])}\n")
    print("| phase | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names))
    for phase in phases:
        cells = []
        for tree_runs in runs:
            values = [r["ms"][phase] for r in tree_runs if phase in r["ms"]]
            cells.append(f"{statistics.median(values):.2f}" if values else "")
        print(f"| {phase} | " + " | ".join(cells) + " |")
    whole = [statistics.median(r["ms"]["capture (whole)"] for r in tree_runs) for tree_runs in runs]
    print("\ncaptures/s (vectors in advance, from the CPU medians): " +
          ", ".join(f"{n} {1000 / w:.0f}" for n, w in zip(names, whole)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
