"""Issue 29's faults, each injected the way it was found, on throw-away stores: `python -m bench.faults`.

Cases (the issue's numbering):
 1. recall under a held write lock: SessionStart and UserPromptSubmit, in process and through the warm worker,
    while another process holds the store's write lock for LOCK_SECS (a long `dedup`, a second session's capture);
 2. the MCP server after its database file was deleted, then replaced by another;
 3. one unreadable pending-capture record beside a valid one;
 4. a clock that jumps back an hour (an injected clock), and the capacity prune after it;
 5. rewordings stored at the same moment: twelve facts and a rewording of each by 24 processes released together
    from a barrier, half embedding through the warm worker; and eight processes looping over exact repeats,
    rewordings and new texts;
 6. a database with a damaged data page: search, capture, a capture hook;
 7. the MCP server given its requests and the end of its input at once;
 9. a worker request whose `wait` is not a number.
Per case it prints trials, answered within budget, lost (answers or memories that should be there and are not),
stored twice, errors; the target is trials = within budget and zero elsewhere. `--repeat 2 --burners 2` (the
default) runs everything twice with two CPU-bound processes beside it; `--cost` adds the price of item 5's
re-check on the capture path, measured against the same captures without it. Writes its section of
bench/torture/RESULTS.md (`--no-write`: print only).
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.faults_cases import CASES, ISSUE_22_CASES, Ctx, Row, recheck_cost

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "torture" / "RESULTS.md"
BEGIN, END = "<!-- bench.faults: begin -->", "<!-- bench.faults: end -->"
COLUMNS = ("trials", "within_budget", "lost", "twice", "errors")
BURN = "while True:\n    pass\n"


def burners(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(n)]


def run_all(args: argparse.Namespace, work: Path, python: str = sys.executable, label: str = "run") -> list[list]:
    runs = []
    for r in range(args.repeat if label == "run" else 1):
        rows = []
        pool = {**CASES, **ISSUE_22_CASES}
        chosen = args.only.split(",") if args.only else [*CASES, *(ISSUE_22_CASES if args.with_22 else [])]
        for key, case in pool.items():
            if key not in chosen:
                continue
            ctx = Ctx(work / f"{label}{r}" / key, args, python)
            started = time.monotonic()
            print(f"[{time.strftime('%H:%M:%S')}] {label} {r + 1}: {key} ...", flush=True)
            try:
                row = case(ctx)
            except Exception as e:  # noqa: BLE001 - a case that breaks is a finding; the others go on
                row = Row(key, errors=1)
                row.note(f"case failed: {type(e).__name__}: {e}")
            finally:
                ctx.close()
            row.seconds = time.monotonic() - started
            print(f"    {row.line()}", flush=True)
            rows.append(row)
        runs.append(rows)
    return runs


def table(rows: list) -> str:
    out = ["| case | " + " | ".join(COLUMNS) + " | seconds |", "|" + "---|" * (len(COLUMNS) + 2)]
    for row in rows:
        out.append(f"| {row.name} | " + " | ".join(str(getattr(row, c)) for c in COLUMNS) + f" | {row.seconds:.0f} |")
    return "\n".join(out)


def clean(rows: list) -> bool:
    return all(r.trials == r.within_budget and r.lost == r.twice == r.errors == 0 for r in rows)


def write_results(runs: list[list], baseline: list[list], cost: str | None, args: argparse.Namespace, load: tuple,
                  minutes: float, work: Path) -> None:
    from bench.torture import machine, scrub

    info = machine()
    lines = [BEGIN, "", "## Issue 29's faults (`python -m bench.faults`)", "",
             f"Each case injected as it was found (see `bench/faults.py`), {args.repeat} run(s) in a row with "
             f"{args.burners} CPU-bound processes beside them (plus the rest of the machine's load). Columns: "
             "trials; answered within budget (the client's timeouts: 10 s SessionStart, 5 s UserPromptSubmit, 30 s "
             "a capture hook, which must also handle its minimum of work; a "
             "tool or command answered at all); lost (an answer without its content, a memory acknowledged or "
             "due and missing, a request without an answer); twice (a fact stored twice); errors (a wrong exit "
             "code, output the client rejects, a write into a damaged file, an exception). Target: trials = "
             "within budget, zero elsewhere.", ""]
    if baseline:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.baseline, capture_output=True,
                                text=True).stdout.strip()
        lines += [f"Baseline, the same cases once against commit {commit} (before these fixes), same load:", "",
                  table(baseline[0]), ""]
    for n, rows in enumerate(runs):
        lines += [f"Run {n + 1}:", "", table(rows), ""]
    notes = [(f"baseline: {r.name}", scrub(note, work)) for rows in baseline for r in rows for note in r.notes]
    notes += [(r.name, scrub(note, work)) for rows in runs for r in rows for note in r.notes]
    if notes:
        lines += ["Notes:", ""] + [f"- {name}: {note}" for name, note in notes[:60]] + [""]
    if cost:
        lines += [cost, ""]
    lines += [f"Machine: {info['cpu']}, {info['memory']}; Python {info['python']}, SQLite {info['sqlite']}; commit "
              f"{info['commit']}; load average at the start {load[0]}, at the end {load[1]}; {minutes:.1f} minutes.",
              "", END]
    old = RESULTS.read_text() if RESULTS.exists() else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + "\n".join(lines) + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
    RESULTS.write_text(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs in a row (default 2)")
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside it (default 2)")
    parser.add_argument("--only", help="comma-separated cases: " + ", ".join([*CASES, *ISSUE_22_CASES]))
    parser.add_argument("--lock-secs", type=float, default=30.0, help="how long the write lock is held (case 1)")
    parser.add_argument("--loop-secs", type=float, default=60.0, help="how long the eight writers loop (case 5)")
    parser.add_argument("--with-22", action="store_true", help="also items 8 and 10 (issue 22's): " +
                        ", ".join(ISSUE_22_CASES))
    parser.add_argument("--case-minutes", type=float, default=40.0, help="case 8 stops after this long (default 40)")
    parser.add_argument("--cost", action="store_true", help="also measure item 5's re-check on the capture path")
    parser.add_argument("--baseline", metavar="TREE", help="first run every case once against another checkout "
                        "with its own .venv (e.g. the commit before the fixes, in a `git worktree add --detach`)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="subcog-faults-"))
    logging.basicConfig(filename=work / "bench.log", level=logging.INFO)   # the library's own lines, not stderr
    load = (tuple(round(x, 2) for x in os.getloadavg()),)
    began = time.monotonic()
    burning = burners(args.burners)
    try:
        baseline = run_all(args, work, str(Path(args.baseline) / ".venv" / "bin" / "python"), "baseline") \
            if args.baseline else []
        runs = run_all(args, work)
        cost = recheck_cost(work / "cost") if args.cost else None
    finally:
        for proc in burning:
            proc.kill()
            proc.wait()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    load += (tuple(round(x, 2) for x in os.getloadavg()),)
    if baseline:
        print(f"\nBaseline ({args.baseline}):\n{table(baseline[0])}")
    for n, rows in enumerate(runs):
        print(f"\nRun {n + 1}:\n{table(rows)}")
    if cost:
        print("\n" + cost)
    if not args.no_write and not args.only:
        write_results(runs, baseline, cost, args, load, (time.monotonic() - began) / 60, work)
        print(f"\nwritten: {RESULTS.relative_to(REPO)}")
    return 0 if all(clean(rows) for rows in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
