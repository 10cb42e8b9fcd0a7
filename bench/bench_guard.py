"""The duplicate rule's figures (issue 23): the rule before (commit BASE, loaded from git) beside the working
tree's, on every target of the issue, in one run.

Run from the project root: `nice .venv/bin/python -m bench.bench_guard [--sick PATH] [--no-batch]`. Both rules
judge the same pairs with the same cosines (the store's int8 all-MiniLM-L6-v2) and the same phrase similarity
(the model on short phrases, as the store supplies it). A pair is flagged (skipped as a duplicate) iff its
cosine reaches the threshold and the rule agrees. Prints and writes bench/guard/results.md. The new rule's
constants come from bench/calibrate_guard.py (training sources only); everything here is a report.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass


from bench.guard.baseline import BASE, baseline_verdict, new_verdict
from bench.guard.data import HERE, PairSet, PhraseCache, available, load

THRESHOLD = 0.90                       # the store's default (namespace context)
THRESHOLDS = [round(0.80 + 0.02 * i, 2) for i in range(9)]
FLOOR = min(THRESHOLDS)
SETS = ("coding test", "coding train", "PAWS dev", "MRPC test", "MRPC train", "STS test", "SICK test contradictions",
        "written contradictions")

# The README's examples and the issue's: changed facts (never skipped) and rewordings (duplicates).
CHANGED = [
    ("The cache TTL is 5 minutes.", "The cache TTL is 10 minutes."),
    ("The auth service calls the billing service.", "The billing service calls the auth service."),
    ("Always run the migrations inside a transaction.", "Never run the migrations inside a transaction."),
    ("Set the connection pool size to 20.", "Set the connection pool size to 50."),
    ("We upgraded Node to 18.17.", "We upgraded Node to 20.5."),
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
    # issue 23's three
    ("Turns out the flaky test was caused by the shared temporary directory between workers.",
     "Turns out the flaky test came from the temporary directory shared between the workers."),
    ("Learned that pytest fixtures with scope=session are created only once per test run.",
     "Learned that a pytest fixture with session scope is only created once for the whole test run."),
    ("Convention: feature flags are read once at startup and passed down explicitly, never read globally.",
     "Convention: feature flags are read once at startup and passed down explicitly instead of being read "
     "globally."),
]


@dataclass
class Rows:
    """Per pair of a set: cosine, label, and each rule's verdict (None below FLOOR: never flagged)."""

    data: PairSet
    agrees: dict[str, list[bool]]
    why: dict[str, list[str | None]]

    @property
    def labels(self) -> list[bool]:
        return [p.label for p in self.data.pairs]

    def flags(self, rule: str, t: float) -> list[bool]:
        if rule == "cosine":
            return [bool(c >= t) for c in self.data.cos]
        return [bool(c >= t) and a for c, a in zip(self.data.cos, self.agrees[rule])]


def judge_set(data: PairSet, verdicts: dict, ps: PhraseCache) -> Rows:
    rows = Rows(data, {r: [] for r in verdicts}, {r: [] for r in verdicts})
    for pair, cos in zip(data.pairs, data.cos):
        for rule, verdict in verdicts.items():
            agrees, why = verdict(pair.a, pair.b, float(cos), ps) if cos >= FLOOR else (False, "below floor")
            rows.agrees[rule].append(agrees)
            rows.why[rule].append(why)
    return rows


def prf(flags: list[bool], labels: list[bool]) -> tuple[int, float, float]:
    """flagged, precision, recall."""
    tp = sum(f and lab for f, lab in zip(flags, labels))
    n = sum(flags)
    return n, (tp / n if n else 1.0), (tp / sum(labels) if any(labels) else 0.0)


def cell(flags: list[bool], labels: list[bool]) -> str:
    n, p, r = prf(flags, labels)
    return f"{n} / {p:.3f} / {r:.3f}"


def rates(flags: list[bool], labels: list[bool]) -> tuple[float, float]:
    """Duplicates caught (share of label-1 flagged), false skips (share of label-0 flagged)."""
    pos = [f for f, lab in zip(flags, labels) if lab]
    neg = [f for f, lab in zip(flags, labels) if not lab]
    return (sum(pos) / len(pos) if pos else 0.0), (sum(neg) / len(neg) if neg else 0.0)


def same_words(a: str, b: str) -> bool:
    import re
    words = lambda s: sorted(re.findall(r"\w+", s.lower()))  # noqa: E731
    return words(a) == words(b)


def paws(rows: Rows, rule: str, t: float) -> tuple[float, float, float]:
    """Same-words label-0 flagged, all label-0 flagged, label-1 recall."""
    flags = rows.flags(rule, t)
    sw = [(not p.label) and same_words(p.a, p.b) for p in rows.data.pairs]
    l0 = [not p.label for p in rows.data.pairs]
    share = lambda mask: sum(f and m for f, m in zip(flags, mask)) / max(1, sum(mask))  # noqa: E731
    return share(sw), share(l0), share(rows.labels)


def time_per_pair(verdict, texts: list[tuple[str, str]], clear) -> tuple[float, float]:
    """Mean and median ms a judged pair, without phrase similarity, text caches cleared before each (a capture's
    neighbours are new); the best of three runs per pair, so that other work on the machine does not count."""
    times = []
    for a, b in texts:
        best = float("inf")
        for _ in range(3):
            clear()
            start = time.perf_counter()
            verdict(a, b, 0.93, None)
            best = min(best, time.perf_counter() - start)
        times.append(best * 1000)
    return statistics.fmean(times), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sick", help="SICK.txt (default bench/out/SICK.txt; the SICK figures are left out without)")
    parser.add_argument("--no-batch", action="store_true", help="leave out the batch dedup with planted pairs")
    parser.add_argument("--base", default=BASE, help=f"the commit of the baseline rule (default {BASE})")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    names = available(SETS, args.sick)
    base_verdict, base_guard = baseline_verdict(args.base)
    verdicts = {"baseline": base_verdict, "new": new_verdict()}
    ps = PhraseCache()
    rows = {name: judge_set(load(name, args.sick), verdicts, ps) for name in names}
    ps.save()
    t = THRESHOLD
    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    out = [f"# Duplicate rule: before ({args.base}) and after, one run", "",
           f"`python -m bench.bench_guard` on {platform.machine()} ({os.cpu_count()} cores, load {load_avg:.1f} at "
           f"start). Threshold {t} (the store's default, namespace `context`) unless a row says otherwise; "
           "flagged = skipped as a duplicate. Cells of P/R sets: flagged / precision / recall.", "",
           "## The issue's targets", "",
           "| target | cosine only | before | after | goal |", "| --- | --- | --- | --- | --- |"]
    for split, goals in (("coding test", ("<= 2%", ">= 90%")), ("coding train", ("(training set)",) * 2)):
        if split not in rows:
            continue
        r = rows[split]
        cells = [rates(r.flags(x, t), r.labels) for x in ("cosine", "baseline", "new")]
        projects = "test projects" if split == "coding test" else "train projects"
        out.append(f"| coding pairs, {projects}: changed facts skipped | " + " | ".join(
            f"{fs:.1%}" for _, fs in cells) + f" | {goals[0]} |")
        out.append(f"| coding pairs, {projects}: duplicates caught | " + " | ".join(
            f"{dc:.1%}" for dc, _ in cells) + f" | {goals[1]} |")
    if "PAWS dev" in rows:
        cells = [paws(rows["PAWS dev"], x, t) for x in ("cosine", "baseline", "new")]
        out.append("| PAWS dev: same-words label-0 flagged | " + " | ".join(f"{c[0]:.1%}" for c in cells) +
                   " | <= 5% |")
        out.append("| PAWS dev: all label-0 flagged (label-1 recall) | " + " | ".join(
            f"{c[1]:.1%} ({c[2]:.3f})" for c in cells) + " | <= 10% |")
    for name, goal in (("MRPC test", "P >= 0.96 at R >= 0.25"), ("STS test", "P >= 0.93 at R >= 0.52"),
                       ("MRPC train", "(training set)")):
        if name in rows:
            r = rows[name]
            out.append(f"| {name} | " + " | ".join(cell(r.flags(x, t), r.labels) for x in ("cosine", "baseline",
                                                                                            "new")) + f" | {goal} |")
    for name in ("SICK test contradictions", "written contradictions"):
        if name in rows:
            r = rows[name]
            out.append(f"| {name} skipped (of {len(r.labels)}) | " + " | ".join(
                str(sum(r.flags(x, t))) for x in ("cosine", "baseline", "new")) + " | 0 |")

    # the best operating point per set over thresholds (a threshold is a setting per namespace)
    out += ["", "Best threshold per target (0.80-0.96): the highest recall meeting the precision goal.", ""]
    for name, p_min in (("MRPC test", 0.96), ("STS test", 0.93)):
        if name not in rows:
            continue
        r = rows[name]
        for rule in ("baseline", "new"):
            ok = [(prf(r.flags(rule, th), r.labels), th) for th in THRESHOLDS]
            good = [x for x in ok if x[0][1] >= p_min]
            if good:
                (n, p, rec), th = max(good, key=lambda x: x[0][2])
                out.append(f"- {name}, {'before' if rule == 'baseline' else 'after'}: {n} / {p:.3f} / {rec:.3f} "
                           f"at {th:.2f}")
            else:
                out.append(f"- {name}, {'before' if rule == 'baseline' else 'after'}: precision {p_min} at no "
                           "threshold")

    out += ["", "## Trade-off by threshold", "",
            "Coding pairs: changed facts skipped / duplicates caught. PAWS dev: same-words label-0 flagged / all "
            "label-0 flagged. MRPC, STS: flagged / precision / recall. Contradictions: skipped.", ""]
    header = "| threshold |"
    for name in names:
        header += f" {name} before | after |"
    out += [header, "| ---: |" + " --- | --- |" * len(names)]
    for th in THRESHOLDS:
        line = f"| {th:.2f} |"
        for name in names:
            r = rows[name]
            for rule in ("baseline", "new"):
                if name.startswith("coding"):
                    dc, fs = rates(r.flags(rule, th), r.labels)
                    line += f" {fs:.1%} / {dc:.1%} |"
                elif name == "PAWS dev":
                    sw, l0, _ = paws(r, rule, th)
                    line += f" {sw:.1%} / {l0:.1%} |"
                elif "contradictions" in name:
                    line += f" {sum(r.flags(rule, th))} |"
                else:
                    line += f" {cell(r.flags(rule, th), r.labels)} |"
        out.append(line)

    for split in ("coding test", "coding train"):
        if split not in rows:
            continue
        r = rows[split]
        out += ["", f"## {split}: by kind of edit (threshold {t}; cosine >= {t} / before / after, of n)", "",
                "| kind | label | n | cosine passes | before flags | after flags |", "| --- | --- | ---: | ---: | ---: | ---: |"]
        groups: dict[tuple[str, bool], list[int]] = defaultdict(list)
        for i, (kind, pair) in enumerate(zip(r.data.kinds or [], r.data.pairs)):
            groups[(kind.split("+")[-1] if "reworded" in kind or pair.label else kind, pair.label)].append(i)
        for (kind, label), idx in sorted(groups.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
            f = {x: r.flags(x, t) for x in ("cosine", "baseline", "new")}
            out.append(f"| {kind} | {'same' if label else 'changed'} | {len(idx)} | " + " | ".join(
                str(sum(f[x][i] for i in idx)) for x in ("cosine", "baseline", "new")) + " |")

    if not args.no_batch:
        from bench.guard import batch_planted
        out += ["", *batch_planted.report(verdicts, ps)]

    texts = [(p.a, p.b) for p in rows["MRPC test"].data.pairs] if "MRPC test" in rows else \
        [(p.a, p.b) for p in rows["coding test"].data.pairs]
    from subcog_store.text.guard import clear_caches as clear_new
    def clear_base() -> None:   # the per-text caches, as the new rule's clear_caches (words recur: theirs stay)
        for module in list(sys.modules.values()):
            if module is not None and module.__name__.startswith(base_guard.__name__.split(".")[0]):
                for name, fn in vars(module).items():
                    if hasattr(fn, "cache_clear") and name not in ("stem", "split_token", "_stem"):
                        fn.cache_clear()
    from subcog_store.text import guard_lexicon

    def clear_words() -> None:   # a process that meets every word for the first time (a hook): WordNet's answers too
        clear_new()
        for cached in (guard_lexicon._entries, guard_lexicon._synsets, guard_lexicon._near, guard_lexicon._antonyms,
                       guard_lexicon._forms):
            cached.cache_clear()
    speed = {"before": time_per_pair(verdicts["baseline"], texts, clear_base),
             "after": time_per_pair(verdicts["new"], texts, clear_new),
             "after, WordNet's word cache cleared too": time_per_pair(verdicts["new"], texts, clear_words)}
    out += ["", f"## Time per judged pair ({len(texts)} pairs, without phrase similarity, text caches cleared per "
            "pair; best of 3 per pair)", "", "| rule | mean ms | median ms |", "| --- | ---: | ---: |"]
    out += [f"| {k} | {m:.3f} | {md:.3f} |" for k, (m, md) in speed.items()]

    out += ["", "## The README's and the issue's examples (threshold 0 : the rule's own verdict)", "",
            "| older | newer | before | after |", "| --- | --- | --- | --- |"]
    for kind, pairs in (("changed", CHANGED), ("same", SAME)):
        for a, b in pairs:
            cells = []
            for rule in ("baseline", "new"):
                agrees, why = verdicts[rule](a, b, 0.95, ps)
                cells.append("duplicate" if agrees else f"kept apart ({why})")
            out.append(f"| {a[:70]} | {b[:70]} | " + " | ".join(cells) + f" |  <!-- {kind} -->")
    out += ["", f"({time.perf_counter() - started:.0f} s)"]
    ps.save()
    (HERE / "results.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))
    print(f"written to {HERE / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
