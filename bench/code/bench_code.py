"""Memories that know the code, measured at 10,000 memories and 5,000 files (issue 28).

A generated project (a git repository of 4,500 Python modules and 500 YAML files, one commit) and a store of
10,000 memories of its domain: 70% name a file, a function, a class or a settings value of it (four shapes), 30%
name no code; each with a random unit vector (the KNN costs what it costs at 10k). Then:

1. citing: `cite` of the 10,000 memories (the command memories stored before get theirs with), its time;
2. the session-start check (`code.verify.check_project`) in the library, three ways: nothing changed since the
   last check (the usual session start), 50 files edited (a pull), every file touched (a branch switch: 5,000
   new mtimes, content unchanged; bounded by SUBCOG_CODE_CHECK_SECS, the rest left for the next start);
3. the hooks as Claude Code runs them (`python -S -P .../hook/command.py EVENT`, through the warm worker),
   interleaved run by run: today's session-start (SUBCOG_CODE_CHECK_SECS=0: the index only) beside the
   session-start with the check, user-prompt-submit (the prompt hook: the latency budget recall on touch must
   keep), post-tool-use on a cited file and on an uncited one, and the interpreter floor.

Everything lives in a temporary directory, deleted at the end; the worker is this run's own and is stopped.

    python -m bench.code.bench_code [--memories 10000] [--files 5000] [--reps 15] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HOOK = [sys.executable, "-S", "-P", str(ROOT / "subcog_store" / "hook" / "command.py")]
CLI = [str(Path(sys.executable).parent / "subcog-store")]
BUDGET_MS = 500.0           # SUBCOG_CODE_CHECK_SECS's default: the check's own bound at session start


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


# -- the project and the store ----------------------------------------------------------------------------------
def make_project(root: Path, files: int, rng: random.Random) -> list[tuple[str, str, str, str]]:
    """`files` files in a git repository; returns per module (path, function, class, setting key, value)."""
    yaml_files = files // 10
    modules = []
    for i in range(files - yaml_files):
        pkg, rel = i // 50, f"pkg_{i // 50}/mod_{i}.py"
        func, cls, key, value = f"handle_{i}", f"PaymentService{i}", f"TIMEOUT_{i}", str(rng.randint(1, 600))
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i} of package {pkg}."""\n{key} = {value}\n\n\ndef {func}(request):\n'
                        f"    return request\n\n\nclass {cls}:\n    def run(self):\n        return {func}(self)\n")
        modules.append((rel, func, cls, key, value))
    for i in range(yaml_files):
        rel = f"config/svc_{i}.yaml"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        value = str(rng.randint(1, 100))
        path.write_text(f"# service {i}\npool_size_{i}: {value}\nlog_level: info\n")
        modules.append((rel, "", "", f"pool_size_{i}", value))
    git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@example.com"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "project"]):
        subprocess.run(git + cmd, check=True, capture_output=True)
    return modules


def memory_texts(modules: list, n: int, rng: random.Random) -> list[str]:
    shapes = [
        lambda m: f"`{m[3]}` is {m[4]} in {m[0]}, tuned after the load test.",
        lambda m: f"{m[1]}() in {m[0]} returns the request unchanged, so callers must validate it first."
        if m[1] else f"`{m[3]}` is {m[4]} in {m[0]}.",
        lambda m: f"{m[2]} wraps its handler and is created once per worker process." if m[2] else
        f"{m[0]} holds the pool settings of one service.",
        lambda m: f"The settings of this module live in {m[0]}; change them there, never in code.",
    ]
    out = []
    for i in range(n):
        if rng.random() < 0.3:
            out.append(f"We decided to keep decision number {i} about the deploy pipeline in the team notes.")
        else:
            out.append(shapes[i % len(shapes)](modules[rng.randrange(len(modules))]) + f" (review {i})")
    return out


def build_store(db: Path, texts: list[str], domain: str, rng: np.random.Generator) -> None:
    from subcog_store.clock import iso
    from subcog_store.db.connection import connect, immediate
    from subcog_store.db.memories import add_vector
    from subcog_store.db.sqlfiles import q

    vectors = rng.standard_normal((len(texts), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    con = connect(db)
    now = time.time()
    with immediate(con):
        for i, text in enumerate(texts):
            at = iso(now - 86400 - (len(texts) - i) * 60)
            seq, _ = con.execute(q("insert_memory"), {
                "id": f"{i:012x}", "domain": domain, "namespace": "learnings", "content": text,
                "importance": 0.5, "tags": "[]", "source": "bench", "session_id": None, "created_at": at,
                "now": at}).fetchone()
            add_vector(con, seq, "learnings", domain, vectors[i].tobytes())
    con.close()


def age(root: Path, seconds: float = 120) -> None:
    """Every file modified `seconds` ago (outside the check's racy window, as a project's files usually are)."""
    past = time.time() - seconds
    for here, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            os.utime(os.path.join(here, name), (past, past))


# -- measuring --------------------------------------------------------------------------------------------------
def pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p)) if values else float("nan")


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def check_library(db: Path, project: Path, domain: str, modules: list, reps: int) -> list[list]:
    """The check in the library: unchanged, 50 files edited, every file touched (bounded)."""
    from subcog_store.code.verify import check_project
    from subcog_store.store import Store

    rows = []
    with Store(db, fetch_model=False) as store:
        check_project(store, project, domain, time.monotonic() + 30)   # `age` touched every file after `cite`
        times = []
        for _ in range(reps):
            times.append(check_project(store, project, domain, time.monotonic() + 30).ms)
        report = check_project(store, project, domain, time.monotonic() + 30)
        rows.append(["nothing changed since the last check", reps, f"{pct(times, 50):.1f}", f"{pct(times, 95):.1f}",
                     report.files, report.read, "yes" if report.complete else "no"])
        times, reads = [], []
        for r in range(reps):
            for rel, *_ in random.Random(r).sample(modules, 50):
                path = project / rel
                path.write_text(path.read_text() + f"# edit {r}\n")
                os.utime(path, (time.time() - 60, time.time() - 60))
            report = check_project(store, project, domain, time.monotonic() + 30)
            times.append(report.ms)
            reads.append(report.read)
        rows.append(["50 files edited (a pull)", reps, f"{pct(times, 50):.1f}", f"{pct(times, 95):.1f}",
                     report.files, f"{statistics.median(reads):.0f}", "yes" if report.complete else "no"])
        times, done, starts = [], [], []
        for r in range(max(3, reps // 3)):
            stamp = time.time() - 30 - r
            for rel, *_ in modules:
                os.utime(project / rel, (stamp, stamp))
            report = check_project(store, project, domain, time.monotonic() + BUDGET_MS / 1000)
            times.append(report.ms)
            done.append(report.complete)
            starts.append(1)
            while not report.complete:   # what the next session starts finish
                report = check_project(store, project, domain, time.monotonic() + BUDGET_MS / 1000)
                starts[-1] += 1
        rows.append([f"every file touched (a branch switch), within {BUDGET_MS:.0f} ms", len(times),
                     f"{pct(times, 50):.1f}", f"{pct(times, 95):.1f}", report.files, "as many as fit",
                     f"{sum(done)} of {len(done)} in one start; all in {statistics.median(starts):.0f} starts "
                     f"(median)"])
    return rows


def run(cmd: list[str], stdin: bytes, environ: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=environ, timeout=120)
    ms = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0 or proc.stderr:
        raise RuntimeError(f"{cmd[-1]}: exit {proc.returncode} {proc.stderr[-300:]!r}")
    return ms, proc.stdout.decode()


def hooks(tmp: Path, db: Path, project: Path, modules: list, reps: int) -> tuple[list[list], list[str]]:
    """The hooks through the warm worker, interleaved run by run."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    base.update(SUBCOG_HOOK_LOG=str(tmp / "hook.log"), XDG_RUNTIME_DIR=str(tmp / "run"), SUBCOG_DB=str(db))
    (tmp / "run").mkdir(mode=0o700, exist_ok=True)
    today = {**base, "SUBCOG_CODE_CHECK_SECS": "0"}
    import sqlite3

    with sqlite3.connect(db) as con:    # the file most memories cite
        cited = con.execute("select path from citations group by path order by count(distinct memory_id) desc "
                            "limit 1").fetchone()[0]
    subprocess.run([*CLI, "worker", "start"], env=base, capture_output=True, timeout=120, check=True)
    cases = {
        "floor": ([sys.executable, "-c", "import json,sys; json.load(sys.stdin)"], None, base),
        "start_today": (HOOK + ["session-start"], "start", today),
        "start_check": (HOOK + ["session-start"], "start", base),
        "prompt": (HOOK + ["user-prompt-submit"], "prompt", base),
        "touch_cited": (HOOK + ["post-tool-use"], cited, base),
        "touch_other": (HOOK + ["post-tool-use"], "README.md", base),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    said: dict[str, str] = {}
    try:
        for i in range(reps + 2):
            for key, (cmd, what, environ) in cases.items():
                session = f"{key}-{i}"
                if what == "start":
                    stdin = {"session_id": session, "source": "startup", "cwd": str(project)}
                elif what == "prompt":
                    stdin = {"session_id": session, "cwd": str(project),
                             "prompt": "Which timeout does the payment module use under load?"}
                elif what is None:
                    stdin = {"session_id": session}
                else:
                    stdin = {"session_id": session, "cwd": str(project), "tool_name": "Read",
                             "tool_input": {"file_path": str(project / what)}, "tool_response": {}}
                ms, out = run(cmd, json.dumps(stdin).encode(), environ)
                if i >= 2:                    # two warm-up rounds
                    times[key].append(ms)
                said[key] = out[:60]
            log(f"  hooks: round {i + 1} of {reps + 2} (load {os.getloadavg()[0]:.1f})")
    finally:
        subprocess.run([*CLI, "worker", "stop"], env=base, capture_output=True, timeout=120)
    names = {"floor": "interpreter floor (`python -c 'import json,sys; json.load(sys.stdin)'`)",
             "start_today": "session-start, today's (index only: SUBCOG_CODE_CHECK_SECS=0)",
             "start_check": "session-start with the code check",
             "prompt": "user-prompt-submit (the prompt hook)",
             "touch_cited": f"post-tool-use, Read of a cited file ({cited})",
             "touch_other": "post-tool-use, Read of a file no memory cites"}
    rows = [[names[k], len(v), f"{pct(v, 50):.0f}", f"{pct(v, 95):.0f}", "yes" if said[k] else "nothing"]
            for k, v in times.items()]
    worker_ms = [float(x.split("answered in ")[1].split(" ms")[0]) for x in
                 (tmp / "hook.log").read_text().splitlines() if "session-start answered in" in x]
    notes = [f"the worker's own time for session-start (both kinds), p50 {pct(worker_ms, 50):.0f} ms"]
    return rows, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="1,000 memories, 500 files, 5 runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.memories, args.files, args.reps = 1000, 500, 5
    from subcog_store.code.record import cite_existing
    from subcog_store.scope import domain_for
    from subcog_store.store import Store

    tmp = Path(tempfile.mkdtemp(prefix="subcog-bench-code-"))
    try:
        project, db = tmp / "project", tmp / "memories.db"
        rng = random.Random(28)
        t0 = time.perf_counter()
        modules = make_project(project, args.files, rng)
        domain = domain_for(project)
        texts = memory_texts(modules, args.memories, rng)
        build_store(db, texts, domain, np.random.default_rng(28))
        log(f"project of {args.files} files and store of {args.memories} memories in {time.perf_counter() - t0:.0f} s")
        with Store(db, fetch_model=False) as store:
            report = cite_existing(store, project, domain, time.monotonic() + 3600)
            citations = store.con.execute("select count(*), count(distinct path) from citations").fetchone()
        age(project)
        print(f"\n## Memories that know the code: {args.memories} memories, {args.files} files "
              f"(load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)\n")
        print(f"`cite` of {report.memories} memories: {report.ms / 1000:.1f} s; {report.cited} cite the code, "
              f"{citations[0]} citations of {citations[1]} files\n")
        rows = check_library(db, project, domain, modules, args.reps)
        print(table(["the check in the library", "runs", "p50 ms", "p95 ms", "cited files", "files read",
                     "complete"], rows))
        hook_rows, notes = hooks(tmp, db, project, modules, args.reps)
        print("\nThe hooks through the warm worker, whole process (interleaved):\n")
        print(table(["hook", "runs", "p50 ms", "p95 ms", "output"], hook_rows))
        for note in notes:
            print(f"\n{note}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
