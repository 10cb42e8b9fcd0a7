"""The labelled recall sets, loaded and checked, and stores built from them through the real capture path.

A set is a folder with `memories.jsonl` and `queries.jsonl` (`bench/recall/dataset/` and `dataset2/`, see their
READMEs). `load(path)` checks keys, projects, facts of labels, the split rule and the paraphrase word rule;
`build(path, rows, ...)` captures every memory oldest first, each at its own time (`created_at`), as
`capture --jsonl` would, so the store links changed facts the way it does for a user.
"""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETS = {"set1": HERE / "dataset", "set2": HERE / "dataset2"}
REF_NOW = 1_780_272_000.0          # 2026-06-01T00:00:00Z: "now" for every search of the bench
DAY = 86400.0
RELEVANT_KINDS = ("direct", "updated", "paraphrase")
IRRELEVANT_KINDS = ("other-project", "generic", "greeting", "stopwords", "punctuation", "odd")


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
    relevant: dict                  # fact key -> grade (2 the answer, 1 related)

    @property
    def is_relevant(self) -> bool:
        return bool(self.relevant)

    @property
    def answers(self) -> set[str]:
        return {k for k, g in self.relevant.items() if g == 2}


def load(path: Path) -> tuple[list[MemoryRow], list[Query]]:
    """Both files of a set, checked (see the module docstring)."""
    from subcog_store.text.textsim import significant_tokens

    memories = [MemoryRow(**json.loads(line)) for line in (path / "memories.jsonl").read_text().splitlines()
                if line.strip()]
    queries = [Query(**json.loads(line)) for line in (path / "queries.jsonl").read_text().splitlines()
               if line.strip()]
    by_key = {m.key: m for m in memories}
    assert len(by_key) == len(memories), "duplicate memory keys"
    members: dict[str, list[MemoryRow]] = defaultdict(list)
    for m in memories:
        members[m.fact].append(m)
        for ref in (m.updates, m.dup_of):
            assert ref is None or (ref in by_key and by_key[ref].project == m.project), m.key
    seen: Counter = Counter()
    for q in queries:
        assert q.kind in RELEVANT_KINDS + IRRELEVANT_KINDS, q.qid
        assert (q.kind in RELEVANT_KINDS) == q.is_relevant, q.qid
        assert q.split == ("train" if seen[(q.project, q.kind)] % 2 == 0 else "test"), q.qid
        seen[(q.project, q.kind)] += 1
        for key in q.relevant:
            assert key in by_key and by_key[key].project == q.project and by_key[key].fact == key, (q.qid, key)
            if q.kind == "paraphrase":
                shared = [significant_tokens(q.query) & significant_tokens(m.content) for m in members[key]]
                assert not any(shared), (q.qid, key, shared)
    return memories, queries


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
    """A store built from memory rows, and the maps between dataset keys, memory ids and facts."""

    store: object
    key_to_id: dict[str, str] = field(default_factory=dict)
    id_to_fact: dict[str, str] = field(default_factory=dict)
    id_to_key: dict[str, str] = field(default_factory=dict)
    decisions: dict[str, str] = field(default_factory=dict)

    def fact_of(self, memory_id: str) -> str:
        return self.id_to_fact.get(memory_id, "?" + memory_id)


def build(path: Path, rows: list[MemoryRow], embedder, *, domain_of=lambda row: row.project,
          existing: bool = False, **settings: object) -> Built:
    """A store at `path` (new unless `existing`) with `rows` captured oldest first, then the clock at REF_NOW."""
    from subcog_store.clock import iso
    from subcog_store.store import Store

    if not existing:
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    clock = Clock()
    store = Store(path, embedder=embedder, clock=clock, environ=clean_environ(**settings), fetch_model=False)
    built = Built(store)
    for row in sorted(rows, key=lambda r: -r.days_ago):
        created = REF_NOW - row.days_ago * DAY
        clock.now = created + 60.0
        result = store.capture(row.content, row.namespace, domain_of(row), importance=row.importance,
                               created_at=iso(created), source="bench-recall",
                               session_id=f"{row.project}-week-{int(row.days_ago // 7)}")
        built.decisions[row.key] = result.decision
        if result.memory_id:
            built.key_to_id[row.key] = result.memory_id
            built.id_to_fact.setdefault(result.memory_id, row.fact)
            built.id_to_key.setdefault(result.memory_id, row.key)
    clock.now = REF_NOW
    return built
