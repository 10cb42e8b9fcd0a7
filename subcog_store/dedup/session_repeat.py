"""One memory per fact within a session: a hook capture that says again, in other words, what the same session
already stored is a repeat, not a new memory.

The store's duplicate rule (dedup/rule.py) asks for near-identity (cosine at the namespace threshold, 0.88-0.92,
and no added fact), which a session's restatements rarely meet: a finding is told in the diagnosis, again in
the summary of what was done, again in the compaction summary, each time reworded and trimmed. Within one
session the same subject said again is a restatement unless it changes the fact, so here the bar is the lower
SESSION_REPEAT and only the changed-fact half of the guard applies (a different value, version, negation or
role: kept, and linked as a changed fact by the store). Two list items under one long lead-in ("4 layers of
protection: X" / "...: Y") look alike through the lead alone and are never repeats of each other.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from subcog_store.db import memories as rows
from subcog_store.db.memories import urn
from subcog_store.dedup.rule import PhraseSimilarity, judge
from subcog_store.text.namespaces import NAMESPACES

if TYPE_CHECKING:
    import apsw

    from subcog_store.dedup.check import CheckResult
    from subcog_store.inputs import Prepared

__all__ = ["SESSION_REPEAT", "is_session_repeat", "mark_repeat", "other_namespaces"]

# Chosen on the training sessions only (bench/capture/RESULTS.md, "Session repeats"): of the pairs of memories one
# session stored, those at or above 0.85 state the same fact 15 times in 18 (0.80-0.85: 13 in 19), lead-in pairs
# aside.
SESSION_REPEAT = 0.85
_LEAD = ": "
MIN_LEAD_CHARS = 20


def _shared_lead(a: str, b: str) -> bool:
    lead_a, sep_a, _ = a.partition(_LEAD)
    lead_b, sep_b, _ = b.partition(_LEAD)
    return bool(sep_a and sep_b) and len(lead_a) >= MIN_LEAD_CHARS and lead_a == lead_b


def is_session_repeat(older: str, newer: str, similarity: float,
                      phrase_similarity: PhraseSimilarity | None = None) -> bool:
    """`newer` restates `older` (both said in the same session): close enough, no changed fact, no shared lead."""
    if similarity < SESSION_REPEAT or _shared_lead(older, newer):
        return False
    return judge(older, newer, similarity, phrase_similarity).changed_fact is None


def mark_repeat(con: "apsw.Connection", p: "Prepared", check: "CheckResult",
                phrase_similarity: PhraseSimilarity | None = None) -> None:
    """Make `check` say duplicate when `p` restates an active memory its own session stored (any namespace of
    the check's neighbours)."""
    for n in sorted(check.neighbours, key=lambda n: -n.similarity):
        if n.similarity < SESSION_REPEAT:
            return
        older = rows.get(con, n.memory_id)
        if older is None or older.session_id != p.session_id or older.status != "active":
            continue
        if is_session_repeat(n.content, p.content, n.similarity, phrase_similarity):
            check.is_duplicate, check.reason, check.method = True, "semantic_similar", "session"
            check.matched_memory_id, check.similarity_score, check.matched_content = n.memory_id, n.similarity, \
                n.content
            check.matched_urn = urn(p.domain, n.namespace or p.namespace, n.memory_id)
            return


def other_namespaces(con: "apsw.Connection", p: "Prepared") -> tuple[str, ...]:
    """The namespaces of `p`'s domain, other than its own, that hold an active memory (a project-wide check
    looks there too)."""
    return rows.namespaces_in_use(con, p.domain, [ns for ns in NAMESPACES if ns != p.namespace])
