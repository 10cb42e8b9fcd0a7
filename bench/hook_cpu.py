"""The hooks in process, this checkout beside a baseline checkout: CPU seconds as well as wall time, run by run
alternating, so a loaded machine still gives a fair comparison: `python -m bench.hook_cpu --baseline TREE`.

Wall time on a shared, busy machine measures the scheduler as much as the code; the CPU time a hook process
spends (user + system, from the kernel's accounting of the child) barely depends on the load. Each checkout runs
with its own `.venv` and builds its own store (its own schema): per repetition, alternating which checkout goes
first, on a fresh copy of its store:

- (a) pre-compact of samples/session-a.jsonl into an empty store (every candidate new: extraction, the model,
  the writes);
- (b) pre-compact of the same transcript under a new session id into the store (a) filled (every candidate a repeat);
- session-start (source startup: the project index) and user-prompt-submit on that store.

All in process (SUBCOG_WORKER_ENABLED=false), with a 600 s budget (so a run the load slows is never cut short and
the two do the same work), under `nice`. Prints per case the median CPU and wall ms of each
checkout and the ratios today / baseline.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("(a) pre-compact, every candidate new", "(b) pre-compact, every candidate a repeat",
         "session-start (startup)", "user-prompt-submit")
PROMPT = "How do we pool the Postgres connections, PgBouncer in transaction mode?"


def run_case(tree: Path, case: str, stores: dict, work: Path, rep: int, nice: int) -> tuple[float, float]:
    transcript = tree / "samples" / "session-a.jsonl"
    db = work / "run.db"
    if case == CASES[0]:
        shutil.copyfile(stores["empty"], db)
        event, payload = "pre-compact", {"session_id": f"a{rep}", "transcript_path": str(transcript), "cwd": "/",
                                         "trigger": "manual", "hook_event_name": "PreCompact"}
    elif case == CASES[1]:
        shutil.copyfile(stores["full"], db)
        event, payload = "pre-compact", {"session_id": f"b{rep}", "transcript_path": str(transcript), "cwd": "/",
                                         "trigger": "manual", "hook_event_name": "PreCompact"}
    elif case == CASES[2]:
        shutil.copyfile(stores["full"], db)
        event, payload = "session-start", {"session_id": f"s{rep}", "cwd": "/", "source": "startup",
                                           "hook_event_name": "SessionStart"}
    else:
        shutil.copyfile(stores["full"], db)
        event, payload = "user-prompt-submit", {"session_id": f"p{rep}", "cwd": "/", "prompt": PROMPT,
                                                "hook_event_name": "UserPromptSubmit"}
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    cpu, wall, _ = hook_reaped(tree, db, event, payload, work, nice)
    return cpu, wall


def hook_reaped(tree: Path, db: Path, event: str, payload: dict, work: Path, nice: int) -> tuple[float, float, bytes]:
    """One hook process, its CPU time from the kernel (wait4 on the child we started and did not reap)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    env.update(SUBCOG_WORKER_ENABLED="false", SUBCOG_HOOK_LOG=str(work / "hook.log"), SUBCOG_HOOK_DOMAIN="bench",
               SUBCOG_HOOK_BUDGET_SECS="600",   # the whole transcript each time: a load-cut run compares nothing
               XDG_RUNTIME_DIR=str(work / "run"))
    argv = ["nice", "-n", str(nice), str(tree / ".venv" / "bin" / "subcog-store"), "--db", str(db), "hook", event]
    stdin = work / "stdin.json"
    stdin.write_text(json.dumps(payload))
    out_path = work / "stdout.txt"
    started = time.monotonic()
    with open(stdin, "rb") as fin, open(out_path, "wb") as fout:
        pid = os.posix_spawn(argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0]), argv, env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, fin.fileno(), 0),
                                           (os.POSIX_SPAWN_DUP2, fout.fileno(), 1),
                                           (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
        _, status, usage = os.wait4(pid, 0)
    wall = (time.monotonic() - started) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{tree}: hook {event} exited {status}")
    return (usage.ru_utime + usage.ru_stime) * 1000, wall, out_path.read_bytes()


def build(tree: Path, work: Path, nice: int) -> dict:
    """An empty store and one holding the transcript's memories, made by the tree's own code."""
    empty, full = work / "empty.db", work / "full.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    env.update(SUBCOG_WORKER_ENABLED="false")
    subprocess.run([str(tree / ".venv" / "bin" / "subcog-store"), "--db", str(empty), "stats"], cwd=tree, env=env,
                   capture_output=True, check=True)
    shutil.copyfile(empty, full)
    transcript = tree / "samples" / "session-a.jsonl"
    _, _, out = hook_reaped(tree, full, "pre-compact", {"session_id": "fill", "transcript_path": str(transcript),
                                                        "cwd": "/", "trigger": "manual"}, work, nice)
    for db in (empty, full):
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    return {"empty": empty, "full": full, "said": out.decode(errors="replace").strip()[:100]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--nice", type=int, default=10)
    opts = parser.parse_args(argv)
    trees = {"today": ROOT, "baseline": opts.baseline.resolve()}
    commits = {k: subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=t, capture_output=True,
                                 text=True).stdout.strip() for k, t in trees.items()}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench-hook-cpu-") as tmp:
        works = {k: Path(tmp) / k for k in trees}
        stores = {}
        for k, tree in trees.items():
            (works[k] / "run").mkdir(parents=True, mode=0o700)
            stores[k] = build(tree, works[k], opts.nice)
        print(f"hooks in process, today {commits['today']} beside {commits['baseline']}, {opts.reps} runs a case "
              f"alternating, nice {opts.nice}; filled stores: today {stores['today']['said']!r}; baseline "
              f"{stores['baseline']['said']!r}", flush=True)
        got = {k: {c: ([], []) for c in CASES} for k in trees}
        for rep in range(opts.reps):
            order = ["today", "baseline"] if rep % 2 == 0 else ["baseline", "today"]
            for case in CASES:
                for k in order:
                    cpu, wall = run_case(trees[k], case, stores[k], works[k], rep, opts.nice)
                    got[k][case][0].append(cpu)
                    got[k][case][1].append(wall)
            load.append(os.getloadavg()[0])
    print(f"\n| case | baseline {commits['baseline']} CPU ms | today {commits['today']} CPU ms | CPU today / "
          "baseline | baseline wall ms | today wall ms | wall today / baseline |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in CASES:
        bc, tc = (statistics.median(got[k][case][0]) for k in ("baseline", "today"))
        bw, tw = (statistics.median(got[k][case][1]) for k in ("baseline", "today"))
        print(f"| {case} | {bc:.0f} | {tc:.0f} | {tc / bc:.2f} | {bw:.0f} | {tw:.0f} | {tw / bw:.2f} |")
    print(f"\n1-minute load during the run: {min(load):.1f}-{max(load):.1f}; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
