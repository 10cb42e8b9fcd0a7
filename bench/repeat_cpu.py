"""The exact-repeat hook run "(b)" in two or more checkouts side by side: CPU ms of the hook process.

    python -m bench.repeat_cpu TREE [TREE ...] [--rounds 6] [--repeats 3] [--scenarios session-a,bench]

Case (b): a transcript already captured is run again as a new session (a new session id, so the read offset
skips nothing): every candidate is an exact repeat, the model is never loaded. Scenarios: `session-a` (the
shared sample `samples/transcripts/session-a.jsonl`: 9 assistant texts, 8 candidates) and `bench` (bench_hook's
generated 2,000-record transcript, 20 candidates). The same transcript file feeds every tree.

Method, so the trees differ only in their code:
- the same launcher for every tree: the tree's own `.venv/bin/python` (its editable install points at the tree)
  runs `-c "from subcog_store.cli.main import main; ..." --db DB hook pre-compact`, cwd a temporary directory;
- every tree byte-compiled first (`compileall` of `subcog_store/`, so no run pays a compile) and one warm-up run;
- each tree's store is filled by its own code (a first pre-compact of the transcript, budget 600 s), then each
  timed run gets a fresh copy of that store; all in process (SUBCOG_WORKER_ENABLED=false), budget 600 s (a run
  the load slows is never cut short), nothing on stderr and exit 0 required, the status line printed;
- CPU = user + system of the reaped hook process, `resource.getrusage(RUSAGE_CHILDREN)` before and after;
- `--rounds` rounds x `--repeats` runs per tree and scenario; the trees' order rotates with every run (A B, B A,
  ... ; with three trees A B C, B C A, C A B), so drift in the machine's load spreads over all of them;
- the bare interpreter's floor per tree (the same python, `-c "import json,sys; json.load(sys.stdin)"`), in the
  same rotation;
- medians with the spread (min-max, quartiles), the ratio of medians to the LAST tree given (the baseline), and
  the ratio per round (each round's medians) to show whether it is stable; the 1-minute load per round.

Run it at nice 0 while others run at nice 10 (`--nice` renices this process and so its children). Nothing is
written in the trees but byte-code (`__pycache__`); everything else lives in a temporary directory.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT.parent / "shared" / "samples" / "transcripts"
LAUNCHER = "import sys; from subcog_store.cli.main import main; sys.argv[0] = 'subcog-store'; sys.exit(main())"
FLOOR = "import json,sys; json.load(sys.stdin)"
SCENARIOS = ("session-a", "bench")


def transcript_for(scenario: str, work: Path) -> Path:
    """The transcript one scenario replays: the shared sample, or bench_hook's generated one."""
    if scenario == "session-a":
        for path in (SAMPLES / "session-a.jsonl", ROOT / "samples" / "session-a.jsonl"):
            if path.is_file():
                return path
        raise SystemExit("session-a.jsonl not found (../shared/samples/transcripts or samples/)")
    if scenario == "bench":
        from bench.bench_hook import make_transcript

        path = work / "bench-transcript.jsonl"
        make_transcript(path)
        return path
    raise SystemExit(f"unknown scenario {scenario!r}: one of {', '.join(SCENARIOS)}")


def children_cpu_ms() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def environ(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBCOG_", "PYTHON"))}
    env.update(SUBCOG_WORKER_ENABLED="false", SUBCOG_HOOK_LOG=str(work / "hook.log"), SUBCOG_HOOK_DOMAIN="bench",
               SUBCOG_HOOK_BUDGET_SECS="600", XDG_RUNTIME_DIR=str(work / "run"))
    return env


def reaped(argv: list[str], stdin: bytes, work: Path) -> tuple[float, bytes]:
    """Run one process to its end: its CPU ms (user + system, from the kernel's accounting) and its stdout."""
    before = children_cpu_ms()
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=environ(work), cwd=work, timeout=900)
    cpu = children_cpu_ms() - before
    if proc.returncode != 0 or proc.stderr:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}, stderr {proc.stderr[-400:]!r}")
    return cpu, proc.stdout


def first_line(out: bytes) -> str:
    text = out.decode(errors="replace").strip()
    return text.splitlines()[0] if text else ""


def payload(transcript: Path, session: str) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": "/home/dev/shop",
                       "trigger": "manual", "hook_event_name": "PreCompact"}).encode()


class Tree:
    """One checkout: its python, its filled stores, its timings."""

    def __init__(self, path: Path, work: Path):
        self.path = path
        self.python = path / ".venv" / "bin" / "python"
        if not self.python.is_file():
            raise SystemExit(f"{path}: no .venv/bin/python")
        self.work = work
        (work / "run").mkdir(parents=True, mode=0o700)
        git = ["git", "-C", str(path)]
        self.commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        self.name = self.commit + ("+dirty" if dirty else "")
        self.full: dict[str, Path] = {}
        self.said: dict[str, set[str]] = {}
        self.cpu: dict[str, list[list[float]]] = {}

    def compile(self) -> None:
        subprocess.run([str(self.python), "-m", "compileall", "-q", str(self.path / "subcog_store")], check=True,
                       capture_output=True)

    def hook(self, db: Path, stdin: bytes) -> tuple[float, bytes]:
        return reaped([str(self.python), "-c", LAUNCHER, "--db", str(db), "hook", "pre-compact"], stdin, self.work)

    def fill(self, scenario: str, transcript: Path) -> str:
        """The store the repeats run on: the transcript captured once by this tree's code."""
        db = self.work / f"{scenario}.db"
        _, out = self.hook(db, payload(transcript, f"fill-{scenario}"))
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        self.full[scenario] = db
        self.cpu[scenario] = []
        self.said[scenario] = set()
        return first_line(out)

    def repeat(self, scenario: str, transcript: Path, run: int) -> float:
        db = self.work / "run.db"
        shutil.copyfile(self.full[scenario], db)
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        cpu, out = self.hook(db, payload(transcript, f"repeat-{scenario}-{run}"))
        self.said[scenario].add(first_line(out))
        return cpu

    def floor(self) -> float:
        return reaped([str(self.python), "-c", FLOOR], payload(Path("/x.jsonl"), "floor"), self.work)[0]


def spread(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return f"{statistics.median(values):.0f} (q {q[0]:.0f}-{q[2]:.0f}, {min(values):.0f}-{max(values):.0f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path, help="checkouts; the last one is the baseline")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3, help="runs per tree, scenario and round")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--nice", type=int, default=0, help="renice this process (and its children) first")
    opts = parser.parse_args(argv)
    if len(opts.trees) < 2:
        parser.error("give two trees or more (the last is the baseline)")
    if opts.nice:
        os.nice(opts.nice)
    scenarios = [s.strip() for s in opts.scenarios.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="bench-repeat-cpu-") as tmp:
        trees = [Tree(p.resolve(), Path(tmp) / f"t{i}") for i, p in enumerate(opts.trees)]
        transcripts = {s: transcript_for(s, Path(tmp)) for s in scenarios}
        floors: dict[int, list[float]] = {i: [] for i in range(len(trees))}
        for tree in trees:
            tree.compile()
            for s in scenarios:
                said = tree.fill(s, transcripts[s])
                tree.repeat(s, transcripts[s], -1)          # warm-up: caches, byte-code of what fill missed
                print(f"{tree.name} ({tree.path}) {s}: first run said {said[:90]!r}", flush=True)
        loads = [os.getloadavg()[0]]
        print(f"nice {os.nice(0)}; {opts.rounds} rounds x {opts.repeats} runs a tree and scenario, order rotating "
              f"run by run; {os.cpu_count()} cores; load at start {loads[0]:.2f}", flush=True)
        turn = 0
        for rnd in range(opts.rounds):
            for s in scenarios:
                got = {i: [] for i in range(len(trees))}
                for rep in range(opts.repeats):
                    for k in range(len(trees)):
                        i = (k + turn) % len(trees)
                        got[i].append(trees[i].repeat(s, transcripts[s], rnd * opts.repeats + rep))
                    turn += 1
                for i in got:
                    trees[i].cpu[s].append(got[i])
            for k in range(len(trees)):
                i = (k + turn) % len(trees)
                floors[i].append(trees[i].floor())
            turn += 1
            loads.append(os.getloadavg()[0])
            print(f"round {rnd + 1}: load {loads[-1]:.2f}; " + "; ".join(
                f"{s} " + " / ".join(f"{statistics.median(t.cpu[s][-1]):.0f}" for t in trees) for s in scenarios),
                flush=True)
        base = trees[-1]
        print(f"\nCPU ms of the hook process, (b) every candidate an exact repeat; median (quartiles, min-max) of "
              f"{opts.rounds * opts.repeats} runs; ratio to {base.name} (the last tree); load {min(loads):.2f}-"
              f"{max(loads):.2f}, nice {os.nice(0)}")
        print("\n| scenario | " + " | ".join(t.name for t in trees) + " | " +
              " | ".join(f"{t.name} / {base.name}" for t in trees[:-1]) + " | per-round ratios |")
        print("|---|" + "---:|" * (2 * len(trees)))
        for s in scenarios:
            flat = [[c for r in t.cpu[s] for c in r] for t in trees]
            ratios = [statistics.median(f) / statistics.median(flat[-1]) for f in flat[:-1]]
            per_round = [", ".join(f"{statistics.median(t.cpu[s][r]) / statistics.median(base.cpu[s][r]):.2f}"
                                   for r in range(opts.rounds)) for t in trees[:-1]]
            print(f"| (b) {s} | " + " | ".join(spread(f) for f in flat) + " | " +
                  " | ".join(f"{r:.2f}" for r in ratios) + " | " + "; ".join(per_round) + " |")
        fl = [floors[i] for i in range(len(trees))]
        print("| bare interpreter | " + " | ".join(spread(f) for f in fl) + " | " +
              " | ".join(f"{statistics.median(f) / statistics.median(fl[-1]):.2f}" for f in fl[:-1]) + " | |")
        print()
        for t in trees:
            for s in scenarios:
                print(f"{t.name} (b) {s} said: {' | '.join(sorted(t.said[s]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
