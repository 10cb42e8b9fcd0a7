"""The guard's figures (issue #14): the current guard (commit 5c13cbd) beside the new one, in one run.

Run from the project root: `.venv/bin/python -m bench.bench_guard`. Both guards judge the same pairs with the
same cosines (the store's int8 all-MiniLM-L6-v2, what `eval-pairs` measures: the captured text's best neighbour
is the other text of its pair); the new one also gets the model's phrase similarity, as the store supplies it.
A pair is flagged (skipped as a duplicate) iff cosine >= threshold, no changed fact and support >= SUPPORT_MIN.
Prints and writes bench/guard/results.md: the issue's table at the store's default threshold, the trade-off
by threshold, guard time per pair, and the README's changed facts and paraphrases. Constants were chosen on
MRPC train and PAWS dev only (bench/calibrate_guard.py); MRPC test and STS test are read here, for reporting.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
import types
from typing import Callable

from bench.calibrate_guard import (
    RESULTS, ROOT, THRESHOLDS, PhraseCache, Row, cell, data_dir, flagged, judge_all, load, new_judge, paws_cells,
    score)

CURRENT = "5c13cbd"  # the guard before issue #14
Judge = Callable[[str, str], tuple[bool, float]]

# The README's examples: changed facts (never skipped) and paraphrases (still duplicates); and issue #14's.
CHANGED = [
    ("The cache TTL is 5 minutes.", "The cache TTL is 10 minutes."),
    ("The auth service calls the billing service.", "The billing service calls the auth service."),
    ("Always run the migrations inside a transaction.", "Never run the migrations inside a transaction."),
    ("Set the connection pool size to 20.", "Set the connection pool size to 50."),
    ("We upgraded Node to 18.17.", "We upgraded Node to 20.5."),
    ("The frontend calls the gateway.", "The gateway calls the frontend."),
    ("Rate limiting is enabled on the public API.", "Rate limiting is not enabled on the public API."),
    ("Connection pool for DuckDB in sync is capped at 2 connections per instance.",
     "Connection pool for DuckDB in auth is capped at 2 connections per instance."),
    ("We moved from MySQL to Postgres.", "We moved from Postgres to MySQL."),
    ("The album was recorded in 2005 and published in 2006.", "The album was recorded in 2006 and published in 2005."),
    ("Sullivan defeated Denny in the final.", "Denny defeated Sullivan in the final."),
    ("We use Redis for the session cache.", "We use Memcached for the session cache."),
]
SAME = [
    ("We use Redis for the session store.", "Sessions are kept in Redis."),
    ("The API returns 404 when the user does not exist.", "If the user doesn't exist, the API responds with 404."),
    ("We decided to use PostgreSQL connection pooling through PgBouncer in transaction mode, because the app opens "
     "a new session per request and the database hit its max_connections limit during the load test.",
     "We chose PgBouncer in transaction mode for Postgres connection pooling since every request opens its own "
     "session and we ran out of max_connections in the load test."),
    ("We moved from MySQL to Postgres.", "We moved to Postgres from MySQL."),
    ("Two children are playing in the park.", "Two kids are playing in the park."),
    ("These are the top hotels in the city.", "These are the best hotels in the city."),
]


def current_guard() -> types.ModuleType:
    """The guard of commit 5c13cbd, loaded from git into a module of its own."""
    source = subprocess.run(["git", "show", f"{CURRENT}:subcog_store/text/guard.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType(f"guard_{CURRENT}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{CURRENT}:subcog_store/text/guard.py", "exec"), module.__dict__)
    return module


def current_judge(module: types.ModuleType) -> Judge:
    return lambda a, b: (module.changed_fact(a, b).changed, module.lexical_support(a, b))


def default_threshold() -> float:
    try:
        from subcog_store.config import SPECS
        return float(SPECS["dedup_threshold_default"].default)  # type: ignore[arg-type]
    except (ImportError, KeyError, TypeError, ValueError):
        return 0.90


def time_per_pair(judge: Judge, texts: list[tuple[str, str]], clear: Callable[[], None]) -> tuple[float, float]:
    """Mean and median ms per pair, text caches cleared before each run (a capture's neighbours are new); the
    best of three runs per pair, so that other work on the machine does not count."""
    times = []
    for a, b in texts:
        best = float("inf")
        for _ in range(3):
            clear()
            start = time.perf_counter()
            judge(a, b)
            best = min(best, time.perf_counter() - start)
        times.append(best * 1000)
    return statistics.fmean(times), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    if not data_dir().is_dir():
        print(f"bench_guard: {data_dir()} is absent; nothing to measure (set SUBCOG_SHARED_DIR)")
        return 0
    from subcog_store.dedup.rule import judge
    from subcog_store.text import guard

    t = default_threshold()
    old = current_guard()
    ps = PhraseCache()
    judges: dict[str, Judge] = {"current": current_judge(old), "new": new_judge(ps)}
    floor = min(THRESHOLDS + [t])
    sets = {name: load(name) for name in ("PAWS dev", "MRPC test", "STS test")}
    rows: dict[tuple[str, str], list[Row]] = {}
    calls: dict[str, tuple[int, int]] = {}
    for name, (pairs, cos) in sets.items():
        for which, j in judges.items():
            before = ps.calls
            rows[name, which] = judge_all(pairs, cos, floor, j)
            if which == "new":
                calls[name] = (ps.calls - before, sum(c >= floor for c in cos))
    ps.save()
    out = [f"# Guard figures: current ({CURRENT}) and new, one run", "",
           f"Threshold {t} (the store's default, namespace `context`); flagged = skipped as a duplicate. STS: all "
           "1,197 kept pairs (score >= 4.6 same fact, < 4.0 not), no length minimum. Cells: flagged / precision / "
           "recall.", "",
           "| set | cosine only | current guard | new guard | target |", "| --- | --- | --- | --- | --- |"]
    paws = {w: rows["PAWS dev", w] for w in judges}
    cos_only = [r.cosine >= t for r in paws["current"]]
    cur, new = (paws_cells(paws[w], flagged(paws[w], t)) for w in ("current", "new"))
    base = paws_cells(paws["current"], cos_only)
    out.append(f"| PAWS dev, same words, label 0 | {base[0]} | {cur[0]} | {new[0]} | at most 5% |")
    out.append(f"| PAWS dev, all label 0 (label-1 recall) | {base[1]} ({base[2]}) | {cur[1]} ({cur[2]}) | "
               f"{new[1]} ({new[2]}) | at most 10% |")
    for name, target in (("MRPC test", "P >= 0.96 at R >= 0.30"), ("STS test", "P >= 0.93 at R >= 0.52")):
        r_cur, r_new = rows[name, "current"], rows[name, "new"]
        labels = [r.label for r in r_cur]
        out.append(f"| {name} | {cell([r.cosine >= t for r in r_cur], labels)} | {cell(flagged(r_cur, t), labels)} "
                   f"| {cell(flagged(r_new, t), labels)} | {target} |")
    out += ["", "## Trade-off by threshold (flagged / precision / recall; PAWS: label-0 pairs flagged)", "",
            "| threshold | MRPC test current | MRPC test new | STS test current | STS test new "
            "| PAWS same words L0 current | new | PAWS L0 current | new |",
            "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for th in THRESHOLDS:
        cells = []
        for name in ("MRPC test", "STS test"):
            labels = [r.label for r in rows[name, "current"]]
            cells += [cell(flagged(rows[name, w], th), labels) for w in judges]
        pc = [paws_cells(paws[w], flagged(paws[w], th)) for w in judges]
        cells += [pc[0][0].split(" (")[1].rstrip(")"), pc[1][0].split(" (")[1].rstrip(")"),
                  pc[0][1].split(" (")[1].rstrip(")"), pc[1][1].split(" (")[1].rstrip(")")]
        out.append(f"| {th:.2f} | " + " | ".join(cells) + " |")
    # best point per set for the new guard: highest recall at the precision target
    out += ["", "Highest recall of the new guard at the precision target, any threshold 0.80-0.96:"]
    for name, p_min in (("MRPC test", 0.96), ("STS test", 0.93)):
        labels = [r.label for r in rows[name, "new"]]
        best = max(((score(flagged(rows[name, "new"], th), labels), th) for th in THRESHOLDS),
                   key=lambda x: (x[0][1] >= p_min, x[0][2] if x[0][1] >= p_min else x[0][1]))
        (n, p, r), th = best
        out.append(f"- {name}: {n} / {p:.3f} / {r:.3f} at {th:.2f}")

    # what the word-order rules cost: the new guard with them switched off (for the trade-off only)
    keep_order = guard._order_check
    guard._order_check = lambda older, newer: guard.SAME  # type: ignore[assignment]
    try:
        no_order = {name: judge_all(*sets[name], floor, new_judge(ps)) for name in sets}
    finally:
        guard._order_check = keep_order  # type: ignore[assignment]
    out += ["", f"The word-order rules are what PAWS needs and what costs MRPC recall; the new guard without them, "
            f"at {t}:", ""]
    sw0, l0, rec = paws_cells(no_order["PAWS dev"], flagged(no_order["PAWS dev"], t))
    out.append(f"- PAWS dev same words label 0 {sw0}, all label 0 {l0} (recall {rec}); " + "; ".join(
        f"{name} {cell(flagged(no_order[name], t), [r.label for r in no_order[name]])}"
        for name in ("MRPC test", "STS test")))

    # the README's figures, new guard: cosine only / + changed-fact guard / + guard + shared content
    def readme_cells(rows_: list[Row], th: float, min_length: int = 0) -> list[str]:
        labels = [r.label for r in rows_]
        long = [len(" ".join(r.pair.b.split())) >= min_length for r in rows_]
        exact = [" ".join(r.pair.a.lower().split()) == " ".join(r.pair.b.lower().split()) for r in rows_]
        rules = ([r.cosine >= th for r in rows_], [r.cosine >= th and not r.changed for r in rows_], flagged(rows_, th))
        out_ = []
        for f in rules:
            n, p, r = score([e or (ln and x) for e, ln, x in zip(exact, long, f)], labels)
            out_.append(f"{n} / {p:.4g} / {r:.4g}")
        return out_
    out += ["", f"## README figures, new guard (threshold {t}; flagged / precision / recall)", "",
            "| set | cosine only | + changed-fact guard | + guard + shared content (the store's rule) |",
            "|---|---|---|---|"]
    for label_, name, min_length in (("MRPC test (1,725 pairs), default settings", "MRPC test", 50),
                                     ("STS test (1,197 kept pairs), `SUBCOG_DEDUP_MIN_SEMANTIC_LENGTH=0`", "STS test",
                                      0),
                                     ("STS test, default settings (minimum length 50)", "STS test", 50)):
        c = readme_cells(rows[name, "new"], t, min_length)
        out.append(f"| {label_} | {c[0]} | {c[1]} | **{c[2]}** |")
    for name, min_length in (("MRPC test", 50), ("STS test", 0)):
        out += ["", f"{name}, by threshold (minimum length {min_length}):", "",
                "| threshold | cosine only: flagged / P / R | + changed-fact guard | + guard + shared content |",
                "|---|---|---|---|"]
        for th in THRESHOLDS + [0.98]:
            c = readme_cells(rows[name, "new"], th, min_length)
            out.append(f"| {th:.2f} | " + " | ".join(c) + " |")

    # speed: the guard alone (no phrase similarity), caches cleared per pair; then what the model costs
    texts = [(p.a, p.b) for p in sets["MRPC test"][0]]
    speed_cur = time_per_pair(judges["current"], texts, old.tokens.cache_clear)

    def clear_new() -> None:
        for f in (guard.tokens, guard._order_tokens, guard._names):
            f.cache_clear()
    speed_new = time_per_pair(new_judge(None), texts, clear_new)

    def clear_all() -> None:
        clear_new()
        guard._split_token.cache_clear()
        guard._stem.cache_clear()
    speed_cold = time_per_pair(new_judge(None), texts, clear_all)
    embed_times = []
    for i in range(40):
        start = time.perf_counter()
        ps.embedder.embed(f"phrase number {i} for timing")
        embed_times.append((time.perf_counter() - start) * 1000)
    embed_ms = statistics.median(embed_times)
    out += ["", "## Guard time per pair (MRPC test, all 1,725 pairs; text caches cleared per pair, word caches warm)",
            "",
            "| guard | mean ms | median ms |", "| --- | ---: | ---: |",
            f"| current | {speed_cur[0]:.3f} | {speed_cur[1]:.3f} |",
            f"| new, without phrase similarity | {speed_new[0]:.3f} | {speed_new[1]:.3f} |",
            f"| new, word caches cleared too | {speed_cold[0]:.3f} | {speed_cold[1]:.3f} |", "",
            f"Phrase similarity: one uncached phrase costs {embed_ms:.1f} ms (median) to embed on this machine; a "
            "call embeds two phrases, each once per process (the store caches per phrase). Calls the new guard made, "
            "per judged pair (cosine >= "
            f"{floor:.2f}): " + ", ".join(f"{n} {c / max(p, 1):.3f} ({c} calls / {p} pairs)"
                                          for n, (c, p) in calls.items()) + "."]

    out += ["", "## The README's and the issue's examples (new guard, with and without phrase similarity)", "",
            "| older | newer | current | new | new, no model |", "| --- | --- | --- | --- | --- |"]
    for kind, pairs in (("changed fact", CHANGED), ("paraphrase", SAME)):
        for a, b in pairs:
            verdicts = []
            for v in (judges["current"](a, b), judge(a, b, 1.0, ps), judge(a, b, 1.0, None)):
                if isinstance(v, tuple):
                    verdicts.append("changed" if v[0] else ("duplicate" if v[1] >= guard.SUPPORT_MIN else
                                                            "low support"))
                else:
                    verdicts.append(f"changed ({v.changed_fact.split(':')[0]})" if v.changed_fact else
                                    "duplicate" if v.agrees else "low support")
            out.append(f"| {a[:60]} | {b[:60]} | " + " | ".join(verdicts) + f" |  <!-- {kind} -->")
    ps.save()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "results.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))
    print(f"written to {RESULTS / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
