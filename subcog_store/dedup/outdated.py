"""Changed facts found by subject, in the store: the older memories of a project that a new capture outdates.

When a capture is stored, `find_outdated` takes the nearest current memories of the same domain, every
namespace, at cosine >= FLOOR (far below any duplicate threshold: a fact changed in other words, "we moved
global state to Zustand" after "we use Redux Toolkit", scores 0.5-0.85), stated no later than the new one, and
asks `text.changes.supersedes(older, newer)` whether the new one gives another value or choice for the same
subject. `link_outdated`, inside the capture's write transaction, marks each as outdated by the new memory
(`successor_id`: it stays searchable, ranked below its successor, shown marked as outdated) and logs one
`changed_fact` decision per link (policy `subject`, the change in `reasoning`), which `reverse` undoes (the link
goes, both memories stay). Capture (the hooks, `capture`, `capture --jsonl`, MCP `remember`) runs it on every
stored memory that has a vector; without the model it does not run.

FLOOR and CANDIDATES: the changed pairs of bench/recall/dataset and dataset2 lie at cosine 0.52-1.0; ten
neighbours hold every labelled older memory of both sets (bench/recall/RESULTS.md, "Changed facts").

SIGN_POOL: the neighbours are looked for among the SIGN_POOL nearest of the domain by sign bits (memory_bits),
re-scored exactly: a top-k heuristic, about 3x cheaper per capture than vec0's float scan of the whole domain
(8 ms at 10,000 memories), which a capture paid on every stored memory. Chosen on bench/corpus.py's first 10,000
vectors (200 queries from the rest of its 100,000): 48 keeps 99.7% of the exact scan's ten nearest at cosine >=
FLOOR (32: 98.6%, 96: 100%); held out: the larger stores and both labelled sets in bench/RESULTS.md ("Changed
facts: the sign-bit pool").
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from subcog_store.db import decisions, memories as writer, search
from subcog_store.db.connection import Error as DbError
from subcog_store.text.changes import Change, supersedes

if TYPE_CHECKING:
    import apsw
    import numpy as np

log = logging.getLogger("subcog_store")
FLOOR = 0.5          # cosine: below it two memories are not about the same subject
CANDIDATES = 10      # nearest current memories of the domain judged
SIGN_POOL = 48       # nearest by sign bits re-scored to find them


@dataclass(frozen=True)
class Outdated:
    """An older memory a new one outdates, and why."""

    memory_id: str
    namespace: str
    content: str
    similarity: float
    change: Change
    newer: bool = False   # True: the stored memory is the later statement, and the new capture is outdated by it


def find_outdated(con: "apsw.Connection", vector: "np.ndarray", content: str, domain: str,
                  created_at: str | None = None, exclude: frozenset[str] | set[str] = frozenset()
                  ) -> list[Outdated]:
    """The current memories of `domain` that `content` (embedded as `vector`, stated at `created_at`) outdates:
    cosine >= FLOOR among the CANDIDATES nearest, created no later than it, and `supersedes` says so. A memory
    stated after it (an older session imported late) comes back with `newer=True` when it outdates `content`."""
    try:
        rows = search.nearest_current(con, vector.astype("float32").tobytes(), domain, CANDIDATES, SIGN_POOL)
    except DbError as e:   # a failed look-up never stops a capture: it is stored without links
        log.warning("changed-facts look-up failed: %s: %s", type(e).__name__, e)
        return []
    found = []
    for memory_id, namespace, older, older_at, similarity in rows:
        if similarity < FLOOR or memory_id in exclude:
            continue
        later = bool(created_at and older_at > created_at)
        change = supersedes(content, older) if later else supersedes(older, content)
        if change is not None:
            found.append(Outdated(memory_id, namespace, older, float(similarity), change, later))
    return found


def link_outdated(con: "apsw.Connection", found: list[Outdated], *, memory_id: str, domain: str, namespace: str,
                  content: str, content_hash: str, now: str) -> list[str]:
    """Inside the capture's write transaction: link each still-current memory of `found` as outdated by
    `memory_id` (or, `newer`, the new memory as outdated by it) and log a reversible `changed_fact` decision for
    each. Returns the ids of the memories linked as outdated."""
    linked = []
    for old in found:
        current = writer.get(con, old.memory_id)
        if current is None or current.status != "active" or current.successor_id:
            continue   # changed since it was found
        outdated, successor = (memory_id, old.memory_id) if old.newer else (old.memory_id, memory_id)
        row = current if outdated == old.memory_id else writer.get(con, outdated)   # the row just read, or the new
        if row.successor_id or _leads_to(con, successor, outdated):
            continue   # already outdated by another, or the link would close a loop
        undo = decisions.Undo(candidate=None)
        undo.before.append(writer.link_successor(con, outdated, successor, now))
        undo.expect(outdated, "active", successor)
        decisions.log_decision(con, decisions.Decision(
            decided_at=now, domain=domain, namespace=namespace, policy="subject", decision="changed_fact",
            new_content=content, new_hash=content_hash, matched_memory_id=old.memory_id,
            matched_content=old.content, similarity=old.similarity, memory_id=memory_id,
            reasoning=old.change.describe(), undo=undo, members=decisions.members([outdated], "outdated")))
        linked.append(outdated)
    return linked


def _leads_to(con: "apsw.Connection", start: str, target: str, limit: int = 64) -> bool:
    """Whether following successor links from `start` reaches `target` (a link to it would make a loop)."""
    seen, current = set(), start
    while current and current not in seen and len(seen) < limit:
        if current == target:
            return True
        seen.add(current)
        memory = writer.get(con, current)
        current = memory.successor_id if memory else None
    return False
