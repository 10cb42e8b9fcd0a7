"""Recall quality (issue #10, "Measured"): retrieval, the abstain gate, successors, leakage, dedup, tokens.

On the hand-labeled set in bench/recall/dataset/ (3 projects, see its README), stores are built through the real
capture path (`Store.capture`, oldest first, each memory at its own time; `build`). Then:

- retrieval on TEST queries: recall@5, MRR@10, nDCG@10 of hybrid (`Store.search`) against vector-only and
  BM25-only, both read from the same search's components (each hit's vector_rank / text_rank);
- the abstain gate: SUBCOG_RECALL_MIN_SIMILARITY (hybrid) and SUBCOG_RECALL_MIN_TEXT_MATCH (text side alone)
  chosen on TRAIN (the largest recall of answers with abstain >= 0.95 on irrelevant train prompts; ties: the
  higher threshold), reported on TEST, then checked through the real prompt hook;
- a superseded fact against its successor; cross-project leakage; what deduplication buys (planted duplicates,
  batch `dedup`, capture-time dedup on/off); tokens per prompt and per session through
  `recall_hooks.user_prompt_submit` / `session_start` in process; search weights re-scored from components.

    .venv/bin/python -m bench.recall.bench_recall [--no-write]

Writes bench/recall/RESULTS.md (keeping the latency section of bench_recall_latency.py) and the raw figures in
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
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from subcog_store.recall import search as search_mod

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "out" / "recall"
RESULTS = HERE / "RESULTS.md"
LATENCY_MARK = "<!-- latency: bench_recall_latency.py -->"
PLACEHOLDER = {"similarity": 0.45, "text": 0.6}
ABSTAIN_FLOOR = 0.95             # the calibration constraint on irrelevant TRAIN prompts
PROMPT_LIMIT, GATE_CANDIDATES = 3, 10     # inject.prompt_context: recall_prompt_limit, max(3 * limit, 10)
SIM_GRID = [round(x, 2) for x in np.arange(0.10, 0.901, 0.01)]
TEXT_GRID = [round(x, 2) for x in np.arange(0.05, 1.001, 0.05)]


# -- the dataset and its stores -----------------------------------------------------------------------------
DATASET = Path(__file__).resolve().parent / "dataset"
REF_NOW = 1_780_272_000.0          # 2026-06-01T00:00:00Z: "now" for every search of the bench
DAY = 86400.0


@dataclass(frozen=True)
class MemoryRow:
    key: str
    project: str
    namespace: str
    content: str
    days_ago: float
    importance: float = 0.5
    updates: str | None = None      # this memory changes a fact of that earlier one
    dup_of: str | None = None       # a near-duplicate of that memory (the same fact)

    @property
    def fact(self) -> str:
        return self.dup_of or self.key


@dataclass(frozen=True)
class Query:
    qid: str
    project: str
    kind: str
    split: str
    query: str
    relevant: dict[str, int]        # fact key -> grade (2 the answer, 1 related)

    @property
    def is_relevant(self) -> bool:
        return bool(self.relevant)


RELEVANT_KINDS = ("direct", "updated", "paraphrase")
IRRELEVANT_KINDS = ("other-project", "generic", "greeting", "stopwords", "punctuation")


def load() -> tuple[list[MemoryRow], list[Query]]:
    """Both files, checked: keys, projects, the split rule, facts of relevant labels."""
    memories = [MemoryRow(**json.loads(line)) for line in (DATASET / "memories.jsonl").read_text().splitlines()
                if line.strip()]
    queries = [Query(**json.loads(line)) for line in (DATASET / "queries.jsonl").read_text().splitlines()
               if line.strip()]
    by_key = {m.key: m for m in memories}
    assert len(by_key) == len(memories), "duplicate memory keys"
    for m in memories:
        for ref in (m.updates, m.dup_of):
            assert ref is None or (ref in by_key and by_key[ref].project == m.project), m.key
    seen: Counter = Counter()
    for q in queries:
        assert q.kind in RELEVANT_KINDS + IRRELEVANT_KINDS, q.qid
        assert (q.kind in RELEVANT_KINDS) == q.is_relevant, q.qid
        expected = "train" if seen[(q.project, q.kind)] % 2 == 0 else "test"   # the split rule (README)
        assert q.split == expected, (q.qid, q.split, expected)
        seen[(q.project, q.kind)] += 1
        for key in q.relevant:
            assert key in by_key and by_key[key].project == q.project and by_key[key].fact == key, (q.qid, key)
    return memories, queries


def shared_words(queries: Iterable[Query], memories: list[MemoryRow]) -> list[tuple[str, str, set[str]]]:
    """Paraphrase queries that share a significant word with a memory of one of their relevant facts."""
    from subcog_store.text.textsim import significant_tokens

    members: dict[str, list[MemoryRow]] = defaultdict(list)
    for m in memories:
        members[m.fact].append(m)
    found = []
    for q in queries:
        if q.kind != "paraphrase":
            continue
        words = significant_tokens(q.query)
        for key in q.relevant:
            for m in members[key]:
                if words & significant_tokens(m.content):
                    found.append((q.qid, m.key, words & significant_tokens(m.content)))
    return found


class Clock:
    """A clock the bench moves: captures happen at their memory's time, searches at REF_NOW."""

    def __init__(self, now: float = REF_NOW):
        self.now = now

    def __call__(self) -> float:
        return self.now


def clean_environ(**settings: object) -> dict[str, str]:
    """os.environ without SUBCOG_* (a developer's settings must not leak in), plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    for key, value in settings.items():
        env["SUBCOG_" + key.upper()] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return env


@dataclass
class Built:
    """A store built from memory rows, and the map between dataset keys and memory ids."""

    store: object
    key_to_id: dict[str, str] = field(default_factory=dict)
    id_to_fact: dict[str, str] = field(default_factory=dict)
    decisions: dict[str, str] = field(default_factory=dict)
    capture_ms: list[float] = field(default_factory=list)

    def fact_of(self, memory_id: str) -> str:
        return self.id_to_fact.get(memory_id, "?" + memory_id)


def build(path: Path, rows: list[MemoryRow], embedder, **settings: object) -> Built:
    """A new store at `path` with `rows` captured oldest first (each at its own time), then the clock at REF_NOW."""
    import time

    from subcog_store.clock import iso
    from subcog_store.store import Store

    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    clock = Clock()
    store = Store(path, embedder=embedder, clock=clock, environ=clean_environ(**settings), fetch_model=False)
    built = Built(store)
    order = sorted(range(len(rows)), key=lambda i: (-rows[i].days_ago, i))
    for i in order:
        row = rows[i]
        created = REF_NOW - row.days_ago * DAY
        clock.now = created + 60.0
        t0 = time.perf_counter()
        result = store.capture(row.content, row.namespace, row.project, importance=row.importance,
                               created_at=iso(created), source="bench-recall",
                               session_id=f"{row.project}-week-{int(row.days_ago // 7)}")
        built.capture_ms.append((time.perf_counter() - t0) * 1000)
        built.decisions[row.key] = result.decision
        if result.memory_id:
            built.key_to_id[row.key] = result.memory_id
            built.id_to_fact.setdefault(result.memory_id, row.fact)
    clock.now = REF_NOW
    return built


# -- searching ----------------------------------------------------------------------------------------------
@dataclass
class Ranked:
    """One query's search: every candidate hit (fused order) and the three rankings as memory ids."""

    hits: list
    method: str
    hybrid: list[str] = field(default_factory=list)
    vector: list[str] = field(default_factory=list)
    bm25: list[str] = field(default_factory=list)


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
                  [h.memory.id for h in by_t])


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
def gate(hits: list, method: str, threshold: float) -> list:
    """What inject.prompt_context would inject (before the token budget) at `threshold`."""
    top = hits[:GATE_CANDIDATES]
    if method == "hybrid":
        passed = [h for h in top if (h.similarity if h.similarity is not None else -1.0) >= threshold]
    else:
        passed = [h for h in top if (h.text_match or 0.0) >= threshold and h.text_rank is not None]
    chosen = {h.memory.id for h in passed}
    return [h for h in passed if not (h.outdated_by and h.outdated_by in chosen)][:PROMPT_LIMIT]


def gate_stats(rows: list[tuple[Query, Ranked]], fact_of: Callable[[str], str], threshold: float) -> dict:
    """Abstain rate on irrelevant prompts; on relevant ones the share of answers injected, how often at least
    one answer is, how often nothing is, and the share of injected memories that are relevant."""
    abstain, ans, any_ans, silent, inj, good = [], [], [], [], 0, 0
    for q, r in rows:
        passed = gate(r.hits, r.method, threshold)
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


# -- alternative weights, re-scored from the components ------------------------------------------------------------
Params = tuple  # ("rrf", k, wv, w_imp, w_rec) or ("cos", beta, w_imp, w_rec)


def fused(h, params: Params) -> float:
    """A hit's score under `params`: weighted RRF (search._score with a vector weight) or score fusion, the
    cosine plus beta times the text match where each side found the memory; times the same importance and
    recency factors as search._score."""
    if params[0] == "rrf":
        _, k, wv, w_imp, w_rec = params
        base = (wv / (k + h.vector_rank) if h.vector_rank else 0.0) + (1.0 / (k + h.text_rank) if h.text_rank else 0.0)
    else:
        _, beta, w_imp, w_rec = params
        base = (h.similarity if h.similarity is not None else 0.0) + \
            (beta * (h.text_match or 0.0) if h.text_rank else 0.0)
    return base * (1 + w_imp * (h.importance - 0.5)) * (1 + w_rec * h.recency)


def rescore(hits: list, params: Params) -> list:
    """The hits in the order search would give them under `params` (successors first, as _order_successors)."""
    scores = {h.memory.id: fused(h, params) for h in hits}
    for _ in range(len(hits)):
        moved = False
        for h in hits:
            succ = h.outdated_by
            if succ in scores and scores[h.memory.id] >= scores[succ]:
                scores[h.memory.id] = math.nextafter(scores[succ], 0.0) * 0.999
                moved = True
        if not moved:
            break
    return sorted(hits, key=lambda h: -scores[h.memory.id])


CURRENT: Params = ("rrf", search_mod.RRF_K, search_mod.W_VECTOR, search_mod.W_IMPORTANCE, search_mod.W_RECENCY)
EARLIER: Params = ("rrf", 60, 1.0, 0.5, 0.1)   # the first shipped fusion: plain RRF, both sides alike
RRF_GRID: list[Params] = [("rrf", k, wv, wi, wr) for k in (0, 1, 2, 5, 10, 30, 60) for wv in (1.0, 2.0, 3.0, 5.0)
                          for wi in (0.0, 0.25, 0.5) for wr in (0.0, 0.1)]
COS_GRID: list[Params] = [("cos", beta, wi, wr) for beta in (0.0, 0.1, 0.2, 0.3, 0.5) for wi in (0.0, 0.25, 0.5)
                          for wr in (0.0, 0.1)]


def reorder(rows: list[tuple[Query, Ranked]], params: Params) -> list[tuple[Query, Ranked]]:
    out = []
    for q, r in rows:
        hits = rescore(r.hits, params) if r.method == "hybrid" else r.hits
        out.append((q, Ranked(hits, r.method, [h.memory.id for h in hits], r.vector, r.bm25)))
    return out


def weights(rows_train, rows_test, fact_of) -> dict:
    """Both grids chosen on train (nDCG@10, then MRR@10; ties: the earlier, simpler entry), reported on test;
    and the gate re-calibrated on train under the best ordering."""
    def score(rows, params) -> dict:
        return summarize([ranking_metrics([h.memory.id for h in rescore(r.hits, params)], fact_of, q.relevant)
                          for q, r in rows if q.is_relevant])

    def best_of(grid: list[Params]) -> Params:
        scored = [(p, score(rows_train, p)) for p in grid]
        top = max(round(s["ndcg10"], 9) for _, s in scored)
        return max((x for x in scored if round(x[1]["ndcg10"], 9) == top), key=lambda x: x[1]["mrr10"])[0]

    best_rrf, best_cos = best_of(RRF_GRID), best_of(COS_GRID)
    best_constants = best_of([p for p in RRF_GRID if p[2] == 1.0])
    picks = {f"shipped: RRF k={CURRENT[1]:g}, wv={CURRENT[2]:g}, W_IMPORTANCE={CURRENT[3]:g}, "
             f"W_RECENCY={CURRENT[4]:g}": CURRENT,
             "earlier: RRF k=60, wv=1, W_IMPORTANCE=0.5, W_RECENCY=0.1": EARLIER,
             "earlier RRF without importance/recency": ("rrf", 60, 1.0, 0.0, 0.0),
             "best with existing constants only (wv=1)": best_constants,
             "best weighted RRF on train": best_rrf, "best score fusion on train": best_cos,
             "cosine alone (vector-only order by cosine)": ("cos", 0.0, 0.0, 0.0)}
    out = {name: {"params": p, "train": score(rows_train, p), "test": score(rows_test, p)} for name, p in picks.items()}
    rrf_rows = sorted(((p, score(rows_train, p)) for p in RRF_GRID), key=lambda x: -x[1]["ndcg10"])[:10]
    out["_rrf_top_train"] = [[list(p), round(s["ndcg10"], 4), round(s["mrr10"], 4)] for p, s in rrf_rows]
    for name, p in (("best weighted RRF on train", best_rrf), ("best score fusion on train", best_cos)):
        train_r, test_r = reorder(rows_train, p), reorder(rows_test, p)
        t, _ = calibrate(train_r, fact_of, SIM_GRID)
        out[name]["gate"] = {"threshold": t, "train": gate_stats(train_r, fact_of, t),
                             "test": gate_stats(test_r, fact_of, t)}
    return out


# -- the text side with stemming (an experiment beside the product's FTS5 index) --------------------------------------
def porter_text_side(built: Built, rows: list[tuple[Query, Ranked]]) -> dict:
    """BM25-only with the same query (textsim.fts_query) against a temporary FTS5 index of the same memories with
    the porter tokenizer (prices ~ price, stored ~ store), next to the shipped unicode61 index."""
    from subcog_store.text.textsim import fts_query

    con = built.store.con
    con.execute("create virtual table if not exists temp.bench_fts_porter using fts5(content, "
                "tokenize='porter unicode61')")
    con.execute("delete from temp.bench_fts_porter")
    con.execute("insert into temp.bench_fts_porter(rowid, content) select seq, content from memories")
    sql = ("select m.id from bench_fts_porter join memories m on m.seq = bench_fts_porter.rowid "
           "where bench_fts_porter match :q and m.domain = :d and m.status = 'active' "
           "order by bm25(bench_fts_porter) limit 50")
    per = []
    for q, r in rows:
        if not q.is_relevant:
            continue
        fq = fts_query(q.query)
        ids = [row[0] for row in con.execute(sql, {"q": fq, "d": q.project})] if fq else []
        per.append((q, ranking_metrics(ids, built.fact_of, q.relevant), ranking_metrics(r.bm25, built.fact_of,
                                                                                          q.relevant)))
    con.execute("drop table temp.bench_fts_porter")
    out = {}
    for kind in ("all", "direct", "updated"):
        sel = [x for x in per if kind == "all" or x[0].kind == kind]
        out[kind] = {"porter": summarize([x[1] for x in sel]), "shipped": summarize([x[2] for x in sel])}
    return out


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


def dedup_benefit(bench: Bench, test_rel: list[Query], reference: Built, best: Params) -> dict:
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
        best_per = [ranking_metrics([h.memory.id for h in rescore(r.hits, best)], built.fact_of, q.relevant)
                    for q, r in ranked]
        out[label] = summarize(per) | {"active": active, "dup_slots5": mean([m["slots5"] - m["distinct5"] for m in per]),
                                       "best": summarize(best_per),
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
    L: list[str] = ["# Recall benchmark results (issue #10, Measured)", ""]
    L.append(f"Quality: `python -m bench.recall.bench_recall` on {res['date']} (commit {m['commit']}, product code "
             f"{m['product_tree']}); raw figures in `bench/out/recall/bench_recall-last.json` (git-ignored). "
             f"Latency: `python -m bench.recall.bench_recall_latency` (its section at the end).")
    g0, h0, w0 = res["gate"], res["retrieval_test"], res["weights"]
    earlier = next(v for k, v in w0.items() if k.startswith("earlier: "))
    best = w0["best weighted RRF on train"]
    L += ["", "## Summary", "",
          f"- Abstain gate, calibrated on train: **SUBCOG_RECALL_MIN_SIMILARITY = {g0['similarity']:.2f}**, "
          f"**SUBCOG_RECALL_MIN_TEXT_MATCH = {g0['text_match']:.2f}**. On test: abstain "
          f"{g0['sim']['chosen']['test']['abstain']:.3f} (cosine) / {g0['txt']['chosen']['test']['abstain']:.3f} "
          f"(text side) on irrelevant prompts; answers injected for "
          f"{g0['sim']['chosen']['test']['answer_recall']:.3f} / {g0['txt']['chosen']['test']['answer_recall']:.3f} "
          "of the relevant ones.",
          f"- Retrieval on test, hybrid as shipped / vector-only / BM25-only: recall@5 "
          f"{h0['hybrid']['all']['recall5']:.3f} / {h0['vector']['all']['recall5']:.3f} / "
          f"{h0['bm25']['all']['recall5']:.3f}, MRR@10 {h0['hybrid']['all']['mrr10']:.3f} / "
          f"{h0['vector']['all']['mrr10']:.3f} / {h0['bm25']['all']['mrr10']:.3f}, nDCG@10 "
          f"{h0['hybrid']['all']['ndcg10']:.3f} / {h0['vector']['all']['ndcg10']:.3f} / "
          f"{h0['bm25']['all']['ndcg10']:.3f}. The shipped fusion is the weighted RRF chosen on train (k={CURRENT[1]:g}, "
          f"vector weight {CURRENT[2]:g}, W_IMPORTANCE {CURRENT[3]:g}, W_RECENCY {CURRENT[4]:g}; the train grid's best "
          f"is k={best['params'][1]}, vector weight {best['params'][2]:g}); the earlier plain RRF (k=60) gave "
          f"recall@5 {earlier['test']['recall5']:.3f} and MRR@10 {earlier['test']['mrr10']:.3f} on test (see \"Search weights\").",
          f"- Superseded facts: never above their successor in the fused ranking "
          f"({res['successors']['order']['hybrid']['linked']['old_above_new']} cases); cross-project leakage "
          f"{res['leakage']['foreign_hits'] + res['leakage']['hook_foreign']}.",
          f"- Duplicates: with capture-time dedup off, {res['dedup']['capture-time dedup off']['dup_slots5']:.1f} of "
          f"the 5 top slots repeat a fact; batch `dedup` brings it to "
          f"{res['dedup']['dedup off, then batch `dedup`']['dup_slots5']:.2f}, capture-time dedup to "
          f"{res['dedup']['capture-time dedup on']['dup_slots5']:.2f}.",
          f"- Tokens: {res['tokens']['hybrid']['tokens_per_prompt_mean']:.0f} per prompt on average (hybrid; "
          f"{res['tokens']['text']['tokens_per_prompt_mean']:.0f} text side), about 500 at session start, "
          f"{min(res['tokens']['hybrid']['session_tokens'])}-{max(res['tokens']['hybrid']['session_tokens'])} per "
          f"session of {res['tokens']['hybrid']['prompts'] // 3} prompts (budget 3000)."]
    L += ["", "## Machine", "",
          f"{m['cpu']}, {m['cores']} cores, {m['os']}; Python {m['python']}, apsw {m['apsw']} (SQLite {m['sqlite']}), "
          f"sqlite-vec {m['sqlite-vec']}, onnxruntime {m['onnxruntime']}. Load average at start "
          f"{m['load_avg_at_start']}, at end {res['load_end']} (shared machine). Quality figures do not depend on "
          f"load; the run took {res['seconds']:.0f} s.", ""]
    L += ["## Dataset", "",
          f"`bench/recall/dataset/` (see its README): {d['memories']} hand-written memories of 3 projects "
          f"({', '.join(f'{p}: {n}' for p, n in d['per_project'].items())}), captured through `Store.capture` oldest "
          f"first over {d['span_days']} days; {d['queries']} queries: {d['relevant']} relevant with graded labels "
          f"({d['paraphrase']} paraphrases sharing no significant word with any memory of their facts, checked), "
          f"{d['irrelevant']} for which nothing in that project is relevant. Split by a fixed rule (alternate within "
          f"each project and kind): train {d['train']}, test {d['test']}. Every figure below is on TEST unless it "
          f"says train.", "",
          f"Capture decisions: {d['decisions']}. The store linked {d['linked_updates']} of the {d['updates']} "
          f"labeled updates (changed_fact); the one it did not ({', '.join(d['unlinked_updates']) or 'none'}) stays "
          f"two unlinked active memories. Of the {d['dups']} hand-written near-duplicates, "
          f"{d['dup_decisions']}.", ""]
    # retrieval
    r = res["retrieval_test"]
    L += ["## Retrieval quality (test)", "",
          f"Hybrid is `Store.search` as shipped (vec0 KNN + FTS5 BM25, weighted RRF k={CURRENT[1]:g} with the vector "
          f"side counting {CURRENT[2]:g}x, decayed importance, recency, successors first). Vector-only and BM25-only are the same search's candidates ordered by their "
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
    L += ["Why the fusion weights the vector side (measured on the earlier plain fusion): with RRF k=60 a memory "
          "found by both sides scores "
          "1/(60+v) + 1/(60+t) >= 2/110, above any memory found by one side (at most 1/61), and the text side is an "
          "OR of every significant word of the prompt (question words such as what, which, how, why included), so "
          "memories sharing one incidental word with it (\"store\", \"which\", \"app\") outrank the answer the "
          "vector side put first. Within one side adjacent ranks differ by about 1.6% of the score, while the "
          "decayed importance and recency factors span about 19% between a fresh memory and a 300-day-old one of "
          "the same importance: age alone moves a memory about 12 ranks. On test, hybrid's top hit was found by "
          f"both sides for {bs['top_both']:.0%} of the relevant queries, while the answer was found by both sides "
          f"for {bs['answer_both']:.0%} and by the vector side alone for {bs['answer_vector_only']:.0%} (all the "
          "paraphrases).", ""]
    if res["misses_test"]:
        L += ["Test answers hybrid leaves out of the top 5 (rank in the fused list; each side's rank; cosine):", ""]
        L += [md_table(["query", "kind", "answer", "hybrid rank", "vector rank", "BM25 rank", "cosine"],
                       [[x["query"], x["kind"], x["answer"], x["rank"], x["vector_rank"], x["text_rank"],
                         x["similarity"]] for x in res["misses_test"]]), ""]
    # gate
    g = res["gate"]
    L += ["## The abstain gate", "",
          f"Rule, on TRAIN only: the threshold with the largest share of answers injected (of relevant prompts) "
          f"subject to abstaining on at least {ABSTAIN_FLOOR:.0%} of the irrelevant train prompts; ties go to the "
          f"higher threshold. The gate is simulated exactly as `inject.prompt_context` applies it (top "
          f"{GATE_CANDIDATES} of the fused list, threshold, a successor drops its outdated memory, at most "
          f"{PROMPT_LIMIT}), then checked through the real hook (`recall_hooks.user_prompt_submit`, a fresh session "
          f"per prompt, the prompt token budget applying).", "",
          f"**Chosen: SUBCOG_RECALL_MIN_SIMILARITY = {g['similarity']:.2f}, "
          f"SUBCOG_RECALL_MIN_TEXT_MATCH = {g['text_match']:.2f}** (placeholders {PLACEHOLDER['similarity']} and "
          f"{PLACEHOLDER['text']}).", ""]
    rows = []
    for label, key in (("hybrid (model loaded)", "sim"), ("text side alone (no model)", "txt")):
        for which in ("chosen", "placeholder"):
            tr, te = g[key][which]["train"], g[key][which]["test"]
            rows.append([label if which == "chosen" else "", f"{which} {te['threshold']:.2f}", f3(tr["abstain"]),
                         f3(tr["answer_recall"]), f3(te["abstain"]), f3(te["answer_recall"]), f3(te["answered"]),
                         f3(te["silent_on_relevant"]), f3(te["precision"])])
    L += [md_table(["side", "threshold", "train abstain", "train answers injected", "TEST abstain (irrelevant)",
                    "TEST answers injected", "TEST relevant prompts with an answer", "TEST relevant prompts given "
                    "nothing", "TEST injected that are relevant"], rows), ""]
    hc = g["hook_check"]
    L += [f"Through the real hook at the chosen values (test): hybrid abstain {f3(hc['hybrid']['abstain'])}, relevant "
          f"prompts answered {f3(hc['hybrid']['answered'])} (methods {hc['hybrid']['methods']}); text side alone "
          f"abstain {f3(hc['text']['abstain'])}, answered {f3(hc['text']['answered'])} (methods "
          f"{hc['text']['methods']}).", ""]
    L += ["Abstain on irrelevant TEST prompts by kind (chosen values):", ""]
    L += [md_table(["kind", "n", "hybrid abstain", "text-side abstain"],
                   [[k, v["n"], f3(v["hybrid"]), f3(v["text"])] for k, v in g["by_kind"].items()]), ""]
    L += ["Train sweep of the cosine gate (the feasible region is abstain >= 0.95):", ""]
    L += [md_table(["min similarity", "train abstain", "train answers injected", "train precision", "test abstain",
                    "test answers injected"],
                   [[f"{a['threshold']:.2f}", f3(a["abstain"]), f3(a["answer_recall"]), f3(a["precision"]),
                     f3(b["abstain"]), f3(b["answer_recall"])] for a, b in g["sim_sweep_view"]]), ""]
    L += ["Train sweep of the text gate:", ""]
    L += [md_table(["min text match", "train abstain", "train answers injected", "test abstain", "test answers injected"],
                   [[f"{a['threshold']:.2f}", f3(a["abstain"]), f3(a["answer_recall"]), f3(b["abstain"]),
                     f3(b["answer_recall"])] for a, b in g["text_sweep_view"]]), ""]
    if g.get("false_alarms"):
        L += ["Irrelevant test prompts the chosen cosine gate still answers (what it injected, cosine):", ""]
        L += [md_table(["project", "kind", "prompt", "injected", "cosine"],
                       [[x["project"], x["kind"], x["query"], x["injected"], x["cosine"]] for x in g["false_alarms"]]), ""]
    # successors
    s = res["successors"]
    L += ["## Superseded facts and their successors", "",
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
          f"Through the hook at the chosen gate, an outdated memory was injected without its successor "
          f"{s['hook_outdated_alone']} times over all test prompts.", ""]
    # leakage
    lk = res["leakage"]
    L += ["## Cross-project leakage", "",
          f"{lk['searches']} searches (every query in its project and every memory's own text asked in each other "
          f"project, hybrid and text side): **{lk['foreign_hits']} foreign memories returned**. {lk['hook_calls']} "
          f"prompt-hook calls with another project's memory text at the chosen gate (model loaded, and text "
          f"side alone): "
          f"**{lk['hook_foreign']} foreign memories injected**.", ""]
    # dedup
    dd = res["dedup"]
    L += ["## What deduplication buys", "",
          f"{dd['planted']} planted re-captures: each current fact stated again in two later sessions (a "
          f"\"Reminder:\" prefix; its clauses swapped around the first ';', or without one \" Still current.\" "
          f"appended), on top of the "
          f"hand-written near-duplicates. Hybrid search, test relevant queries.", ""]
    rows = []
    for label in ("reference (no planted duplicates, dedup on)", "capture-time dedup off",
                  "dedup off, then batch `dedup`", "capture-time dedup on"):
        x = dd[label]
        rows.append([label, x["active"], f3(x["distinct5"]), f3(x["dup_slots5"]), f3(x["recall5"]),
                     f3(x["mrr10"]), f3(x["ndcg10"]), f3(x["best"]["distinct5"]), f3(x["best"]["recall5"]),
                     f3(x["best"]["mrr10"]), x["linked_pairs"], x["old_above_new"]])
    L += [md_table(["store", "active memories", "distinct facts in top 5", "repeat slots in top 5", "recall@5",
                    "MRR@10", "nDCG@10", "distinct in top 5, best weighted RRF", "recall@5, best weighted RRF",
                    "MRR@10, best weighted RRF", "successor links", "old above successor"], rows), ""]
    b = dd["batch"]
    L += [f"Batch `dedup` on the dedup-off store: {b['clusters']} clusters, {b['removed']} memories merged away "
          f"({b['before']} -> {b['after']} active), {b['guarded']} pairs kept apart by the guard, {b['seconds']} s; "
          f"afterwards {b['facts_repeated']} facts still have more than one active memory (a cluster's survivor is "
          f"its newest member: for {b['survivor_planted']} facts a planted re-capture, its text merged from the "
          f"cluster by the built-in merger). "
          f"Capture-time dedup on the planted re-captures: {dd['capture_on_decisions']}; on the hand-written "
          f"near-duplicates: {dd['capture_on_decisions_handwritten']}.", "",
          "Read the distinct-facts columns: under the shipped fusion MRR@10 even rises with duplicates, because the "
          "planted copies are newer and its age factors favour them; under the best weighted RRF (which ranks by "
          "the sides' ranks first) duplicates cost what one expects. With capture-time dedup off the capture check "
          "does not run at all, so changed facts are not linked to their successors either, and batch `dedup` does "
          "not link them afterwards (0 successor links).", ""]
    # tokens
    t = res["tokens"]
    L += ["## Tokens injected", "",
          "One session per project: `session-start` (startup), then that project's TEST prompts (relevant and "
          "irrelevant, shuffled with a fixed seed) through `user_prompt_submit`, in process, at the chosen gate. "
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
    # weights
    w = res["weights"]
    L += ["## Search weights (re-scored from the components)", "",
          "Each hit's vector rank, text rank, cosine, text match, decayed importance and recency (the search's own "
          "components) re-combined with other constants, successors still first, chosen on TRAIN nDCG@10. Weighted "
          "RRF: `(wv / (k + vector_rank) + 1 / (k + text_rank)) * importance and recency factors` over k in {0, 1, 2, "
          "5, 10, 30, 60}, wv in {1, 2, 3, 5}, W_IMPORTANCE in {0, 0.25, 0.5}, W_RECENCY in {0, 0.1}. Score fusion: "
          "`(cosine + beta * text_match) * the same factors` (each term only where its side found the memory), beta "
          "in {0, 0.1, 0.2, 0.3, 0.5}. Params are (k, wv, W_IMPORTANCE, W_RECENCY) or (beta, W_IMPORTANCE, "
          "W_RECENCY).", ""]
    rows = [[name, x["params"][1:], f3(x["train"]["recall5"]), f3(x["train"]["mrr10"]), f3(x["train"]["ndcg10"]),
             f3(x["test"]["recall5"]), f3(x["test"]["mrr10"]), f3(x["test"]["ndcg10"])]
            for name, x in w.items() if not name.startswith("_")]
    L += [md_table(["ordering", "params", "train recall@5", "train MRR@10", "train nDCG@10", "test recall@5",
                    "test MRR@10", "test nDCG@10"], rows), ""]
    L += ["Top of the weighted-RRF grid on train (params, nDCG@10, MRR@10): " +
          "; ".join(f"{tuple(p[1:])} {n:.3f} {m:.3f}" for p, n, m in w["_rrf_top_train"][:6]) + ".", ""]
    L += ["The cosine gate re-calibrated on train under these orderings (same rule), on test:", ""]
    rows = []
    for name in ("best weighted RRF on train", "best score fusion on train"):
        x = w[name]["gate"]
        rows.append([name, f"{x['threshold']:.2f}", f3(x["train"]["abstain"]), f3(x["train"]["answer_recall"]),
                     f3(x["test"]["abstain"]), f3(x["test"]["answer_recall"]), f3(x["test"]["precision"])])
    L += [md_table(["ordering", "min similarity", "train abstain", "train answers injected", "test abstain",
                    "test answers injected", "test injected that are relevant"], rows), ""]
    pt = res["porter"]
    L += ["## The text side with stemming (experiment)", "",
          "BM25-only on test relevant queries, the same FTS5 query against a temporary index of the same memories "
          "with `tokenize='porter unicode61'` instead of the shipped default tokenizer (the prompt hook's only side "
          "while the model is not loaded):", ""]
    L += [md_table(["queries", "index", "n", "recall@5", "MRR@10", "nDCG@10"],
                   [[kind if idx == "shipped" else "", idx, pt[kind][idx]["n"], f3(pt[kind][idx]["recall5"]),
                     f3(pt[kind][idx]["mrr10"]), f3(pt[kind][idx]["ndcg10"])]
                    for kind in ("all", "direct", "updated") for idx in ("shipped", "porter")]), ""]
    # targets
    L += ["## Targets", "", md_table(["target", "measured (test)", "met"], res["targets"]), ""]
    return "\n".join(L) + "\n"


def write_results(text: str) -> None:
    """RESULTS.md with this report, keeping the latency section bench_recall_latency.py wrote."""
    latency = ""
    if RESULTS.exists():
        old = RESULTS.read_text()
        if LATENCY_MARK in old:
            latency = old[old.index(LATENCY_MARK):]
    RESULTS.write_text(text + ("\n" + latency if latency else ""))


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
    assert not shared_words(queries, memories), shared_words(queries, memories)
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

    print("calibrating the gate on train", flush=True)
    sim, sim_sweep = calibrate(train_rows, fact_of, SIM_GRID)
    text, text_sweep = calibrate(train_text, fact_of, TEXT_GRID)
    sim_test = {s["threshold"]: s for s in (gate_stats(test_rows, fact_of, t) for t in SIM_GRID)}
    text_test = {s["threshold"]: s for s in (gate_stats(test_text, fact_of, t) for t in TEXT_GRID)}
    sim_train = {s["threshold"]: s for s in sim_sweep}
    text_train = {s["threshold"]: s for s in text_sweep}
    view = sorted({round(x, 2) for x in (0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, sim - 0.02, sim - 0.01,
                                          sim, sim + 0.01, sim + 0.02)} & set(sim_train))
    gate_res: dict = {
        "similarity": sim, "text_match": text,
        "sim": {"chosen": {"train": sim_train[sim], "test": sim_test[sim]},
                "placeholder": {"train": sim_train[PLACEHOLDER["similarity"]],
                                "test": sim_test[PLACEHOLDER["similarity"]]}},
        "txt": {"chosen": {"train": text_train[text], "test": text_test[text]},
                "placeholder": {"train": text_train[PLACEHOLDER["text"]], "test": text_test[PLACEHOLDER["text"]]}},
        "sim_sweep_view": [(sim_train[t], sim_test[t]) for t in view],
        "text_sweep_view": [(text_train[t], text_test[t]) for t in TEXT_GRID if 0.1 <= t <= 0.9],
        "sim_sweep": sim_sweep, "text_sweep": text_sweep,
    }
    by_kind = {}
    for kind in IRRELEVANT_KINDS:
        rows_h = [(q, r) for q, r in test_rows if q.kind == kind]
        rows_t = [(q, r) for q, r in test_text if q.kind == kind]
        by_kind[kind] = {"n": len(rows_h), "hybrid": gate_stats(rows_h, fact_of, sim)["abstain"],
                         "text": gate_stats(rows_t, fact_of, text)["abstain"]}
    gate_res["by_kind"] = by_kind
    gate_res["false_alarms"] = [
        {"project": q.project, "kind": q.kind, "query": q.query,
         "injected": ", ".join(fact_of(h.memory.id) for h in gate(r.hits, r.method, sim)),
         "cosine": ", ".join(f"{h.similarity:.3f}" for h in gate(r.hits, r.method, sim))}
        for q, r in test_rows if not q.is_relevant and gate(r.hits, r.method, sim)]
    print(f"  chosen similarity {sim}, text {text}; checking through the hook", flush=True)
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
    print("weights", flush=True)
    res["weights"] = weights(train_rows, test_rows, fact_of)
    res["porter"] = porter_text_side(main_store, test_rows)
    print("dedup", flush=True)
    res["dedup"] = dedup_benefit(bench, bench.split("test", relevant=True), main_store,
                                 res["weights"]["best weighted RRF on train"]["params"])

    h = res["retrieval_test"]["hybrid"]["all"]
    gt = res["gate"]["sim"]["chosen"]["test"]
    order = res["successors"]["order"]["hybrid"]
    res["targets"] = [
        ["recall@5 >= 0.90 (hybrid)", f3(h["recall5"]), "yes" if h["recall5"] >= 0.90 else "no"],
        ["MRR@10 >= 0.80 (hybrid)", f3(h["mrr10"]), "yes" if h["mrr10"] >= 0.80 else "no"],
        ["abstain >= 0.90 on irrelevant prompts (cosine gate)", f3(gt["abstain"]),
         "yes" if gt["abstain"] >= 0.90 else "no"],
        ["abstain >= 0.90 on irrelevant prompts (text gate, no model)", f3(res["gate"]["txt"]["chosen"]["test"]["abstain"]),
         "yes" if res["gate"]["txt"]["chosen"]["test"]["abstain"] >= 0.90 else "no"],
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
