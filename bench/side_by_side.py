"""One benchmark, this checkout beside a baseline checkout, in the same run: `python -m bench.side_by_side`.

    python -m bench.side_by_side --baseline TREE [--rounds 3] [--nice 10] [--tree-flag=--tree] -- MODULE ARGS
    python -m bench.side_by_side --baseline ../wt-22-base --tree-flag=--tree -- bench.bench_hook --sizes 10000 --reps 5

Runs `python -m MODULE ARGS` from each checkout with that checkout's own `.venv` (so each builds its stores with its
own schema and code), alternating A B B A ... so the shared machine's drift spreads over both, each under
`nice`. With `--tree-flag FLAG` both rounds run this checkout's bench instead, the baseline's with `FLAG TREE`
added (a bench that can run another tree's code, as bench_hook's `--tree`): the baseline is measured by the same
bench (one that reports a run missing its budget as a figure, where an older bench stopped).

Every markdown table the bench prints is read: a cell that starts with a number (`12`, `0.28 / 0.58`, `4/5`: the
first number) is one figure, keyed by its table's first header, its row's first cell and its column. Prints, per
figure, the median over the rounds of each tree and the ratio today / baseline, with the machine's load around
each run. The raw outputs are kept in bench/out/side_by_side/.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "side_by_side"
NUMBER = re.compile(r"^\s*\**(-?\d+(?:[.,]\d+)*)")
SKIP_COLUMNS = {"memories", "runs"}


def run_once(tree: Path, module: str, args: list[str], nice: int, tree_flag: str | None = None
             ) -> tuple[str, float, tuple[float, float]]:
    """One run of the bench: from `tree` with its own .venv, or (`tree_flag`) this checkout's bench with
    `tree_flag tree` (this checkout's round too, so both trees' code is run the same way)."""
    if tree_flag:
        python, cwd = ROOT / ".venv" / "bin" / "python", ROOT
        args = [*args, tree_flag, str(tree)]
    else:
        python, cwd = tree / ".venv" / "bin" / "python", tree
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    proc = subprocess.run(["nice", "-n", str(nice), str(python), "-m", module, *args], cwd=cwd,
                          capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {module} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout, seconds, (load_before, os.getloadavg()[0])


def figures(output: str) -> dict[tuple[str, str, str], float]:
    """Every numeric cell of every markdown table in `output`, keyed (table, row, column)."""
    found: dict[tuple[str, str, str], float] = {}
    header: list[str] | None = None
    for line in output.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue
        for column, cell in zip(header[1:], cells[1:]):
            match = NUMBER.match(cell)
            if match and column not in SKIP_COLUMNS:
                found[(header[0], cells[0], column)] = float(match.group(1).replace(",", ""))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout (with its own .venv)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("--tree-flag", help="run this checkout's bench for both, the baseline's round with this flag "
                                            "and the baseline's path (e.g. --tree for bench.bench_hook)")
    parser.add_argument("module", help="the bench module, e.g. bench.bench_hook")
    parser.add_argument("--saved", action="store_true",
                        help="run nothing: report the outputs kept in bench/out/side_by_side/ (a run cut short)")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    trees = {"today": ROOT, "baseline": opts.baseline.resolve()}
    commits = {name: subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True,
                                    text=True).stdout.strip() for name, tree in trees.items()}
    OUT.mkdir(parents=True, exist_ok=True)
    if opts.saved:
        seen = {name: [figures(p.read_text()) for p in sorted(OUT.glob(f"{opts.module}-{name}-*.txt"))]
                for name in trees}
        print(f"{opts.module}: the kept outputs, {len(seen['today'])} of today, {len(seen['baseline'])} of the "
              "baseline")
        report(seen, commits)
        return 0
    print(f"{opts.module} {' '.join(opts.args)}: today {commits['today']} beside {commits['baseline']}, "
          f"{opts.rounds} rounds (A B B A ...), nice {opts.nice}"
          + (f", this checkout's bench for both (the baseline's with {opts.tree_flag} TREE)" if opts.tree_flag else "")
          + f"; {platform.machine()}, {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    seen: dict[str, list[dict]] = {"today": [], "baseline": []}
    for r in range(opts.rounds):
        order = ["today", "baseline"] if r % 2 == 0 else ["baseline", "today"]
        for name in order:
            output, seconds, load = run_once(trees[name], opts.module, opts.args, opts.nice, opts.tree_flag)
            (OUT / f"{opts.module}-{name}-{r + 1}.txt").write_text(output)
            seen[name].append(figures(output))
            print(f"round {r + 1} {name} ({commits[name]}): {seconds:.0f} s, load {load[0]:.1f} -> {load[1]:.1f}",
                  flush=True)
    report(seen, commits)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def report(seen: dict[str, list[dict]], commits: dict[str, str]) -> None:
    """The figures both trees gave in every run: medians, the ratio, each run's value."""
    keys = [k for k in seen["today"][0] if all(k in f for runs in seen.values() for f in runs)]
    print("\n| table | row | column | baseline " + commits["baseline"] + " (median) | today " + commits["today"]
          + " (median) | today / baseline | today, each round | baseline, each round |")
    print("|---|---|---|---:|---:|---:|---|---|")
    for key in keys:
        base = [f[key] for f in seen["baseline"]]
        today = [f[key] for f in seen["today"]]
        mb, mt = statistics.median(base), statistics.median(today)
        ratio = f"{mt / mb:.2f}" if mb else "-"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {mb:g} | {mt:g} | {ratio} | "
              f"{', '.join(f'{v:g}' for v in today)} | {', '.join(f'{v:g}' for v in base)} |")


if __name__ == "__main__":
    sys.exit(main())
