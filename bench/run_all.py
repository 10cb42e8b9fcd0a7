"""`make bench`: run every benchmark module that exists, in order, and print all their figures.

Contract for a bench module listed in BENCHES: it defines `main(argv: list[str] | None) -> int` and prints its
figures as Markdown (tables, a baseline measured in the same run, PASS/MISS per target). A full run calls
`main([])`. `--quick` calls `main(QUICK_ARGS)`, a list the module may define (default: QUICK below, else []).
A module that does not exist yet is skipped; one that fails is reported and makes the exit code non-zero,
and the others still run.

    python -m bench.run_all [--quick] [--only bench_store,...]
"""
from __future__ import annotations

import argparse
import os

# The numpy brute-force baselines run single-threaded, like a vec0 KNN (set before numpy is imported).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib  # noqa: E402
import importlib.util
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

BENCHES = ["bench.bench_store", "bench.bench_hook", "bench.bench_dedup", "bench.bench_mcp", "bench.bench_onnx_threads",
           "bench.bench_guard", "bench.recall.bench_recall", "bench.recall.bench_recall_latency",
           "bench.capture.bench_capture", "bench.bench_history"]
QUICK = {"bench.bench_store": ["--quick"], "bench.bench_dedup": ["--sizes", "1000,10000"],
         "bench.bench_hook": ["--quick"], "bench.bench_onnx_threads": ["--rounds", "2"],
         "bench.recall.bench_recall_latency": ["--sizes", "1000,10000", "--runs", "10"],
         "bench.bench_history": ["--sizes", "10,40", "--huge-mb", "0"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every bench (a fast, rough run)")
    parser.add_argument("--only", help="comma-separated module names (e.g. bench_store)")
    args = parser.parse_args(argv)
    wanted = BENCHES
    if args.only:
        names = {n.strip().removeprefix("bench.") for n in args.only.split(",") if n.strip()}
        wanted = [m for m in BENCHES if m.removeprefix("bench.") in names]
    summary: list[tuple[str, str, float]] = []
    failed = False
    for name in wanted:
        if importlib.util.find_spec(name) is None:
            summary.append((name, "skipped (module does not exist yet)", 0.0))
            continue
        print(f"\n# {name}\n", flush=True)
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(name)
            forwarded = list(getattr(module, "QUICK_ARGS", QUICK.get(name, []))) if args.quick else []
            code = module.main(forwarded)
            status = "ok" if not code else f"exit code {code}"
            failed |= bool(code)
        except SystemExit as e:
            status = "ok" if not e.code else f"exit code {e.code}"
            failed |= bool(e.code)
        except Exception:
            traceback.print_exc()
            status = "FAILED (traceback above)"
            failed = True
        summary.append((name, status, time.perf_counter() - t0))
        sys.stdout.flush()
    print("\n# Summary\n")
    print("| bench | status | seconds |\n| --- | --- | --- |")
    for name, status, seconds in summary:
        print(f"| {name} | {status} | {seconds:.0f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
