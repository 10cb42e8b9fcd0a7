"""Where the warm worker's prompt and pre-compact time goes, beside a baseline tree: `python -m bench.bench_warm_trace`.

    python -m bench.bench_warm_trace --baseline ../wt-22-base [--reps 12] [--size 10000] [--cache-off] [--sections]

Three warm workers at once (four with `--cache-off`), each with its own runtime directory and store copies, their
runs in rotating order (A B C, B C A, ...): this checkout; this checkout with SUBCOG_SESSION_TEXT_ENABLED=false
(what issue 25's session text costs); with `--cache-off`, also with session text and the vector cache off
(bench/warm_probe/sitecustomize.py: what its first load on a new store file costs); the baseline tree's code
(bench_hook's --tree way: this checkout's bench and interpreter, the tree's package first on the path, its
installed hook script). Per run and tree: user-prompt-submit on a new
copy of the store (bench_hook's way: a store file the worker has never seen), user-prompt-submit on one store
file kept for the whole run (a user's store: the worker's caches of it stay loaded), and pre-compact (a) on a
new copy (18-19 new candidates; its background capture awaited). For each, the hook process's wall time, its
CPU time (the client side: the hook script, its imports and the socket exchange) and the worker's own time (its
"answered in" log line: from the start of the hook's run to its answer, without the request's handshake).
`--sections` adds this checkout's prompt hook run in this process the way the worker runs it (caches on, model
loaded, one store file), timed by section. After the table: each worker's cache loads from its log ("vectorcache:
loaded N rows in S s", the same for bitcache: a load runs in a background thread of the worker, once for each
store file it has not seen), and for each tree the new-file prompt's worker time less the kept-file prompt's (the
price of a file seen for the first time).
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import bench_hook as bh

ROOT = Path(__file__).resolve().parents[1]
CACHE_LOAD = re.compile(r"(vectorcache|bitcache): loaded (\d+) rows in ([\d.]+) s")


def cache_loads(log_file: Path) -> dict[str, list[float]]:
    """cache -> the seconds of each load the worker's log records (the 10,000-row loads of the measured files)."""
    found: dict[str, list[float]] = collections.defaultdict(list)
    text = log_file.read_text(errors="replace") if log_file.exists() else ""
    for cache, rows, secs in CACHE_LOAD.findall(text):
        if int(rows) >= 1000:
            found[cache].append(float(secs))
    return found


def trees(baseline: Path, cache_off: bool = False) -> dict[str, tuple[Path, dict[str, str]]]:
    out = {"today": (ROOT, {}), "today, session text off": (ROOT, {"SUBCOG_SESSION_TEXT_ENABLED": "false"})}
    if cache_off:   # bench/warm_probe/sitecustomize.py, imported by the worker at start-up, switches the cache off
        out["today, session text and vector cache off"] = (ROOT, {
            "SUBCOG_SESSION_TEXT_ENABLED": "false", "BENCH_WARM_VECTOR_CACHE_OFF": "1",
            "PYTHONPATH": f"{ROOT / 'bench' / 'warm_probe'}{os.pathsep}{ROOT}"})
    return out | {"baseline": (baseline.resolve(), {})}


def prepare(tmp: Path, size: int, baseline: Path, log, cache_off: bool = False) -> dict[str, dict]:
    """Each tree's stores (built by its own code), its environment, and its worker, started."""
    sentences, vectors, _ = bh.corpus_vectors(size, log)
    state = {}
    for i, (name, (tree, extra)) in enumerate(trees(baseline, cache_off).items()):
        home = tmp / f"t{i}"
        (home / "run").mkdir(parents=True, mode=0o700)
        bh.TREE = tree
        transcript = home / "transcript.jsonl"
        bh.make_transcript(transcript)
        base = home / "store.db"
        bh.build_store(base, sentences, vectors)
        pre = bh.prepared_store(home, base, size, transcript)
        environ = bh.env(home, worker=True, **extra)
        same = home / "same.db"
        bh.fresh_copy(pre, same)
        state[name] = {"tree": tree, "home": home, "transcript": transcript, "base": base, "pre": pre,
                       "same": same, "env": environ, "copies": 0}
        bh.worker_cli("stop", environ)
        bh.worker_cli("start", environ)
    return state


def run_one(s: dict, event: str, source: Path | None, payload: bytes) -> tuple[float, float, float | None]:
    """One installed hook run through the tree's warm worker: wall ms, the hook process's CPU ms, the worker's."""
    bh.TREE = s["tree"]
    if source is None:
        db = s["same"]
    else:
        s["copies"] += 1
        db = s["home"] / f"w-{s['copies']}.db"
        bh.fresh_copy(source, db)
    log_file = s["home"] / "hook.log"
    mark = log_file.stat().st_size if log_file.exists() else 0
    cpu: list[float] = []
    ms, _ = bh.run_hook(db, payload, s["env"], event, installed=True, cpu=cpu)
    worker = bh._worker_ms(log_file, mark)
    if event == "pre-compact":
        bh._settled_ms(log_file, mark)
    return ms, cpu[0], worker


def measure(state: dict[str, dict], reps: int, log) -> dict[tuple[str, str, str], list]:
    found: dict[tuple[str, str, str], list] = collections.defaultdict(list)
    for s in state.values():   # first requests, not measured
        for i in range(2):
            run_one(s, "pre-compact", s["base"], bh.payload(s["transcript"], f"warm-{i}"))
            run_one(s, "user-prompt-submit", None, bh.prompt_payload(f"warm-{i}"))
    names = list(state)
    for i in range(reps):
        for name in names[i % len(names):] + names[:i % len(names)]:
            s = state[name]
            for case, event, source, payload in (
                    ("prompt, new store file", "user-prompt-submit", s["pre"], bh.prompt_payload(f"p-{i}")),
                    ("prompt, the same store file", "user-prompt-submit", None, bh.prompt_payload(f"q-{i}")),
                    ("pre-compact (a), new store file", "pre-compact", s["base"],
                     bh.payload(s["transcript"], f"a-{i}"))):
                for key, value in zip(("wall", "client CPU", "worker"), run_one(s, event, source, payload)):
                    found[(case, name, key)].append(value)
        log(f"round {i + 1} of {reps} (load {os.getloadavg()[0]:.1f})")
    return found


def sections(size: int, reps: int) -> list[list[str]]:
    """This checkout's prompt hook in this process as the worker runs it (caches on, model loaded), section times."""
    from subcog_store.claude_code import entry, recall_hooks
    from subcog_store.claude_code.request import HookRequest
    from subcog_store.db import bitcache, memories as db_memories, search as db_search
    from subcog_store.model import provider
    from subcog_store.recall import inject, search

    bitcache.enable_from_settings()
    spent: dict[str, float] = collections.defaultdict(float)

    def timed(module, name: str) -> None:
        inner = getattr(module, name)

        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return inner(*a, **kw)
            finally:
                spent[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] += time.perf_counter() - t0
        setattr(module, name, wrapper)

    for module, names in ((inject, ["search_with_user_scope", "_add_session_text"]),
                          (search, ["_embed", "_nearest", "_hits", "held_words"]),
                          (db_search, ["text_matches", "term_counts", "candidates", "searchable"]),
                          (db_memories, ["active_in_domain"]), (recall_hooks, ["_begin", "_bookkeeping"])):
        for name in names:
            timed(module, name)
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp_name:
        tmp = Path(tmp_name)
        sentences, vectors, _ = bh.corpus_vectors(size, lambda *a: None)
        bh.TREE = None
        db = tmp / "store.db"
        bh.build_store(db, sentences, vectors)
        environ = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
        environ.update(SUBCOG_HOOK_LOG=str(tmp / "hook.log"), SUBCOG_HOOK_DOMAIN=bh.DOMAIN)
        answers: list[float] = []
        for i in range(reps + 5):
            request = HookRequest.of("user-prompt-submit", {"db": str(db)}, bh.prompt_payload(f"s-{i}"), environ,
                                     budget_secs=15.0, embedders=provider.SHARED, use_model=True)
            t0, got = time.perf_counter(), []
            entry.run(request, on_answer=lambda _: got.append(time.perf_counter() - t0))
            if i == 4:
                spent.clear()   # the first five load the model and the caches
            elif i > 4:
                answers.append(got[0] * 1000 if got else float("nan"))
    rows = [["answer (from the start of the hook's run)", f"{statistics.median(answers):.2f}"]]
    rows += [[name, f"{total / reps * 1000:.2f}"] for name, total in sorted(spent.items(), key=lambda kv: -kv[1])]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the baseline source tree")
    parser.add_argument("--reps", type=int, default=12)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--sections", action="store_true", help="also this checkout's prompt hook by section")
    parser.add_argument("--cache-off", action="store_true",
                        help="also this checkout with session text and the vector cache off (bench/warm_probe)")
    args = parser.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
    import compileall

    for tree in (ROOT, args.baseline):
        compileall.compile_dir(str(tree / "subcog_store"), quiet=1)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp_name:
        state = prepare(Path(tmp_name), args.size, args.baseline, log, args.cache_off)
        try:
            found = measure(state, args.reps, log)
        finally:
            for s in state.values():
                bh.TREE = s["tree"]
                bh.worker_cli("stop", s["env"])
        loads = {name: cache_loads(s["home"] / "hook.log") for name, s in state.items()}
    names = list(trees(args.baseline, args.cache_off))
    print(f"Warm workers, store of {args.size} memories, {args.reps} rounds in rotating order, medians in ms; "
          f"load {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; {os.cpu_count()} cores\n")
    header = ["case", "figure", *names, *(f"{n} / baseline" for n in names[:-1]), "worker fell back"]
    rows = []
    for case in dict.fromkeys(c for c, _, _ in found):
        for key in ("wall", "client CPU", "worker"):
            values = {n: [v for v in found[(case, n, key)] if v is not None] for n in names}
            med = {n: statistics.median(v) if v else float("nan") for n, v in values.items()}
            misses = ",".join(str(len(found[(case, n, key)]) - len(values[n])) for n in names)
            rows.append([case, key, *(f"{med[n]:.1f}" for n in names),
                         *(f"{med[n] / med[names[-1]]:.2f}" for n in names[:-1]), misses])
    print(bh.md_table(header, rows))
    print("\nCache loads in each worker's log (ms: median, max; count) and the first sight of a file (worker ms: "
          "prompt on a new file less prompt on the kept file, medians):\n")
    cache_rows = []
    for n in names:
        cells = [f"{statistics.median(v) * 1000:.0f}, {max(v) * 1000:.0f}; {len(v)}" if (v := loads[n].get(c))
                 else "none" for c in ("vectorcache", "bitcache")]
        new, kept = ([x for x in found[(c, n, "worker")] if x is not None]
                     for c in ("prompt, new store file", "prompt, the same store file"))
        first = statistics.median(new) - statistics.median(kept) if new and kept else float("nan")
        cache_rows.append([n, *cells, f"{first:.1f}"])
    print(bh.md_table(["tree", "vectorcache loads", "bitcache loads", "new file less kept file (worker)"],
                      cache_rows))
    if args.sections:
        print("\nThis checkout's prompt hook in this process, as the worker runs it (caches on, model loaded, one "
              f"store file), {args.reps} runs, ms a run:\n")
        print(bh.md_table(["section", "ms"], sections(args.size, args.reps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
