"""One memory per fact within a session: a hook capture that says again, in other words, what the same session
already stored is a repeat, not a new memory.

The store's duplicate rule (dedup/rule.py) asks for near-identity (cosine at the namespace threshold, 0.88-0.92,
and no added fact), which a session's restatements rarely meet: a finding is told in the diagnosis, again in
the summary of what was done, again in the compaction summary, each time reworded and trimmed. Within one
session the same subject said again is a restatement unless it changes the fact, so here the bar is the lower
SESSION_REPEAT and only the changed-fact half of the guard applies, and only a change with a value on both sides
(another value, version, name or a negated statement: kept, and linked as a changed fact by the store); a number,
version or negation that only one side states is what a restatement adds or leaves out ("The upload failures come
from the proxy's body limit" / "... (HTTP 413) ..."), at every cosine. Two list items under one long lead-in
("Summary: the X is handled through 4 layers of protection: A" / "...: B", the longest lead-in the two share)
look alike through the lead alone and are never repeats of each other, nor of the lead-in said alone.

Restatements of one subject often sit lower (cosine 0.75-0.85: "The root cause is that the Kubo node is at
192.168.133.114:5001, not localhost:5001" / "The fix was pointing IPFS_LOCAL_API_URL to 192.168.133.114:5001 ...").
There the subject decides, not cosine alone: a pair at or above SUBJECT_REPEAT is a repeat when both name the same
thing written like code (an identifier: a file, host, function, setting) and most of the shorter one's content
words are in the other (SUBJECT_OVERLAP). A compaction summary's line restates the session before it in the
summary's own words, lower still: for it the subject decides from SUMMARY_REPEAT.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from subcog_store.db import memories as rows
from subcog_store.db.memories import urn
from subcog_store.text.namespaces import NAMESPACES

if TYPE_CHECKING:
    import apsw

    from subcog_store.dedup.check import CheckResult
    from subcog_store.dedup.rule import PhraseSimilarity
    from subcog_store.inputs import Prepared
    from subcog_store.text.guard_tokens import GuardVerdict

__all__ = ["SESSION_REPEAT", "SUBJECT_REPEAT", "SUMMARY_REPEAT", "REPEAT_FLOOR", "is_session_repeat", "same_subject",
           "mark_repeat", "other_namespaces"]

# Chosen on the training sessions only (bench/capture/RESULTS.md, "Session repeats"): of the pairs of memories one
# session stored, those at or above 0.85 state the same fact 15 times in 18 (0.80-0.85: 13 in 19), lead-in pairs
# aside. The one-sided change and the longest shared lead-in at every cosine (round 4, the same training pairs plus
# the 28 at 0.85 and above, judged by hand): 31 same-fact repeats found and none false, against 26 and 1 before.
SESSION_REPEAT = 0.85
# Chosen on the same training pairs, judged by hand (the 0.70-0.85 ones, lead-in pairs aside): at or above 0.75 a
# pair sharing an identifier with SUBJECT_OVERLAP of the shorter one's content words states the same fact 24 times
# in 26 (cosine alone at 0.75-0.85: about one in two).
SUBJECT_REPEAT = 0.75
SUBJECT_OVERLAP = 0.5
# A compaction summary restates the session before it, in its own words (its lines about what the assistant's text
# already said sit at cosine 0.70-0.75: "Default CORS whitelist only had 5173/4173" / "The default CORS whitelist
# is localhost:5173 and localhost:4173, but Vite started on 5177"): for a summary's line the same-subject test
# applies from SUMMARY_REPEAT. Chosen on the training sessions (bench/capture/RESULTS.md, seventh pass): the pairs
# of memories one session stored, a summary's line the later one, at 0.70-0.75, same subject, no value changed on
# both sides: 4 of 4 the same fact (0.65-0.70: 1 of 1; 0.60-0.65: 0 of 1).
SUMMARY_REPEAT = 0.70
REPEAT_FLOOR = min(SESSION_REPEAT, SUBJECT_REPEAT, SUMMARY_REPEAT)   # the lowest cosine a repeat is looked for at
_LEAD = ": "
MIN_LEAD_CHARS = 20
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("the a an is are was were be been to of in on for and or but with by from at as it its this that "
                  "these those not no so then than into only also just all any".split())


def _shared_lead(a: str, b: str) -> bool:
    """Both start with the same lead-in of at least MIN_LEAD_CHARS ending in a colon (the longest such: "Summary:
    The X is handled through 4 layers of protection: A" / "...: B" share the whole lead, not just "Summary"), or
    one is that lead-in alone."""
    end = a.find(_LEAD)
    while end != -1:
        if end >= MIN_LEAD_CHARS and b.startswith(a[:end + 1]):
            return True
        end = a.find(_LEAD, end + 1)
    return len(a) > MIN_LEAD_CHARS and a.endswith(":") and b.startswith(a) or \
        len(b) > MIN_LEAD_CHARS and b.endswith(":") and a.startswith(b)


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def word_overlap(a: str, b: str) -> float:
    """The share of the shorter text's content words that the other holds."""
    wa, wb = _content_words(a), _content_words(b)
    return len(wa & wb) / max(1, min(len(wa), len(wb)))


def same_subject(older: str, newer: str) -> bool:
    """Both name one thing written like code, and the shorter says mostly what the other says."""
    from subcog_store.text.guard_tokens import identifiers   # here: only when two texts are compared

    return bool(identifiers(older) & identifiers(newer)) and word_overlap(older, newer) >= SUBJECT_OVERLAP


def is_session_repeat(older: str, newer: str, similarity: float,
                      phrase_similarity: PhraseSimilarity | None = None, from_summary: bool = False) -> bool:
    """`newer` restates `older` (both said in the same session): close enough (or, from SUBJECT_REPEAT, about the
    same subject; from SUMMARY_REPEAT when `newer` is a compaction summary's line), no changed fact, no shared
    lead."""
    if similarity < (SUMMARY_REPEAT if from_summary else SUBJECT_REPEAT) or _shared_lead(older, newer):
        return False
    # here: the guard's word lists and patterns load only when two texts are this close
    from subcog_store.text.guard import changed_fact

    if similarity < SESSION_REPEAT and not same_subject(older, newer):
        return False
    verdict = changed_fact(older, newer, phrase_similarity)
    return not _conflict(verdict) or similarity >= SESSION_REPEAT and _lexical(verdict, older, newer)


def _conflict(verdict: "GuardVerdict") -> bool:
    """A change with a value on both sides ("5 minutes vs 10 minutes", "name: Redux vs Zustand"); a number, version
    or negation only one side states is what a restatement adds or leaves out (the training pairs: 18 of the 24
    same-fact pairs differ so)."""
    if not verdict.changed:
        return False
    older, _, newer = verdict.detail.partition(" vs ")
    return not any(not side.strip() or side.strip().startswith("no ") for side in (older, newer))


def _lexical(verdict: "GuardVerdict", older: str, newer: str) -> bool:
    """The guard's only veto is an identifier one text writes with a call's arguments and the other without
    ("buildMinimalContext(input)" / "buildMinimalContext()"): the same name, written two ways. Another word in a
    slot ("Redis" / "Memcached", "billing" / "auth": the guard's `substitution`) or another order is a changed fact
    (round 4, session 11: on the training pairs from 0.70 the guard vetoes one pair by substitution, one by a name
    written two ways, both restatements at 0.97 and 0.92; "redis" / "memcached" is a substitution at 0.83)."""
    from subcog_store.text.guard_tokens import identifiers_apart   # here: only when the guard vetoed a close pair

    return verdict.reason == "name" and not any(identifiers_apart(older, newer, bare=True))


def mark_repeat(con: "apsw.Connection", p: "Prepared", check: "CheckResult",
                phrase_similarity: PhraseSimilarity | None = None) -> None:
    """Make `check` say duplicate when `p` restates an active memory its own session stored (any namespace of
    the check's neighbours; those under the duplicate rule's floor are there only when the look-up met them: a
    run's own candidates meet each other in dedup/in_batch.py)."""
    for n in sorted(check.neighbours, key=lambda n: -n.similarity):
        if n.similarity < REPEAT_FLOOR:
            return
        older = rows.get(con, n.memory_id)
        if older is None or older.session_id != p.session_id or older.status != "active":
            continue
        if is_session_repeat(n.content, p.content, n.similarity, phrase_similarity, p.from_summary):
            check.is_duplicate, check.reason, check.method = True, "semantic_similar", "session"
            check.matched_memory_id, check.similarity_score, check.matched_content = n.memory_id, n.similarity, \
                n.content
            check.matched_urn = urn(p.domain, n.namespace or p.namespace, n.memory_id)
            return


def other_namespaces(con: "apsw.Connection", p: "Prepared") -> tuple[str, ...]:
    """The namespaces of `p`'s domain, other than its own, that hold an active memory (a project-wide check
    looks there too)."""
    return rows.namespaces_in_use(con, p.domain, [ns for ns in NAMESPACES if ns != p.namespace])
