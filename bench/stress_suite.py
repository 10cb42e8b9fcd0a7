"""The whole test suite, N times in a row, beside CPU-bound processes: the tests are deterministic on a busy
machine (issue 22), or this says which ones are not.

    python -m bench.stress_suite [--runs 5] [--spinners 2] [--nice 10] [--keep DIR] [-- PYTEST ARGS]
    python -m bench.stress_suite --runs 1 -- tests/test_layout.py     # a quick check of the script itself

Starts `--spinners` processes running `python3 -c 'while 1: pass'` (two on a 2-core machine: every core busy),
then runs `python -m pytest -q -p no:cacheprovider` (plus PYTEST ARGS) `--runs` times, one after the other, and
prints for each run its result, duration and failed tests, then a summary line. The spinners are killed at the
end whatever happens. Exit 0 only when every run passed. The figures (and the machine's load around them) go to
bench/RESULTS.md by hand.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIN = "while 1: pass"


def spinners(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(count)]


def run_suite(args: list[str], nice: int, output: Path | None = None) -> tuple[bool, float, float, str]:
    """One run of the suite: (passed, wall seconds, CPU seconds of the suite and its processes, its summary line
    and failed tests). The CPU seconds bound what the suite takes on 2 idle cores (at least half of them).
    `output`: where pytest's whole output goes (the failures' tracebacks), besides."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(["nice", "-n", str(nice), sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if output is not None:
        output.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = proc.stdout.splitlines()
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    summary = next((line for line in reversed(lines) if re.search(r"\d+ (passed|failed)", line)),
                   f"exit {proc.returncode}, no summary line (-qq hides it)")
    return proc.returncode == 0, seconds, cpu, "\n".join([summary, *failed])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--spinners", type=int, default=2)
    parser.add_argument("--nice", type=int, default=0, help="niceness of the suite (the spinners stay at 0)")
    parser.add_argument("--keep", type=Path, help="a directory for each run's whole pytest output (run-N.txt)")
    parser.add_argument("pytest_args", nargs="*")
    opts = parser.parse_args(argv)
    busy = spinners(opts.spinners)
    results = []
    try:
        print(f"{opts.spinners} CPU-bound processes beside the suite; {os.cpu_count()} cores; load "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        for i in range(1, opts.runs + 1):
            kept = None
            if opts.keep is not None:
                opts.keep.mkdir(parents=True, exist_ok=True)
                kept = opts.keep / f"run-{i}.txt"
            passed, seconds, cpu, detail = run_suite(opts.pytest_args, opts.nice, kept)
            results.append(passed)
            print(f"run {i}: {'passed' if passed else 'FAILED'} in {seconds:.0f} s, {cpu:.0f} CPU s (load "
                  f"{os.getloadavg()[0]:.1f}): {detail}", flush=True)
    finally:
        for proc in busy:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    print(f"{sum(results)} of {len(results)} runs passed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
