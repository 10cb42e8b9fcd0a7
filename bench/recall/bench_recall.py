"""Recall quality (issue #10, "Measured"): retrieval, the abstain gate, successors, leakage, dedup, tokens.

On the hand-labeled set in bench/recall/dataset/ (3 projects, see its README), stores are built through the real
capture path (`Store.capture`, oldest first, each memory at its own time; `build`). Then:

- retrieval on TEST queries: recall@5, MRR@10, nDCG@10 of hybrid (`Store.search`) against vector-only and
  BM25-only, both read from the same search's components (each hit's vector_rank / text_rank);
- the abstain gate as shipped (the floor SUBCOG_RECALL_MIN_SIMILARITY under the relative bar, and
  SUBCOG_RECALL_MIN_TEXT_MATCH for the text side alone; chosen on both sets by `gate_lab.py`), on TEST, beside
  what this set's TRAIN split alone would choose, then checked through the real prompt hook;
- a superseded fact against its successor; cross-project leakage; what deduplication buys (planted duplicates,
  batch `dedup`, capture-time dedup on/off); tokens per prompt and per session through
  `recall_hooks.user_prompt_submit` / `session_start` in process. The ranking's constants are
  `fusion_lab.py`'s; both labelled sets, the store sizes and the shipped commit beside this tree: `bench_sets.py`.

    .venv/bin/python -m bench.recall.bench_recall [--no-write]

Writes its section of bench/recall/RESULTS.md (keeping issue #24's sections before it and the latency section of
bench_recall_latency.py after it) and the raw figures in
bench/out/recall/bench_recall-last.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from bench.recall.sets import (IRRELEVANT_KINDS, RELEVANT_KINDS, Built, Clock, MemoryRow, Query, build,
                               clean_environ)
from subcog_store.recall.fusion import COVERAGE_POWER, W_COVERAGE
from subcog_store.recall.inject import GATE_MARGIN

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "out" / "recall"
RESULTS = HERE / "RESULTS.md"
LATENCY_MARK = "<!-- latency: bench_recall_latency.py -->"
RESULTS_MARK = "<!-- quality: bench_recall.py -->"
ABSTAIN_FLOOR = 0.95             # the calibration constraint on irrelevant TRAIN prompts
PROMPT_LIMIT, GATE_CANDIDATES = 3, 10     # inject.prompt_context: recall_prompt_limit, max(3 * limit, 10)
SIM_GRID = [round(x, 2) for x in np.arange(0.10, 0.901, 0.01)]
TEXT_GRID = [round(x, 2) for x in np.arange(0.05, 1.001, 0.05)]


# -- the dataset and its stores -----------------------------------------------------------------------------
DATASET = Path(__file__).resolve().parent / "dataset"


def load() -> tuple[list[MemoryRow], list[Query]]:
    """The set's memories and queries, checked (`sets.load`: keys, projects, the split rule, the paraphrase word
    rule)."""
    from bench.recall import sets

    return sets.load(DATASET)


# -- searching ----------------------------------------------------------------------------------------------
@dataclass
class Ranked:
    """One query's search: every candidate hit (fused order) and the three rankings as memory ids."""

    hits: list
    method: str
    hybrid: list[str] = field(default_factory=list)
    vector: list[str] = field(default_factory=list)
    bm25: list[str] = field(default_factory=list)
    vector_scores: list[float] = field(default_factory=list)   # the vector side's cosines (the gate's level)


def rank(store, query: str, domain: str, use_model: bool = True) -> Ranked:
    """All candidates of `Store.search` (limit 1000) and the one-sided orders read from their components."""
    from subcog_store.errors import InvalidInput

    try:
        res = store.search(query, domain=domain, limit=1000, use_model=use_model)
    except InvalidInput:
        return Ranked([], "refused")
    hits = res.hits
    by_v = sorted((h for h in hits if h.vector_rank is not None), key=lambda h: h.vector_rank)
    by_t = sorted((h for h in hits if h.text_rank is not None), key=lambda h: h.text_rank)
    return Ranked(hits, res.method, [h.memory.id for h in hits], [h.memory.id for h in by_v],
                  [h.memory.id for h in by_t], list(res.vector_scores))


# -- metrics --------------------------------------------------------------------------------------------------
def ranking_metrics(ids: Sequence[str], fact_of: Callable[[str], str], relevant: dict[str, int]) -> dict:
    """recall@5 (answers, all relevant), MRR@10, nDCG@10 (gain 2^g - 1, a fact counted at its first place
    only), distinct facts in the top 5."""
    facts = [fact_of(i) for i in ids]
    answers = {k for k, g in relevant.items() if g == 2}
    top5 = set(facts[:5])
    rr = next((1.0 / (i + 1) for i, f in enumerate(facts[:10]) if f in answers), 0.0)
    seen, dcg = set(), 0.0
    for i, f in enumerate(facts[:10]):
        if f not in seen:
            seen.add(f)
            dcg += (2 ** relevant.get(f, 0) - 1) / math.log2(i + 2)
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return {"recall5": len(answers & top5) / len(answers), "recall5_all": len(set(relevant) & top5) / len(relevant),
            "mrr10": rr, "ndcg10": dcg / idcg, "distinct5": len(top5), "slots5": len(facts[:5])}


def mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def summarize(per_query: list[dict]) -> dict:
    keys = ("recall5", "recall5_all", "mrr10", "ndcg10", "distinct5")
    return {k: mean([m[k] for m in per_query]) for k in keys} | {"n": len(per_query)}


# -- the gate -------------------------------------------------------------------------------------------------
def gate(r: Ranked, threshold: float) -> list:
    """What inject.prompt_context would inject (before the token budget) with `threshold` as the gate's floor
    (SUBCOG_RECALL_MIN_SIMILARITY under the relative bar, `inject.prompt_bar`, or `inject.holds_the_words`; without
    the model the text match)."""
    from subcog_store.recall.inject import holds_the_words, prompt_bar, prompt_level

    top = r.hits[:GATE_CANDIDATES]
    if r.method == "hybrid":
        bar, level = prompt_bar(r.vector_scores, threshold), prompt_level(r.vector_scores)
        passed = [h for h in top if (h.similarity if h.similarity is not None else -1.0) >= bar
                  or holds_the_words(h.coverage, h.similarity, level)]
    else:
        passed = [h for h in top if (h.text_match or 0.0) >= threshold and h.text_rank is not None]
    chosen = {h.memory.id for h in passed}
    return [h for h in passed if not (h.outdated_by and h.outdated_by in chosen)][:PROMPT_LIMIT]


def gate_stats(rows: list[tuple[Query, Ranked]], fact_of: Callable[[str], str], threshold: float) -> dict:
    """Abstain rate on irrelevant prompts; on relevant ones the share of answers injected, how often at least
    one answer is, how often nothing is, and the share of injected memories that are relevant."""
    abstain, ans, any_ans, silent, inj, good = [], [], [], [], 0, 0
    for q, r in rows:
        passed = gate(r, threshold)
        facts = {fact_of(h.memory.id) for h in passed}
        if not q.is_relevant:
            abstain.append(not passed)
            continue
        answers = {k for k, g in q.relevant.items() if g == 2}
        ans.append(len(answers & facts) / len(answers))
        any_ans.append(bool(answers & facts))
        silent.append(not passed)
        inj += len(passed)
        good += sum(1 for h in passed if fact_of(h.memory.id) in q.relevant)
    return {"threshold": threshold, "abstain": mean(abstain), "answer_recall": mean(ans), "answered": mean(any_ans),
            "silent_on_relevant": mean(silent), "precision": good / inj if inj else float("nan"),
            "n_irrelevant": len(abstain), "n_relevant": len(ans)}


def calibrate(rows: list[tuple[Query, Ranked]], fact_of, grid: list[float]) -> tuple[float, list[dict]]:
    """The threshold with the largest answer recall subject to abstain >= ABSTAIN_FLOOR (ties: the higher)."""
    sweep = [gate_stats(rows, fact_of, t) for t in grid]
    feasible = [s for s in sweep if s["abstain"] >= ABSTAIN_FLOOR]
    best = max(feasible, key=lambda s: (round(s["answer_recall"], 9), s["threshold"])) if feasible else sweep[-1]
    return best["threshold"], sweep


# -- the prompt hook, in process --------------------------------------------------------------------------------
class Borrowed:
    """A store handed to a hook without the hook closing it (as tests/test_recall.py does)."""

    def __init__(self, store):
        self.store = store

    def __enter__(self):
        return self.store

    def __exit__(self, *exc) -> None:
        pass

    def __getattr__(self, name):
        return getattr(self.store, name)


@contextmanager
def hook_domain(domain: str) -> Iterator[None]:
    old = os.environ.get("SUBCOG_HOOK_DOMAIN")
    os.environ["SUBCOG_HOOK_DOMAIN"] = domain
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SUBCOG_HOOK_DOMAIN", None)
        else:
            os.environ["SUBCOG_HOOK_DOMAIN"] = old


def hook_store(path: Path, embedder, sim: float, text: float, *, model: bool):
    """A store for the hook at these gate values; `model` False: no model in the process (text side alone)."""
    from subcog_store.store import Store

    env = clean_environ(recall_min_similarity=sim, recall_min_text_match=text)
    return Store(path, embedder=embedder if model else None, clock=Clock(), environ=env, fetch_model=False)


def last_recall(store) -> dict:
    row = store.con.execute("select memory_ids, tokens, method, reason, domain from recall_log "
                            "order by id desc limit 1").fetchone()
    return {"ids": json.loads(row[0]), "tokens": row[1], "method": row[2], "reason": row[3], "domain": row[4]}


def prompt_hook(store, prompt: str, domain: str, session: str) -> dict:
    """Run user_prompt_submit in process; what it injected (from recall_log) and the additionalContext."""
    from subcog_store.claude_code import recall_hooks

    payload = {"session_id": session, "prompt": prompt, "cwd": "/nowhere", "hook_event_name": "UserPromptSubmit"}
    with hook_domain(domain):
        out = recall_hooks.user_prompt_submit(payload, Path(store.path), store_factory=lambda _: Borrowed(store))
    rec = last_recall(store)
    rec["context"] = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
    return rec


def start_hook(store, domain: str, session: str) -> dict:
    from subcog_store.claude_code import recall_hooks

    payload = {"session_id": session, "source": "startup", "cwd": "/nowhere", "hook_event_name": "SessionStart"}
    with hook_domain(domain):
        out = recall_hooks.session_start(payload, Path(store.path), store_factory=lambda _: Borrowed(store))
    rec = last_recall(store)
    rec["context"] = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
    return rec


# -- the measurements -------------------------------------------------------------------------------------------
@dataclass
class Bench:
    memories: list[MemoryRow]
    queries: list[Query]
    embedder: object
    log: Callable[[str], None] = print
    projects: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)     # memory id -> fact key, in the main store

    def __post_init__(self) -> None:
        self.projects = list(dict.fromkeys(m.project for m in self.memories))

    def build(self, name: str, rows: list[MemoryRow] | None = None, **settings) -> Built:
        t0 = time.perf_counter()
        built = build(OUT / f"{name}.db", rows or self.memories, self.embedder, **settings)
        self.log(f"  built {name}: {len(rows or self.memories)} captures in {time.perf_counter() - t0:.1f} s "
                 f"({Counter(built.decisions.values())})")
        return built

    def search_all(self, built: Built, queries: list[Query], use_model: bool = True) -> list[tuple[Query, Ranked]]:
        return [(q, rank(built.store, q.query, q.project, use_model)) for q in queries]

    def fact(self, memory_id: str) -> str:
        return self.facts.get(memory_id, "?" + memory_id)

    def split(self, name: str, relevant: bool | None = None) -> list[Query]:
        return [q for q in self.queries if q.split == name and (relevant is None or q.is_relevant == relevant)]


def retrieval(rows: list[tuple[Query, Ranked]], fact_of) -> dict:
    """Per ranking: the summary over relevant queries, and by kind."""
    out: dict = {}
    for side in ("hybrid", "vector", "bm25"):
        per = [(q, ranking_metrics(getattr(r, side), fact_of, q.relevant)) for q, r in rows if q.is_relevant]
        out[side] = {"all": summarize([m for _, m in per])}
        for kind in RELEVANT_KINDS:
            out[side][kind] = summarize([m for q, m in per if q.kind == kind])
    return out


def both_sides(rows: list[tuple[Query, Ranked]], fact_of) -> dict:
    """How often hybrid's top hit was found by both sides, against how often the answer was."""
    top_both, ans_both, ans_vec_only, n = 0, 0, 0, 0
    for q, r in rows:
        if not q.is_relevant or not r.hits:
            continue
        n += 1
        top = r.hits[0]
        top_both += top.vector_rank is not None and top.text_rank is not None
        answer = next((h for h in r.hits if q.relevant.get(fact_of(h.memory.id)) == 2), None)
        if answer is not None:
            ans_both += answer.vector_rank is not None and answer.text_rank is not None
            ans_vec_only += answer.vector_rank is not None and answer.text_rank is None
    return {"n": n, "top_both": top_both / n, "answer_both": ans_both / n, "answer_vector_only": ans_vec_only / n}


def misses(rows: list[tuple[Query, Ranked]], fact_of, side: str = "hybrid") -> list[dict]:
    """Relevant queries whose answer is not in the top 5, with where it is."""
    found = []
    for q, r in rows:
        if not q.is_relevant:
            continue
        facts = [fact_of(i) for i in getattr(r, side)]
        for key, g in q.relevant.items():
            if g == 2 and key not in facts[:5]:
                pos = facts.index(key) + 1 if key in facts else None
                hit = next((h for h in r.hits if fact_of(h.memory.id) == key), None)
                found.append({"qid": q.qid, "kind": q.kind, "query": q.query, "answer": key, "rank": pos,
                              "vector_rank": hit.vector_rank if hit else None,
                              "text_rank": hit.text_rank if hit else None,
                              "similarity": round(hit.similarity, 3) if hit and hit.similarity is not None else None})
    return found


def successor_order(built: Built, rows: list[tuple[Query, Ranked]], pairs: list[tuple[str, str, bool]]) -> dict:
    """For each (old, new) pair: queries where the old memory ranks above the new one in the top 10, or is in
    the top 5 without the new one; per ranking."""
    out: dict = {"examples": []}
    key_of: dict[str, str] = {}
    for key, mid in built.key_to_id.items():
        key_of.setdefault(mid, key)
    for side in ("hybrid", "vector", "bm25"):
        above, alone, seen = Counter(), Counter(), Counter()
        for q, r in rows:
            ids = getattr(r, side)
            pos = {mid: i for i, mid in enumerate(ids)}
            for old, new, linked in pairs:
                if old not in pos or pos[old] >= 10:
                    continue
                seen[linked] += 1
                if new in pos and pos[new] < pos[old]:
                    continue
                if new in pos:
                    above[linked] += 1
                elif pos[old] < 5:
                    alone[linked] += 1
                else:
                    continue
                if side == "hybrid":
                    out["examples"].append({"qid": q.qid, "query": q.query, "old": key_of.get(old, old),
                                            "new": key_of.get(new, new), "old_rank": pos[old] + 1,
                                            "new_rank": pos[new] + 1 if new in pos else None, "linked": linked})
        out[side] = {"linked": {"old_in_top10": seen[True], "old_above_new": above[True], "old_alone_top5": alone[True]},
                     "unlinked": {"old_in_top10": seen[False], "old_above_new": above[False],
                                  "old_alone_top5": alone[False]}}
    return out


def stale_probes(built: Built, pairs: list[tuple[str, str, bool]], domain_of: dict[str, str]) -> dict:
    """The hardest case: the old memory's own text as the query. Is the successor still ranked first?"""
    result = {"linked": [0, 0], "unlinked": [0, 0]}
    for old, new, linked in pairs:
        content = built.store.get(old).content
        r = rank(built.store, content, domain_of[old])
        ids = r.hybrid
        ok = new in ids and (old not in ids or ids.index(new) < ids.index(old))
        key = "linked" if linked else "unlinked"
        result[key][0] += ok
        result[key][1] += 1
    return result


def supersession_pairs(built: Built, memories: list[MemoryRow]) -> list[tuple[str, str, bool]]:
    """Every (old, new, linked) memory-id pair: the store's links, and the dataset's updates it did not link."""
    rows = built.store.con.execute("select id, successor_id from memories where successor_id is not null "
                                   "and status = 'active'").fetchall()
    pairs = [(old, new, True) for old, new in rows]
    linked = {(o, n) for o, n, _ in pairs}
    for m in memories:
        if m.updates and m.key in built.key_to_id and m.updates in built.key_to_id:
            o, n = built.key_to_id[m.updates], built.key_to_id[m.key]
            if (o, n) not in linked and o != n:
                pairs.append((o, n, False))
    return pairs


def leakage(bench: Bench, built: Built, hook_stores: list) -> dict:
    """Foreign-domain memories returned: every query in every project (hybrid and text side), and each memory's
    own text asked in every other project, through search and through the prompt hook."""
    searches = foreign = 0
    for q in bench.queries:
        for use_model in (True, False):
            r = rank(built.store, q.query, q.project, use_model)
            searches += 1
            foreign += sum(1 for h in r.hits if h.memory.domain != q.project)
    hook_calls = hook_foreign = 0
    store = built.store
    for m in bench.memories:
        for other in bench.projects:
            if other == m.project:
                continue
            for use_model in (True, False):
                r = rank(store, m.content, other, use_model)
                searches += 1
                foreign += sum(1 for h in r.hits if h.memory.domain != other)
            for s in hook_stores:
                rec = prompt_hook(s, m.content, other, session=f"leak-{m.key}-{other}-{id(s)}")
                hook_calls += 1
                hook_foreign += sum(1 for mid in rec["ids"] if s.get(mid).domain != other)
    return {"searches": searches, "foreign_hits": foreign, "hook_calls": hook_calls, "hook_foreign": hook_foreign}


# -- deduplication ---------------------------------------------------------------------------------------------
def plant_duplicates(bench: Bench) -> list[MemoryRow]:
    """Two re-captures of every current fact (not a near-duplicate, not outdated by a labeled update) in later
    sessions, as a user re-stating it would: a "Reminder:" prefix, and its clauses swapped around the first ';'
    (without one: " Still current." appended). Two different lead-ins ("Reminder:" / "As noted before,") are
    avoided: the guard reads them as a one-word substitution, and batch dedup then keeps the cluster apart."""
    outdated = {m.updates for m in bench.memories if m.updates}
    planted = []
    for m in bench.memories:
        if m.dup_of or m.key in outdated:
            continue
        text = m.content.rstrip(".")
        if "; " in text:
            a, b = text.split("; ", 1)
            swapped = b[0].upper() + b[1:] + "; " + a[0].lower() + a[1:] + "."
        else:
            swapped = m.content + " Still current."
        for n, (variant, age) in enumerate((("Reminder: " + m.content, 0.7), (swapped, 0.4)), start=1):
            planted.append(MemoryRow(f"{m.key}-dup{n}", m.project, m.namespace, variant, round(m.days_ago * age, 2),
                                     m.importance, None, m.key))
    return planted


def dedup_benefit(bench: Bench, test_rel: list[Query], reference: Built) -> dict:
    """Distinct facts among the top 5 (and the ranking metrics) with planted duplicates: captured with dedup off,
    then after batch `dedup`; captured with dedup on; the store without planted duplicates as reference."""
    from subcog_store.batch.run import dedup

    planted = plant_duplicates(bench)
    rows = bench.memories + planted
    out: dict = {"planted": len(planted)}

    def measure(built: Built, label: str) -> None:
        ranked = bench.search_all(built, test_rel)
        per = [ranking_metrics(r.hybrid, built.fact_of, q.relevant) for q, r in ranked]
        active = built.store.con.execute("select count(*) from memories where status = 'active'").fetchone()[0]
        pairs = supersession_pairs(built, bench.memories)
        order = successor_order(built, ranked, pairs)["hybrid"]
        out[label] = summarize(per) | {"active": active, "dup_slots5": mean([m["slots5"] - m["distinct5"] for m in per]),
                                       "linked_pairs": sum(1 for p in pairs if p[2]),
                                       "old_above_new": order["linked"]["old_above_new"] + order["unlinked"]["old_above_new"]}

    measure(reference, "reference (no planted duplicates, dedup on)")
    off = bench.build("dedup-off", rows, dedup_enabled=False)
    measure(off, "capture-time dedup off")
    off.store.settings = off.store.load_settings()
    t0 = time.perf_counter()
    report = dedup(off.store)
    out["batch"] = {"seconds": round(time.perf_counter() - t0, 2), "clusters": len(report.clusters),
                    "removed": report.removed, "before": report.memories_before, "after": report.memories_after,
                    "guarded": len(report.guarded)}
    measure(off, "dedup off, then batch `dedup`")
    active = [row[0] for row in off.store.con.execute("select id from memories where status = 'active'")]
    per_fact = Counter(off.fact_of(mid) for mid in active)
    out["batch"]["facts_repeated"] = sum(1 for c in per_fact.values() if c > 1)
    out["batch"]["survivor_planted"] = sum(1 for mid in active if off.fact_of(mid) in per_fact
                                           and mid not in {off.key_to_id.get(m.key) for m in bench.memories})
    on = bench.build("dedup-on", rows)
    measure(on, "capture-time dedup on")
    out["capture_on_decisions"] = dict(Counter(on.decisions[p.key] for p in planted))
    out["capture_on_decisions_handwritten"] = dict(Counter(on.decisions[m.key] for m in bench.memories if m.dup_of))
    off.store.close()
    on.store.close()
    return out


# -- tokens --------------------------------------------------------------------------------------------------------
def sessions(bench: Bench, path: Path, sim: float, text: float, model: bool) -> dict:
    """Per project one session: session-start, then the TEST prompts (relevant and irrelevant, shuffled with a
    fixed seed) through the prompt hook. Tokens per prompt and per session, answers injected."""

    store = hook_store(path, bench.embedder, sim, text, model=model)
    per_prompt, per_session, start_tokens, answered, in_context, methods = [], [], [], [], [], Counter()
    irrelevant_silent = []
    for project in bench.projects:
        session = f"bench-session-{project}-{'hybrid' if model else 'text'}-{sim}-{text}"
        prompts = [q for q in bench.split("test") if q.project == project]
        random.Random(7).shuffle(prompts)
        start = start_hook(store, project, session)
        start_tokens.append(start["tokens"])
        given = {bench.fact(mid) for mid in start["ids"]}
        total = start["tokens"]
        for q in prompts:
            rec = prompt_hook(store, q.query, project, session)
            methods[rec["method"] or rec["reason"]] += 1
            per_prompt.append(rec["tokens"])
            total += rec["tokens"]
            facts = {bench.fact(mid) for mid in rec["ids"]}
            given |= facts
            if q.is_relevant:
                answers = {k for k, g in q.relevant.items() if g == 2}
                answered.append(bool(answers & facts))
                in_context.append(bool(answers & given))
            else:
                irrelevant_silent.append(not rec["ids"])
        per_session.append(total)
    store.close()
    nonzero = [t for t in per_prompt if t]
    return {"prompts": len(per_prompt), "tokens_per_prompt_mean": mean(per_prompt),
            "tokens_per_injecting_prompt_mean": mean(nonzero), "tokens_per_prompt_max": max(per_prompt),
            "prompts_injecting": len(nonzero) / len(per_prompt), "start_tokens": start_tokens,
            "session_tokens": per_session, "answered_in_session": mean(answered),
            "answer_in_context": mean(in_context),
            "abstain_in_session": mean(irrelevant_silent), "methods": dict(methods)}


def hook_check(bench: Bench, path: Path, queries: list[Query], sim: float, text: float, model: bool) -> dict:
    """The real prompt hook on each TEST prompt in a fresh session: abstain and answers, as measured by it."""
    store = hook_store(path, bench.embedder, sim, text, model=model)
    abstain, answered, tokens, methods = [], [], [], Counter()
    for q in queries:
        rec = prompt_hook(store, q.query, q.project, session=f"check-{q.qid}-{model}-{sim}-{text}")
        methods[rec["method"] or "none"] += 1
        tokens.append(rec["tokens"])
        facts = {bench.fact(mid) for mid in rec["ids"]}
        if q.is_relevant:
            answered.append(bool({k for k, g in q.relevant.items() if g == 2} & facts))
        else:
            abstain.append(not rec["ids"])
    store.close()
    return {"abstain": mean(abstain), "answered": mean(answered), "tokens_mean": mean(tokens),
            "methods": dict(methods)}


# -- report ----------------------------------------------------------------------------------------------------------
def f3(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def md_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def machine() -> dict:
    from bench.bench_store import machine_info

    info = machine_info()
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=HERE.parents[1]).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "subcog_store", "sql"], capture_output=True,
                               text=True, cwd=HERE.parents[1]).stdout.strip()
        info["product_tree"] = "with uncommitted changes in subcog_store/ or sql/" if dirty else "clean"
    except OSError:
        info["commit"] = "unknown"
    return info


def report(res: dict) -> str:
    m, d = res["machine"], res["dataset"]
    L: list[str] = [RESULTS_MARK, "## Issue #10's set through the whole product (`bench_recall.py`)", ""]
    L.append(f"Quality: `python -m bench.recall.bench_recall` on {res['date']} (commit {m['commit']}, product code "
             f"{m['product_tree']}); raw figures in `bench/out/recall/bench_recall-last.json` (git-ignored). "
             f"Latency: `python -m bench.recall.bench_recall_latency` (its section at the end). The ranking's and "
             f"the gate's constants were chosen on both labelled sets (issue #24's sections above); this run reports "
             f"them on set 1 alone, with what this set's train split alone would have chosen beside them.")
    g0, h0 = res["gate"], res["retrieval_test"]
    L += ["", "### Summary", "",
          f"- Abstain gate as shipped: floor **SUBCOG_RECALL_MIN_SIMILARITY = {g0['similarity']:.2f}** under the "
          f"relative bar (`inject.prompt_bar`), **SUBCOG_RECALL_MIN_TEXT_MATCH = {g0['text_match']:.2f}** without "
          f"the model. On test: abstain "
          f"{g0['sim']['shipped']['test']['abstain']:.3f} (cosine) / {g0['txt']['shipped']['test']['abstain']:.3f} "
          f"(text side) on irrelevant prompts; answers injected for "
          f"{g0['sim']['shipped']['test']['answer_recall']:.3f} / {g0['txt']['shipped']['test']['answer_recall']:.3f} "
          "of the relevant ones.",
          f"- Retrieval on test, hybrid as shipped / vector-only / BM25-only: recall@5 "
          f"{h0['hybrid']['all']['recall5']:.3f} / {h0['vector']['all']['recall5']:.3f} / "
          f"{h0['bm25']['all']['recall5']:.3f}, MRR@10 {h0['hybrid']['all']['mrr10']:.3f} / "
          f"{h0['vector']['all']['mrr10']:.3f} / {h0['bm25']['all']['mrr10']:.3f}, nDCG@10 "
          f"{h0['hybrid']['all']['ndcg10']:.3f} / {h0['vector']['all']['ndcg10']:.3f} / "
          f"{h0['bm25']['all']['ndcg10']:.3f} (`recall.fusion`: cosine + {W_COVERAGE:g} x coverage^"
          f"{COVERAGE_POWER}; the grid of fusions is `fusion_lab.py`'s).",
          f"- Superseded facts: never above their successor in the fused ranking "
          f"({res['successors']['order']['hybrid']['linked']['old_above_new']} cases among linked pairs); "
          f"cross-project leakage "
          f"{res['leakage']['foreign_hits'] + res['leakage']['hook_foreign']}.",
          f"- Duplicates: with capture-time dedup off, {res['dedup']['capture-time dedup off']['dup_slots5']:.1f} of "
          f"the 5 top slots repeat a fact; batch `dedup` brings it to "
          f"{res['dedup']['dedup off, then batch `dedup`']['dup_slots5']:.2f}, capture-time dedup to "
          f"{res['dedup']['capture-time dedup on']['dup_slots5']:.2f}.",
          f"- Tokens: {res['tokens']['hybrid']['tokens_per_prompt_mean']:.0f} per prompt on average (hybrid; "
          f"{res['tokens']['text']['tokens_per_prompt_mean']:.0f} text side), about 500 at session start, "
          f"{min(res['tokens']['hybrid']['session_tokens'])}-{max(res['tokens']['hybrid']['session_tokens'])} per "
          f"session of {res['tokens']['hybrid']['prompts'] // 3} prompts (budget 3000)."]
    L += ["", "### Machine", "",
          f"{m['cpu']}, {m['cores']} cores, {m['os']}; Python {m['python']}, apsw {m['apsw']} (SQLite {m['sqlite']}), "
          f"sqlite-vec {m['sqlite-vec']}, onnxruntime {m['onnxruntime']}. Load average at start "
          f"{m['load_avg_at_start']}, at end {res['load_end']} (shared machine). Quality figures do not depend on "
          f"load; the run took {res['seconds']:.0f} s.", ""]
    L += ["### Dataset", "",
          f"`bench/recall/dataset/` (see its README): {d['memories']} hand-written memories of 3 projects "
          f"({', '.join(f'{p}: {n}' for p, n in d['per_project'].items())}), captured through `Store.capture` oldest "
          f"first over {d['span_days']} days; {d['queries']} queries: {d['relevant']} relevant with graded labels "
          f"({d['paraphrase']} paraphrases sharing no significant word with any memory of their facts, checked), "
          f"{d['irrelevant']} for which nothing in that project is relevant. Split by a fixed rule (alternate within "
          f"each project and kind): train {d['train']}, test {d['test']}. Every figure below is on TEST unless it "
          f"says train.", "",
          f"Capture decisions: {d['decisions']}. The store linked {d['linked_updates']} of the {d['updates']} "
          f"labeled updates (changed_fact)" + (f"; those it did not ({', '.join(d['unlinked_updates'])}) stay two "
                                               "unlinked active memories" if d["unlinked_updates"] else "") +
          f". Of the {d['dups']} hand-written near-duplicates, "
          f"{d['dup_decisions']}.", ""]
    # retrieval
    r = res["retrieval_test"]
    L += ["### Retrieval quality (test)", "",
          f"Hybrid is `Store.search` as shipped (vec0 KNN of the prompt as typed + FTS5 matches of its content words, "
          f"scored cosine + {W_COVERAGE:g} x coverage^{COVERAGE_POWER}, successors first). Vector-only and BM25-only "
          "are the same search's candidates ordered by their "
          "`vector_rank` / `text_rank` (the SQL sides as they are, no fusion, no weights). recall@5 counts the "
          "answers (grade 2) in the top 5; \"all\" counts every relevant fact (grade 1 or 2). A fact counts once "
          "(near-duplicates share their fact).", ""]
    rows = []
    for kind in ("all",) + RELEVANT_KINDS:
        for side, label in (("hybrid", "hybrid"), ("vector", "vector-only"), ("bm25", "BM25-only")):
            s = r[side][kind]
            rows.append([kind if side == "hybrid" else "", label, s["n"], f3(s["recall5"]), f3(s["recall5_all"]),
                         f3(s["mrr10"]), f3(s["ndcg10"])])
    L += [md_table(["queries", "ranking", "n", "recall@5", "recall@5 (all)", "MRR@10", "nDCG@10"], rows), ""]
    rt = res["retrieval_train"]
    L += [f"Train, for reference (n={rt['hybrid']['all']['n']}): hybrid recall@5 {f3(rt['hybrid']['all']['recall5'])}, "
          f"MRR@10 {f3(rt['hybrid']['all']['mrr10'])}, nDCG@10 {f3(rt['hybrid']['all']['ndcg10'])}; vector-only "
          f"{f3(rt['vector']['all']['recall5'])} / {f3(rt['vector']['all']['mrr10'])} / "
          f"{f3(rt['vector']['all']['ndcg10'])}; BM25-only {f3(rt['bm25']['all']['recall5'])} / "
          f"{f3(rt['bm25']['all']['mrr10'])} / {f3(rt['bm25']['all']['ndcg10'])}.", ""]
    bs = res["both_sides_test"]
    L += [f"On test, hybrid's top hit was found by both sides for {bs['top_both']:.0%} of the relevant queries; the "
          f"answer was found by both sides for {bs['answer_both']:.0%} and by the vector side alone for "
          f"{bs['answer_vector_only']:.0%}.", ""]
    if res["misses_test"]:
        L += ["Test answers hybrid leaves out of the top 5 (rank in the fused list; each side's rank; cosine):", ""]
        L += [md_table(["query", "kind", "answer", "hybrid rank", "vector rank", "BM25 rank", "cosine"],
                       [[x["query"], x["kind"], x["answer"], x["rank"], x["vector_rank"], x["text_rank"],
                         x["similarity"]] for x in res["misses_test"]]), ""]
    # gate
    g = res["gate"]
    L += ["### The abstain gate", "",
          "The gate is simulated exactly as `inject.prompt_context` applies it (top "
          f"{GATE_CANDIDATES} of the fused list, a cosine of at least the floor and {GATE_MARGIN:g} above the "
          f"prompt's level in the store (`inject.prompt_bar`), or a memory that holds the prompt's words at the "
          f"prompt's level (`inject.holds_the_words`), a successor drops its outdated memory, at most "
          f"{PROMPT_LIMIT}), then checked through the real hook (`recall_hooks.user_prompt_submit`, a fresh session "
          f"per prompt, the prompt token budget applying). Shipped: floor {g['similarity']:.2f}, text match "
          f"{g['text_match']:.2f} (chosen by `gate_lab.py` on the train splits of both sets at three store sizes). "
          f"Beside them, what this set's train split alone would choose by issue #10's rule (the most answers "
          f"injected while abstaining on at least {ABSTAIN_FLOOR:.0%} of the irrelevant train prompts; ties: the "
          f"higher): floor {g['own_similarity']:.2f}, text match {g['own_text_match']:.2f}.", ""]
    rows = []
    for label, key in (("hybrid (model loaded)", "sim"), ("text side alone (no model)", "txt")):
        for which in ("shipped", "set 1 train alone"):
            tr, te = g[key][which]["train"], g[key][which]["test"]
            rows.append([label if which == "shipped" else "", f"{which} {te['threshold']:.2f}", f3(tr["abstain"]),
                         f3(tr["answer_recall"]), f3(te["abstain"]), f3(te["answer_recall"]), f3(te["answered"]),
                         f3(te["silent_on_relevant"]), f3(te["precision"])])
    L += [md_table(["side", "threshold", "train abstain", "train answers injected", "TEST abstain (irrelevant)",
                    "TEST answers injected", "TEST relevant prompts with an answer", "TEST relevant prompts given "
                    "nothing", "TEST injected that are relevant"], rows), ""]
    hc = g["hook_check"]
    L += [f"Through the real hook at the shipped values (test): hybrid abstain {f3(hc['hybrid']['abstain'])}, relevant "
          f"prompts answered {f3(hc['hybrid']['answered'])} (methods {hc['hybrid']['methods']}); text side alone "
          f"abstain {f3(hc['text']['abstain'])}, answered {f3(hc['text']['answered'])} (methods "
          f"{hc['text']['methods']}).", ""]
    L += ["Abstain on irrelevant TEST prompts by kind (shipped values):", ""]
    L += [md_table(["kind", "n", "hybrid abstain", "text-side abstain"],
                   [[k, v["n"], f3(v["hybrid"]), f3(v["text"])] for k, v in g["by_kind"].items()]), ""]
    L += ["Train sweep of the gate's floor (the feasible region is abstain >= 0.95):", ""]
    L += [md_table(["floor", "train abstain", "train answers injected", "train precision", "test abstain",
                    "test answers injected"],
                   [[f"{a['threshold']:.2f}", f3(a["abstain"]), f3(a["answer_recall"]), f3(a["precision"]),
                     f3(b["abstain"]), f3(b["answer_recall"])] for a, b in g["sim_sweep_view"]]), ""]
    L += ["Train sweep of the text gate:", ""]
    L += [md_table(["min text match", "train abstain", "train answers injected", "test abstain", "test answers injected"],
                   [[f"{a['threshold']:.2f}", f3(a["abstain"]), f3(a["answer_recall"]), f3(b["abstain"]),
                     f3(b["answer_recall"])] for a, b in g["text_sweep_view"]]), ""]
    if g.get("false_alarms"):
        L += ["Irrelevant test prompts the shipped gate still answers (what it injected, cosine):", ""]
        L += [md_table(["project", "kind", "prompt", "injected", "cosine"],
                       [[x["project"], x["kind"], x["query"], x["injected"], x["cosine"]] for x in g["false_alarms"]]), ""]
    # successors
    s = res["successors"]
    L += ["### Superseded facts and their successors", "",
          f"Pairs: {s['pairs_linked']} linked by the store (the labeled updates it recognised, plus near-duplicates "
          f"its guard took for a changed fact) and {s['pairs_unlinked']} labeled update it did not link. Over every "
          f"query of every split: how often the older memory of a pair is in the top 10, ranked above its successor, "
          f"or in the top 5 without it.", ""]
    rows = []
    for side, label in (("hybrid", "hybrid"), ("vector", "vector-only"), ("bm25", "BM25-only")):
        for kind in ("linked", "unlinked"):
            x = s["order"][side][kind]
            rows.append([label if kind == "linked" else "", kind, x["old_in_top10"], x["old_above_new"],
                         x["old_alone_top5"]])
    L += [md_table(["ranking", "pairs", "old in top 10", "old above its successor", "old in top 5 without successor"],
                   rows), ""]
    p = s["stale_probes"]
    L += [f"Stale-worded probes (the old memory's own text as the query): the successor ranked above it in "
          f"{p['linked'][0]}/{p['linked'][1]} linked pairs and {p['unlinked'][0]}/{p['unlinked'][1]} unlinked.", "",
          "Hybrid cases of an older memory above or without its successor: " + (
              "; ".join(f"{x['qid']} \"{x['query']}\": {x['old']} at {x['old_rank']}, successor {x['new']} at "
                        f"{x['new_rank'] or 'not a candidate'}" for x in s["order"]["examples"]) or "none") + ".", "",
          f"Through the hook at the shipped gate, an outdated memory was injected without its successor "
          f"{s['hook_outdated_alone']} times over all test prompts.", ""]
    # leakage
    lk = res["leakage"]
    L += ["### Cross-project leakage", "",
          f"{lk['searches']} searches (every query in its project and every memory's own text asked in each other "
          f"project, hybrid and text side): **{lk['foreign_hits']} foreign memories returned**. {lk['hook_calls']} "
          f"prompt-hook calls with another project's memory text at the shipped gate (model loaded, and text "
          f"side alone): "
          f"**{lk['hook_foreign']} foreign memories injected**.", ""]
    # dedup
    dd = res["dedup"]
    L += ["### What deduplication buys", "",
          f"{dd['planted']} planted re-captures: each current fact stated again in two later sessions (a "
          f"\"Reminder:\" prefix; its clauses swapped around the first ';', or without one \" Still current.\" "
          f"appended), on top of the "
          f"hand-written near-duplicates. Hybrid search, test relevant queries.", ""]
    rows = []
    for label in ("reference (no planted duplicates, dedup on)", "capture-time dedup off",
                  "dedup off, then batch `dedup`", "capture-time dedup on"):
        x = dd[label]
        rows.append([label, x["active"], f3(x["distinct5"]), f3(x["dup_slots5"]), f3(x["recall5"]),
                     f3(x["mrr10"]), f3(x["ndcg10"]), x["linked_pairs"], x["old_above_new"]])
    L += [md_table(["store", "active memories", "distinct facts in top 5", "repeat slots in top 5", "recall@5",
                    "MRR@10", "nDCG@10", "successor links", "old above successor"], rows), ""]
    b = dd["batch"]
    L += [f"Batch `dedup` on the dedup-off store: {b['clusters']} clusters, {b['removed']} memories merged away "
          f"({b['before']} -> {b['after']} active), {b['guarded']} pairs kept apart by the guard, {b['seconds']} s; "
          f"afterwards {b['facts_repeated']} facts still have more than one active memory (a cluster's survivor is "
          f"its newest member: for {b['survivor_planted']} facts a planted re-capture, its text merged from the "
          f"cluster by the built-in merger). "
          f"Capture-time dedup on the planted re-captures: {dd['capture_on_decisions']}; on the hand-written "
          f"near-duplicates: {dd['capture_on_decisions_handwritten']}.", "",
          "With capture-time dedup off the capture check "
          "does not run at all, so changed facts are not linked to their successors either, and batch `dedup` does "
          "not link them afterwards (0 successor links).", ""]
    # tokens
    t = res["tokens"]
    L += ["### Tokens injected", "",
          "One session per project: `session-start` (startup), then that project's TEST prompts (relevant and "
          "irrelevant, shuffled with a fixed seed) through `user_prompt_submit`, in process, at the shipped gate. "
          "Tokens are the hook's own estimate (4 characters a token), as `recall_log` records them.", ""]
    rows = []
    for label, key in (("model loaded (hybrid)", "hybrid"), ("no model (text side alone)", "text")):
        x = t[key]
        rows.append([label, x["prompts"], f3(x["prompts_injecting"]), f"{x['tokens_per_prompt_mean']:.1f}",
                     f"{x['tokens_per_injecting_prompt_mean']:.1f}", x["tokens_per_prompt_max"],
                     " / ".join(str(v) for v in x["start_tokens"]), " / ".join(str(v) for v in x["session_tokens"]),
                     f3(x["answered_in_session"]), f3(x["answer_in_context"]), f3(x["abstain_in_session"])])
    L += [md_table(["prompt hook", "prompts", "share injecting", "tokens per prompt (mean)",
                    "tokens per injecting prompt", "max", "session-start tokens (per project)",
                    "session total tokens (per project)", "relevant prompts given their answer",
                    "answer in context (now, earlier or in the start index)", "irrelevant abstained"],
                   rows), ""]
    # targets
    L += ["### Targets", "", md_table(["target", "measured (test)", "met"], res["targets"]), ""]
    return "\n".join(L) + "\n"


def write_results(text: str) -> None:
    """This report into RESULTS.md between RESULTS_MARK and LATENCY_MARK: what stands before (issue #24's
    sections) and the latency section bench_recall_latency.py wrote are kept."""
    head, latency = "# Recall benchmark results\n\n", ""
    if RESULTS.exists():
        old = RESULTS.read_text()
        if LATENCY_MARK in old:
            old, latency = old[:old.index(LATENCY_MARK)], old[old.index(LATENCY_MARK):]
        head = old[:old.index(RESULTS_MARK)] if RESULTS_MARK in old else old.rstrip("\n") + "\n\n"
    RESULTS.write_text(head + text + ("\n" + latency if latency else ""))


# -- main --------------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print the report; do not write RESULTS.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    from subcog_store.model.embedder import Embedder

    info = machine()
    memories, queries = load()
    embedder = Embedder()
    embedder.load()
    bench = Bench(memories, queries, embedder, log=lambda s: print(s, flush=True))
    print("building the store of the labeled set", flush=True)
    main_store = bench.build("recall-main")
    bench.facts.update(main_store.id_to_fact)
    path = OUT / "recall-main.db"
    fact_of = main_store.fact_of
    by_key = {m.key: m for m in memories}

    print("searching", flush=True)
    train_rows = bench.search_all(main_store, bench.split("train"))
    test_rows = bench.search_all(main_store, bench.split("test"))
    train_text = bench.search_all(main_store, bench.split("train"), use_model=False)
    test_text = bench.search_all(main_store, bench.split("test"), use_model=False)
    res: dict = {"machine": info, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    updates = [m for m in memories if m.updates]
    unlinked = [m.key for m in updates if main_store.store.get(main_store.key_to_id[m.updates]).successor_id
                != main_store.key_to_id.get(m.key)]
    dups = [m for m in memories if m.dup_of]
    res["dataset"] = {
        "memories": len(memories), "per_project": dict(Counter(m.project for m in memories)),
        "span_days": int(max(m.days_ago for m in memories)), "queries": len(queries),
        "relevant": sum(q.is_relevant for q in queries), "irrelevant": sum(not q.is_relevant for q in queries),
        "paraphrase": sum(q.kind == "paraphrase" for q in queries), "train": len(bench.split("train")),
        "test": len(bench.split("test")), "decisions": dict(Counter(main_store.decisions.values())),
        "updates": len(updates), "linked_updates": len(updates) - len(unlinked),
        "unlinked_updates": [f"{k} (of {by_key[k].updates})" for k in unlinked], "dups": len(dups),
        "dup_decisions": ", ".join(f"{n} {d}" for d, n in Counter(main_store.decisions[m.key] for m in dups).items())
        + " (changed_fact: the guard saw a changed fact in a re-wording, so the older one is marked outdated)"}

    res["retrieval_test"] = retrieval(test_rows, fact_of)
    res["retrieval_train"] = retrieval(train_rows, fact_of)
    res["misses_test"] = misses(test_rows, fact_of)
    res["both_sides_test"] = both_sides(test_rows, fact_of)

    print("the gate: shipped values, and what set 1's train alone would choose", flush=True)
    settings = main_store.store.settings
    sim, text = round(float(settings.recall_min_similarity), 2), round(float(settings.recall_min_text_match), 2)
    own_sim, sim_sweep = calibrate(train_rows, fact_of, SIM_GRID)
    own_text, text_sweep = calibrate(train_text, fact_of, TEXT_GRID)
    sim_test = {s["threshold"]: s for s in (gate_stats(test_rows, fact_of, t) for t in SIM_GRID)}
    text_test = {s["threshold"]: s for s in (gate_stats(test_text, fact_of, t) for t in TEXT_GRID)}
    sim_train = {s["threshold"]: s for s in sim_sweep}
    text_train = {s["threshold"]: s for s in text_sweep}
    view = sorted({round(x, 2) for x in (0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, sim - 0.02, sim - 0.01,
                                          sim, sim + 0.01, sim + 0.02, own_sim)} & set(sim_train))
    gate_res: dict = {
        "similarity": sim, "text_match": text,
        "own_similarity": own_sim, "own_text_match": own_text,
        "sim": {"shipped": {"train": sim_train[sim], "test": sim_test[sim]},
                "set 1 train alone": {"train": sim_train[own_sim], "test": sim_test[own_sim]}},
        "txt": {"shipped": {"train": text_train[text], "test": text_test[text]},
                "set 1 train alone": {"train": text_train[own_text], "test": text_test[own_text]}},
        "sim_sweep_view": [(sim_train[t], sim_test[t]) for t in view],
        "text_sweep_view": [(text_train[t], text_test[t]) for t in TEXT_GRID if 0.1 <= t <= 0.9],
        "sim_sweep": sim_sweep, "text_sweep": text_sweep,
    }
    by_kind = {}
    for kind in (k for k in IRRELEVANT_KINDS if any(q.kind == k for q, _ in test_rows)):
        rows_h = [(q, r) for q, r in test_rows if q.kind == kind]
        rows_t = [(q, r) for q, r in test_text if q.kind == kind]
        by_kind[kind] = {"n": len(rows_h), "hybrid": gate_stats(rows_h, fact_of, sim)["abstain"],
                         "text": gate_stats(rows_t, fact_of, text)["abstain"]}
    gate_res["by_kind"] = by_kind
    gate_res["false_alarms"] = [
        {"project": q.project, "kind": q.kind, "query": q.query,
         "injected": ", ".join(fact_of(h.memory.id) for h in gate(r, sim)),
         "cosine": ", ".join(f"{h.similarity:.3f}" for h in gate(r, sim))}
        for q, r in test_rows if not q.is_relevant and gate(r, sim)]
    print(f"  shipped floor {sim}, text {text} (set 1 train alone: {own_sim}, {own_text}); through the hook",
          flush=True)
    gate_res["hook_check"] = {"hybrid": hook_check(bench, path, bench.split("test"), sim, text, model=True),
                              "text": hook_check(bench, path, bench.split("test"), sim, text, model=False)}
    res["gate"] = gate_res

    print("successors, leakage", flush=True)
    all_rows = train_rows + test_rows
    pairs = supersession_pairs(main_store, memories)
    domain_of = {mid: main_store.store.get(mid).domain for p in pairs for mid in p[:2]}
    hook_alone = 0
    hs = hook_store(path, embedder, sim, text, model=True)
    outdated = {old: new for old, new, _ in pairs}
    for q in bench.split("test"):
        rec = prompt_hook(hs, q.query, q.project, session=f"succ-{q.qid}")
        hook_alone += sum(1 for mid in rec["ids"] if mid in outdated and outdated[mid] not in rec["ids"])
    hs.close()
    res["successors"] = {"pairs_linked": sum(p[2] for p in pairs), "pairs_unlinked": sum(not p[2] for p in pairs),
                         "order": successor_order(main_store, all_rows, pairs),
                         "stale_probes": stale_probes(main_store, pairs, domain_of),
                         "hook_outdated_alone": hook_alone}
    gated = [hook_store(path, embedder, sim, text, model=True), hook_store(path, embedder, sim, text, model=False)]
    res["leakage"] = leakage(bench, main_store, gated)
    for s in gated:
        s.close()

    print("tokens", flush=True)
    res["tokens"] = {"hybrid": sessions(bench, path, sim, text, model=True),
                     "text": sessions(bench, path, sim, text, model=False)}
    print("dedup", flush=True)
    res["dedup"] = dedup_benefit(bench, bench.split("test", relevant=True), main_store)

    h = res["retrieval_test"]["hybrid"]["all"]
    gt = res["gate"]["sim"]["shipped"]["test"]
    order = res["successors"]["order"]["hybrid"]
    res["targets"] = [
        ["recall@5 >= 0.90 (hybrid)", f3(h["recall5"]), "yes" if h["recall5"] >= 0.90 else "no"],
        ["MRR@10 >= 0.80 (hybrid)", f3(h["mrr10"]), "yes" if h["mrr10"] >= 0.80 else "no"],
        ["abstain >= 0.90 on irrelevant prompts (cosine gate)", f3(gt["abstain"]),
         "yes" if gt["abstain"] >= 0.90 else "no"],
        ["abstain >= 0.90 on irrelevant prompts (text gate, no model)", f3(res["gate"]["txt"]["shipped"]["test"]["abstain"]),
         "yes" if res["gate"]["txt"]["shipped"]["test"]["abstain"] >= 0.90 else "no"],
        ["a superseded fact never above its successor (linked pairs, hybrid)",
         f"{order['linked']['old_above_new']} above, {order['linked']['old_alone_top5']} alone in top 5",
         "yes" if order["linked"]["old_above_new"] == 0 else "no"],
        ["cross-project leakage 0", f"{res['leakage']['foreign_hits']} + {res['leakage']['hook_foreign']}",
         "yes" if res["leakage"]["foreign_hits"] + res["leakage"]["hook_foreign"] == 0 else "no"]]
    res["seconds"] = time.perf_counter() - started
    res["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    main_store.store.close()
    (OUT / "bench_recall-last.json").write_text(json.dumps(res, indent=1, default=str))
    out = report(res)
    if args.no_write:
        print(out)
    else:
        write_results(out)
        print(f"wrote {RESULTS}")
    print(f"done in {res['seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
