"""Recall latency (issue #10, "Measured"): `Store.search` in process, the recall hooks as fresh processes.

Stores of 1k, 10k and 100k memories (bench/corpus.py's realistic sentences and cached embeddings; one domain,
five namespaces, created over a year) are bulk-inserted through the store's own SQL and cached in bench/out/
(git-ignored); each run works on a copy. Prompts are corpus.py's held-out query sentences (each used once, so
its embedding is never cached). Measured, p50 / p95:

- in process: `Store.search(limit=10)` hybrid (query embedded), hybrid with the query vector already cached,
  text side alone (`use_model=False`), and each SQL side alone (vec0 KNN, FTS5 BM25);
- fresh processes (wall): `subcog-store --db X hook user-prompt-submit` and `hook session-start`, beside
  `python -c pass`, interleaved sample by sample so all three see the same load. Without the warm worker
  (SUBCOG_WORKER_ENABLED=false) the prompt hook answers from the text side alone (no model in the process;
  recall_log says `text`); when `subcog_store/worker` starts, the same hooks are measured through it (hybrid).

    .venv/bin/python -m bench.recall.bench_recall_latency [--sizes 1000,10000,100000] [--runs 30] [--rounds 2]

Appends (replaces) its section of bench/recall/RESULTS.md, with a table of every run kept in
bench/out/recall/latency-run-*.json (the raw figures; the last also in latency-last.json).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import corpus as corpus_mod

HERE = Path(__file__).resolve().parent
OUT = corpus_mod.OUT_DIR
RESULTS = HERE / "RESULTS.md"
LATENCY_MARK = "<!-- latency: bench_recall_latency.py -->"
DOMAIN = "project"
NAMESPACES = ("decisions", "learnings", "patterns", "context", "config")
SPAN_DAYS = 365.0
BUILD_VERSION = "1"
IMPORTS = ("from subcog_store.claude_code import entry, handlers, recall_hooks; from subcog_store.store import Store; "
           "from subcog_store.recall import inject, search")


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), p)) if values else float("nan")


def p50_95(values: list[float]) -> str:
    return f"{pct(values, 50):.1f} / {pct(values, 95):.1f}" if values else "n/a"


def code_hash() -> str:
    """A short hash of the product's Python sources: shows when the code changed under a run."""
    h = hashlib.sha256()
    root = HERE.parents[1] / "subcog_store"
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + f.read_bytes())
    return h.hexdigest()[:8]


def schema_hash() -> str:
    from subcog_store.config import resource_dir

    h = hashlib.sha256()
    for f in sorted((resource_dir("sql") / "schema").glob("*.sql")):
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def build(n: int, sentences: list[str], vectors: np.ndarray, domain: str = DOMAIN) -> Path:
    """The cached n-memory store of `domain` (built when missing): one transaction through the store's SQL."""
    from subcog_store.clock import iso
    from subcog_store.db.connection import connect, immediate
    from subcog_store.db.memories import add_vector
    from subcog_store.db.sqlfiles import q

    h = hashlib.sha256(f"{BUILD_VERSION}:{schema_hash()}:{n}".encode() + (b"" if domain == DOMAIN else domain.encode()))
    for text in sentences[:n]:
        h.update(text.encode() + b"\n")
    path = OUT / f"recall-latency-{n}-{h.hexdigest()[:12]}.db"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp.db")
    for suffix in ("", "-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    con = connect(tmp)
    now = time.time()
    with immediate(con):
        for i, text in enumerate(sentences[:n]):
            ns = NAMESPACES[i % len(NAMESPACES)]
            stamp = iso(now - SPAN_DAYS * 86400 * (n - i) / n)
            seq, _ = con.execute(q("insert_memory"), {
                "id": f"{i:012x}", "domain": domain, "namespace": ns, "content": text,
                "importance": 0.7 if i % 10 == 0 else 0.5, "tags": "[]", "source": "bench", "session_id": None,
                "created_at": stamp, "now": stamp}).fetchone()
            add_vector(con, seq, ns, domain, vectors[i].tobytes())
    con.execute("pragma wal_checkpoint(truncate)")
    con.close()
    tmp.rename(path)
    return path


def working_copy(path: Path, n: int) -> Path:
    """A copy to measure on (the hooks write recall_log rows; the cached store stays as built)."""
    work = OUT / "recall" / f"latency-work-{n}.db"
    work.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(work) + suffix).unlink(missing_ok=True)
    shutil.copyfile(path, work)
    return work


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def in_process(path: Path, queries: list[str], runs: int) -> dict:
    """Store.search p50/p95: hybrid (embedding the query), hybrid with the vector cached, text side alone,
    and each SQL side alone; every query used once per measure."""
    from subcog_store.db.sqlfiles import q
    from subcog_store.store import Store
    from subcog_store.text.textsim import fts_query

    store = Store(path, fetch_model=False)
    store.search("warm up the model and the page cache", domain=DOMAIN, limit=10)
    out: dict[str, list[float]] = {"hybrid": [], "hybrid_cached_vector": [], "text": [], "knn_sql": [], "fts_sql": []}
    methods = set()
    fresh, cached = queries[:runs], queries[runs:2 * runs]
    for text in fresh:
        out["hybrid"].append(timed(lambda: methods.add(store.search(text, domain=DOMAIN, limit=10).method)))
    for text in cached:
        vector = store.embed(text)
        out["hybrid_cached_vector"].append(timed(lambda: store.search(text, domain=DOMAIN, limit=10)))
        params = {"embedding": vector.astype("float32").tobytes(), "k": 50, "domain": DOMAIN}
        out["knn_sql"].append(timed(lambda: store.con.execute(q("search_knn_domain"), params).fetchall()))
        fq = fts_query(text)
        out["fts_sql"].append(timed(lambda: store.con.execute(q("search_text"), {
            "query": fq, "domain": DOMAIN, "namespace": None, "all": 0, "k": 50}).fetchall()))
        out["text"].append(timed(lambda: store.search(text, domain=DOMAIN, limit=10, use_model=False)))
    store.close()
    return {**out, "methods": sorted(methods)}


def cli() -> list[str]:
    script = Path(sys.executable).parent / "subcog-store"
    return [str(script)] if script.exists() else [sys.executable, "-m", "subcog_store"]


def env_for(home: Path, worker: bool) -> dict[str, str]:
    """An isolated environment: no SUBCOG_* of the developer, private XDG dirs (hook log, worker socket)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBCOG_", "XDG_"))}
    for name in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        d = home / name.lower()
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        env[name] = str(d)
    env["SUBCOG_HOOK_DOMAIN"] = DOMAIN
    env["SUBCOG_WORKER_ENABLED"] = "true" if worker else "false"
    return env


def run_wall(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=env)
    ms = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:5]} exited {proc.returncode}: {proc.stderr[:300]!r}")
    return ms, proc.stdout.decode()


def fresh(path: Path, queries: list[str], env: dict[str, str], runs: int, rounds: int, tag: str) -> dict:
    """Wall time of the two hooks and `python -c pass`, interleaved; per round p50 too."""
    hook = cli() + ["--db", str(path), "hook"]
    samples: dict[str, list[list[float]]] = {"floor": [], "imports": [], "prompt": [], "start": []}
    outputs = {"prompt_injected": 0, "prompt_runs": 0}
    k = 0
    for r in range(rounds):
        for key in samples:
            samples[key].append([])
        for i in range(runs + (2 if r == 0 else 0)):
            warm = r == 0 and i < 2
            text = queries[k % len(queries)]
            k += 1
            prompt = json.dumps({"session_id": f"{tag}-p{k}", "prompt": text, "cwd": str(HERE),
                                 "hook_event_name": "UserPromptSubmit"}).encode()
            start = json.dumps({"session_id": f"{tag}-s{k}", "source": "startup", "cwd": str(HERE),
                                "hook_event_name": "SessionStart"}).encode()
            for key, cmd, data in (("floor", [sys.executable, "-c", "pass"], b""),
                                   ("imports", [sys.executable, "-c", IMPORTS], b""),
                                   ("prompt", hook + ["user-prompt-submit"], prompt),
                                   ("start", hook + ["session-start"], start)):
                ms, out = run_wall(cmd, data, env)
                if not warm:
                    samples[key][-1].append(ms)
                    if key == "prompt":
                        outputs["prompt_runs"] += 1
                        outputs["prompt_injected"] += bool(out.strip())
    flat = {key: [x for rnd in v for x in rnd] for key, v in samples.items()}
    return {"samples": flat, "round_p50": {key: [pct(rnd, 50) for rnd in v] for key, v in samples.items()},
            **outputs}


def recall_log(path: Path, tag: str) -> dict:
    """What the hook runs of `tag` recorded: methods, reasons, tokens, their own duration."""
    import apsw

    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    con.setbusytimeout(10_000)   # the warm worker may still be writing the last rows
    rows = con.execute("select hook, method, reason, tokens, duration_ms from recall_log where session_id like ?",
                       (tag + "-%",)).fetchall()
    con.close()
    out: dict = {}
    for hook in ("user-prompt-submit", "session-start:startup"):
        sel = [r for r in rows if r[0] == hook]
        methods: dict[str, int] = {}
        for r in sel:
            methods[r[1] or "none"] = methods.get(r[1] or "none", 0) + 1
        out[hook] = {"n": len(sel), "methods": methods, "tokens_mean": float(np.mean([r[3] for r in sel])) if sel else 0,
                     "in_hook_ms": [r[4] for r in sel if r[4] is not None],
                     "reasons": sorted({(r[2] or "")[:70] for r in sel})[:4]}
    return out


def worker_ctl(env: dict[str, str], action: str) -> dict:
    proc = subprocess.run(cli() + ["worker", action, "--json"], capture_output=True, env=env, timeout=120)
    try:
        return json.loads(proc.stdout or b"{}") | {"rc": proc.returncode}
    except json.JSONDecodeError:
        return {"rc": proc.returncode, "stderr": proc.stderr[:300].decode(errors="replace")}


def report(res: dict) -> str:
    m = res["machine"]
    sizes = [s["n"] for s in res["sizes"]]
    L = [LATENCY_MARK, "", "## Latency (bench_recall_latency.py)", "",
         f"`python -m bench.recall.bench_recall_latency --sizes {','.join(map(str, sizes))} --runs {res['runs']} "
         f"--rounds {res['rounds']}` on {res['date']} (commit {m['commit']}). {m['cpu']}, {m['cores']} cores; load "
         f"average (1/5/15 min) at start {m['load_avg_at_start']}, at end {res['load_end']}; the machine is shared, "
         f"so compare each figure with the `python -c pass` floor measured interleaved with it (same load), and "
         f"the rounds with each other. Stores: bench/corpus.py sentences, one domain, {len(NAMESPACES)} namespaces, "
         f"created over {SPAN_DAYS:.0f} days, cached in bench/out/. Prompts: corpus.py's held-out sentences.", "",
         "In process, ms p50 / p95 (`Store.search(limit=10)`; the model loaded and warm):", ""]
    head = ["figure"] + [f"{n:,}" for n in sizes]
    rows = [["load average (1 min) when the size started"] + [f"{s['load']:.1f}" for s in res["sizes"]]]
    for key, label in (("hybrid", "`search` hybrid (embeds the query)"),
                       ("hybrid_cached_vector", "`search` hybrid, query vector cached"),
                       ("text", "`search` text side alone (`use_model=False`)"),
                       ("knn_sql", "vec0 KNN alone (`search_knn_domain`, k=50)"),
                       ("fts_sql", "FTS5 BM25 alone (`search_text`, k=50)")):
        rows.append([label] + [p50_95(s["in_process"][key]) for s in res["sizes"]])
    L += [md_table(head, rows), ""]
    L += ["Fresh processes, wall ms p50 / p95 (each sample: `python -c pass`, the hooks' imports alone "
          "(`python -c \"" + IMPORTS.replace("; ", "; ") + "\"`), the prompt hook, the session-start hook, in turn); "
          "per-round p50 in brackets; ratio = p50 / floor p50:", ""]
    rows = []
    for mode, label in (("in_process", "no worker (SUBCOG_WORKER_ENABLED=false)"), ("worker", "warm worker")):
        if not all(mode in s["fresh"] for s in res["sizes"]):
            continue
        for key, what in (("floor", "`python -c pass` (floor)"), ("imports", "the hooks' imports alone"),
                          ("prompt", "`hook user-prompt-submit`"), ("start", "`hook session-start`")):
            cells = []
            for s in res["sizes"]:
                f = s["fresh"][mode]
                ratio = pct(f["samples"][key], 50) / pct(f["samples"]["floor"], 50)
                rp = ", ".join(f"{x:.0f}" for x in f["round_p50"][key])
                cells.append(f"{p50_95(f['samples'][key])} [{rp}]" + (f" x{ratio:.1f}" if key != "floor" else ""))
            rows.append([label if key == "floor" else "", what] + cells)
        rows.append(["", "prompt hook method / its own duration p50 (recall_log)"] + [
            f"{s['fresh'][mode]['log']['user-prompt-submit']['methods']} / "
            f"{pct(s['fresh'][mode]['log']['user-prompt-submit']['in_hook_ms'], 50):.1f} ms" for s in res["sizes"]])
        rows.append(["", "prompts injecting / tokens per prompt (mean)"] + [
            f"{s['fresh'][mode]['prompt_injected']}/{s['fresh'][mode]['prompt_runs']} / "
            f"{s['fresh'][mode]['log']['user-prompt-submit']['tokens_mean']:.0f}" for s in res["sizes"]])
        rows.append(["", "session-start: its own duration p50 (recall_log) / tokens (mean)"] + [
            f"{pct(s['fresh'][mode]['log']['session-start:startup']['in_hook_ms'], 50):.1f} ms / "
            f"{s['fresh'][mode]['log']['session-start:startup']['tokens_mean']:.0f}" for s in res["sizes"]])
    L += [md_table(["path", "figure"] + [f"{n:,}" for n in sizes], rows), ""]
    by_n = {s["n"]: s for s in res["sizes"]}
    if 10_000 in by_n and by_n[10_000]["fresh"]["in_process"]["samples"].get("imports"):
        s = by_n[10_000]
        plain = s["fresh"]["in_process"]
        line = (f"Reading, at 10k: the prompt hook without the worker takes {pct(plain['samples']['prompt'], 50):.0f} ms "
                f"wall, of which the interpreter is {pct(plain['samples']['floor'], 50):.0f} ms, the hooks' imports "
                f"{pct(plain['samples']['imports'], 50) - pct(plain['samples']['floor'], 50):.0f} ms more, and the hook's "
                f"own work (store open, text search, gate; recall_log) "
                f"{pct(plain['log']['user-prompt-submit']['in_hook_ms'], 50):.0f} ms.")
        if "worker" in s["fresh"]:
            w = s["fresh"]["worker"]
            line += (f" Through the warm worker the hook's own work is "
                     f"{pct(w['log']['user-prompt-submit']['in_hook_ms'], 50):.0f} ms (hybrid), against "
                     f"{pct(s['in_process']['hybrid'], 50):.0f} ms for a hybrid `Store.search` in a warm process, "
                     f"while session-start through the worker takes {pct(w['samples']['start'], 50):.0f} ms wall.")
        L += [line, ""]
    runs = sorted((OUT / "recall").glob("latency-run-*.json"))
    if len(runs) > 1:
        L += ["Every run so far (bench/out/recall/latency-run-*.json), p50 ms, and the hook / floor ratio; "
              "\"product code\" is a hash of subcog_store/*.py when the size started (other engineers change it "
              "while benches run):", ""]
        rows = []
        for f in runs:
            r = json.loads(f.read_text())
            for s in r["sizes"]:
                plain = s["fresh"]["in_process"]["samples"]
                floor = pct(plain["floor"], 50)
                cells = [r["date"], s.get("code", "n/a"), f"{s['n']:,}", f"{s['load']:.1f}", f"{pct(s['in_process']['hybrid'], 50):.1f}",
                         f"{pct(s['in_process']['text'], 50):.1f}", f"{floor:.0f}",
                         f"{pct(plain['imports'], 50):.0f}" if plain.get("imports") else "n/a",
                         f"{pct(plain['prompt'], 50):.0f} (x{pct(plain['prompt'], 50) / floor:.1f})",
                         f"{pct(plain['start'], 50):.0f} (x{pct(plain['start'], 50) / floor:.1f})"]
                w = s["fresh"].get("worker")
                cells.append(f"{pct(w['samples']['prompt'], 50):.0f} (x{pct(w['samples']['prompt'], 50) / pct(w['samples']['floor'], 50):.1f})"
                             if w else "n/a")
                rows.append(cells)
        L += [md_table(["run", "product code", "size", "load (1 min)", "search hybrid", "search text", "floor", "imports",
                        "prompt hook, no worker", "session-start, no worker", "prompt hook, worker"], rows), ""]
    if res.get("worker_note"):
        L += [res["worker_note"], ""]
    L += ["Targets:", ""]
    L += [md_table(["target", "measured", "met"], res["targets"]), ""]
    return "\n".join(L) + "\n"


def md_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def write_section(text: str) -> None:
    old = RESULTS.read_text() if RESULTS.exists() else "# Recall benchmark results (issue #10, Measured)\n"
    if LATENCY_MARK in old:
        old = old[:old.index(LATENCY_MARK)]
    RESULTS.write_text(old.rstrip("\n") + "\n\n" + text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=30, help="samples per measure and round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of fresh-process samples")
    parser.add_argument("--no-worker", action="store_true", help="skip the warm-worker measurement")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    from bench.recall.bench_recall import machine

    sizes = sorted(int(s) for s in args.sizes.split(","))
    info = machine()
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    corpus = corpus_mod.build(max(100_000, max(sizes)))
    vectors, _, emb = corpus_mod.embeddings(corpus, max(sizes), log=log)
    log(f"embeddings: {emb['cached']} cached, {emb['embedded_now']} embedded now")
    queries = [t for t in corpus.queries]
    res: dict = {"machine": info, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": args.runs,
                 "rounds": args.rounds, "sizes": []}
    has_worker = (Path(__file__).resolve().parents[2] / "subcog_store" / "worker" / "server.py").exists()
    home = Path(tempfile.mkdtemp(prefix="subcog-recall-latency-"))
    try:
        for n in sizes:
            t0 = time.perf_counter()
            cached = build(n, corpus.sentences, vectors)
            work = working_copy(cached, n)
            log(f"{n:,}: store ready in {time.perf_counter() - t0:.1f} s; in process ...")
            entry: dict = {"n": n, "load": os.getloadavg()[0], "fresh": {}, "code": code_hash()}
            entry["in_process"] = in_process(work, queries, min(200, 4 * args.runs))
            log(f"{n:,}: fresh processes without the worker ...")
            env = env_for(home / "plain", worker=False)
            tag = f"plain-{n}"
            f = fresh(work, queries[400:], env, args.runs, args.rounds, tag)
            f["log"] = recall_log(work, tag)
            entry["fresh"]["in_process"] = f
            if has_worker and not args.no_worker:
                wenv = env_for(home / "worker", worker=True)
                started = worker_ctl(wenv, "start")
                if started.get("rc") == 0 and started.get("state") == "running":
                    log(f"{n:,}: fresh processes through the warm worker (pid {started.get('pid')}) ...")
                    tag = f"worker-{n}"
                    try:
                        f = fresh(work, queries[600:], wenv, args.runs, args.rounds, tag)
                        f["log"] = recall_log(work, tag)
                        entry["fresh"]["worker"] = f
                    finally:
                        entry["worker_stop"] = worker_ctl(wenv, "stop")
                else:
                    res["worker_note"] = f"The warm worker did not start ({json.dumps(started)[:300]}): not measured."
            res["sizes"].append(entry)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    res["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    by_n = {s["n"]: s for s in res["sizes"]}
    targets = []
    if 10_000 in by_n:
        s = by_n[10_000]
        for key, label in (("hybrid", "hybrid, embedding the query"), ("text", "text side alone")):
            v = pct(s["in_process"][key], 50)
            targets.append([f"`search` p50 < 20 ms at 10k ({label})", f"{v:.1f} ms", "yes" if v < 20 else "no"])
        for mode, label in (("in_process", "no worker: text side"), ("worker", "warm worker: hybrid")):
            if mode in s["fresh"]:
                v = pct(s["fresh"][mode]["samples"]["prompt"], 50)
                floor = pct(s["fresh"][mode]["samples"]["floor"], 50)
                targets.append([f"prompt hook p50 < 150 ms as a fresh process at 10k ({label})",
                                f"{v:.0f} ms (floor {floor:.0f} ms)", "yes" if v < 150 else "no"])
    res["targets"] = targets
    (OUT / "recall").mkdir(parents=True, exist_ok=True)
    raw = json.dumps(res, indent=1, default=str)
    (OUT / "recall" / "latency-last.json").write_text(raw)
    (OUT / "recall" / f"latency-run-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.json").write_text(raw)
    text = report(res)
    print(text)
    if not args.no_write:
        write_section(text)
        log(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
