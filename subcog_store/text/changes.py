"""Changed facts found by subject: does a newer memory give another value or choice for what an older one is about?

`supersedes(older, newer)` answers with a `Change` (why, the subject, the old and the new value) or None. It
is the judgement of the store's "changed facts by subject" detector (`dedup/outdated.py` finds the candidates
and links them); capture calls it through the store, and anyone may call it on two texts. The caller decides
that the two are about the same project and close enough in meaning to compare (the store: cosine >= 0.5).

A change is one of (first that applies):
- `replaced`: the newer names an older value as what it replaces ("moved from Redux Toolkit to Zustand",
  "Zustand instead of Redux", "no longer uses RabbitMQ") and states a new one (or only retires the old);
- `version`: the same named thing at another version ("PostGIS 3.4" / "PostGIS 3.5 with ...");
- `value`: the same slot (shared subject words, the same kind of quantity) with another number
  ("refresh token 60 days" / "refresh tokens now expire after 90 days");
- `choice`: replacement language ("switched to", "moved ... to", "no longer", "upgraded", "raised ... to",
  "replaced by", "now uses" ...) with a name the older lacks, where the older has a name the newer lacks,
  about the same subject ("we use Redux Toolkit for global state" / "we moved global state to Zustand");
- `slot`: the same sentence around one name swapped for another ("RabbitMQ as the broker" / "Amazon SQS as the
  broker"), with enough shared context on both sides; `used`: a code name said unused, then used (changes_usage).
Never a change: two subjects told apart by their qualifiers ("the billing service ... 30 s timeout" / "the auth
service ... 5 s timeout": one head word, another word in front of it in each), nothing shared but generic
words, or no value that differs. The rules and word lists were written from the issue's examples and the
capture labels' in-session corrections; which data checked them is in bench/recall/RESULTS.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from subcog_store.text.changes_text import TOKEN, Text, parse
from subcog_store.text.changes_usage import used_after_all
from subcog_store.text.changes_words import GENERIC, NEGATING, NEW_BEFORE, OLD_AFTER, OLD_BEFORE, STRONG
from subcog_store.text.guard_words import UNITS

__all__ = ["Change", "supersedes"]

SLOT_CONTEXT = 4       # shared content words around a swapped name (the guard's SLOT_CONTEXT)
SUBJECT_MIN = 2        # shared subject words a value or choice change needs
NO_LONGER_SUBJECT = 3  # ... and a bare "no longer" without a new value
CUE_WINDOW = 6         # tokens after a replacement cue in which the replaced value is named
MAX_CHARS = 2000       # a text is judged on its first 2,000 characters (memories are a few sentences)


@dataclass(frozen=True)
class Change:
    """Why a newer memory outdates an older one."""

    reason: str          # replaced | version | value | choice | slot | used
    subject: str         # the shared words that name what both are about
    old: str             # the older value or choice
    new: str             # the newer one ("" when the newer only retires the old)

    def describe(self) -> str:
        """One line for the decision log: "changed by subject (value): 60 days -> 90 days [refresh token]"."""
        arrow = f"{self.old} -> {self.new}" if self.new else f"{self.old} no longer"
        return f"changed by subject ({self.reason}): {arrow} [{self.subject}]"


def _subject(a: Text, b: Text) -> list[str]:
    """Shared words that can name a subject (not generic, not numbers), in the newer text's order."""
    shared = a.stems & b.stems
    seen, words = set(), []
    for t, parts in zip(b.tokens, b.parts):
        if t.kind not in ("word", "name") or t.low in UNITS:
            continue
        for stem in (t.stem, *parts):
            if stem in shared and stem not in GENERIC and stem not in seen:
                seen.add(stem)
                words.append(stem if stem != t.stem else t.low)
    return words


def _qualifier_conflict(a: Text, b: Text, subject: list[str]) -> str | None:
    """Two subjects told apart by what stands in front of one head word ("billing service" / "auth service")."""
    heads = {t.stem for t in b.tokens if t.low in subject}
    qa, qb = a.qualified, b.qualified
    sa, sb = a.stems, b.stems
    for head in heads:
        xa, xb = qa.get(head, set()), qb.get(head, set())
        if xa and xb and not (xa & xb):
            only_a, only_b = xa - sb, xb - sa
            if only_a and only_b:
                return f"{sorted(only_a)[0]} {head} / {sorted(only_b)[0]} {head}"
    return None


def _cue(older: Text, newer: Text) -> re.Match | None:
    """Replacement language in the newer text that the older does not already use."""
    if not newer.cues:
        return None   # the older's own cues are looked for only when the newer has one
    old_cues = {m.group(0).lower().split()[0] for m in older.cues}
    for m in newer.cues:
        if m.group(0).lower().split()[0] not in old_cues:
            return m
    return None


def _named_as_replaced(older: Text, newer: Text) -> tuple[str, bool] | None:
    """An older name (or content word) that the newer text names as what was replaced or retired, and whether it
    is a name."""
    old_names = {t.low for t in older.tokens if t.kind == "name"}
    old_words = {t.stem for t in older.tokens if t.kind == "word" and t.stem not in GENERIC}
    toks, text = newer.tokens, newer.raw
    spans = []
    for m in OLD_AFTER.finditer(text):
        start = len(TOKEN.findall(text[: m.end()]))
        spans.append((m, toks[start: start + CUE_WINDOW]))
    for m in OLD_BEFORE.finditer(text):
        end = len(TOKEN.findall(text[: m.start()]))
        spans.append((m, tuple(reversed(toks[max(0, end - CUE_WINDOW): end]))))
    word = None
    for (m, span) in spans:
        for t in span:
            if t.kind == "name" and t.low in old_names:
                return t.text, True
        first = next((t for t in span if t.kind != "stop"), None)   # a plain word: only right at the cue
        if word is None and first is not None and first.kind == "word" and first.stem in old_words and \
                STRONG.match(m.group(0)):
            word = first.text
    return (word, False) if word else None


def _number_slot(a: Text, b: Text) -> tuple[str, str] | None:
    """A quantity of one kind whose value differs, in clauses that share SUBJECT_MIN subject words (or in two
    texts that differ in nothing else): (old, new) as written."""
    qa, qb = a.quantities, b.quantities
    for dim in qa.keys() & qb.keys():
        old, new = qa[dim] - qb[dim], qb[dim] - qa[dim]
        if not (old and new) or (not dim and not _only_numbers_differ(a, b)):
            continue   # a bare number with nothing to count is a slot only when nothing else differs
        wa, wb = a.clause_words, b.clause_words
        pairs = [(len(wa[a.tokens[i].clause] & wb[b.tokens[j].clause]), i, j)
                 for i in _where(a, dim, old) for j in _where(b, dim, new)]
        shared, i, j = max(pairs)
        if shared >= SUBJECT_MIN or _only_numbers_differ(a, b):
            return _say(a, i), _say(b, j)
    return None


def _only_numbers_differ(a: Text, b: Text) -> bool:
    """The two texts differ in numbers (and their units) only."""
    ca, cb = a.content, b.content
    for op, i1, i2, j1, j2 in _opcodes(a, b):
        if op != "equal" and not all(t.kind == "number" or t.low in UNITS for t in ca[i1:i2] + cb[j1:j2]):
            return False
    return True


@lru_cache(maxsize=8)   # a pair's alignment, asked by _only_numbers_differ and _slot_swap (Text: eq is identity)
def _opcodes(a: Text, b: Text) -> list[tuple[str, int, int, int, int]]:
    """How the content words' stems of `a` turn into those of `b` (SequenceMatcher's opcodes)."""
    return SequenceMatcher(a=[t.stem for t in a.content], b=[t.stem for t in b.content], autojunk=False).get_opcodes()


def _where(text: Text, dim: str, values: set[float]) -> list[int]:
    return [i for i, t in enumerate(text.tokens) if t.quantity and t.quantity[0] == dim and t.quantity[1] in values]


def _say(text: Text, i: int) -> str:
    toks = text.tokens
    nxt = toks[i + 1].text if i + 1 < len(toks) and toks[i + 1].low in UNITS else ""
    return f"{toks[i].text} {nxt}".strip()


def _slot_swap(a: Text, b: Text) -> tuple[str, str] | None:
    """One name (or run of names) swapped for another with SLOT_CONTEXT shared content words around it."""
    ca, cb = a.content, b.content
    swaps = [op for op in _opcodes(a, b) if op[0] != "equal"]
    if len(swaps) != 1 or swaps[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = swaps[0]
    old, new = ca[i1:i2], cb[j1:j2]
    if len(old) > 3 or len(new) > 3 or not all(t.kind == "name" for t in old + new):
        return None
    old_stems = {x.stem for x in ca}
    if sum(1 for t in cb if t.stem in old_stems) < SLOT_CONTEXT:
        return None
    return " ".join(t.text for t in old), " ".join(t.text for t in new)


def _choice(a: Text, b: Text, cue: re.Match, subject: list[str]) -> tuple[str, str] | None:
    """Replacement language followed, in its clause, by a name the older lacks ("now uses /^shared$/"), where a
    clause of the older that shares a subject word with it holds a name the newer lacks: (old, new)."""
    at = len(TOKEN.findall(b.raw[: cue.start()]))
    if at >= len(b.tokens):
        return None
    clause = b.tokens[at].clause
    after = [t for t in b.tokens[at:] if t.clause == clause]
    new_names = [t.text for t in after if t.kind == "name" and t.low not in a.names]
    words = {t.stem for t in b.tokens if t.clause == clause and (t.low in subject or t.stem in subject)}
    for k in {t.clause for t in a.tokens}:
        in_clause = [t for t in a.tokens if t.clause == k]
        old_names = [t.text for t in in_clause if t.kind == "name" and t.low not in b.names]
        if old_names and new_names and any(t.stem in words or t.low in words for t in in_clause):
            return old_names[0], new_names[0]
    return None


def supersedes(older: str, newer: str) -> Change | None:
    """The change by which `newer` outdates `older` (same subject, another value or choice), or None.

    Both are memory texts of one project, `older` stated before `newer`. Deterministic, no model; ~0.15 ms a pair
    on bench_store's captures at 10,000, where each older text is read once and the newer once for its ten pairs
    (bench/capture_phases.py; 0.3 ms before each text's parse and derived sets were kept: bench/RESULTS.md).
    See the module docstring for the six kinds of change and what is never one.
    """
    a, b = parse(" ".join(older[:MAX_CHARS].split())), parse(" ".join(newer[:MAX_CHARS].split()))
    if not a.tokens or not b.tokens or a.raw.lower() == b.raw.lower():
        return None
    subject = _subject(a, b)
    subject_text = " ".join(subject[:4])
    cue = _cue(a, b)
    if cue is not None:
        named = _named_as_replaced(a, b)
        if named and (named[1] or len(subject) >= SUBJECT_MIN):
            new_names = [t.text for t in b.tokens if t.kind == "name" and t.low not in a.names]
            if new_names or NEGATING.search(b.raw) or not named[1]:
                return Change("replaced", subject_text or named[0], named[0], new_names[0] if new_names else "")
    if not subject:
        return None
    va, vb = a.versions, b.versions
    for name in va.keys() & vb.keys():   # the same named thing or setting with another value
        new = vb[name] - va[name]
        if new and (va[name] - vb[name] or cue):
            return Change("version", name, f"{name} {sorted(va[name])[0]}", f"{name} {sorted(new)[0]}")
    if cue is not None and len(subject) >= SUBJECT_MIN and not NEW_BEFORE.match(cue.group(0)):
        choice = _choice(a, b, cue, subject)
        if choice:
            return Change("choice", subject_text, *choice)
    if _qualifier_conflict(a, b, subject):
        return None
    slot = _number_slot(a, b)
    if slot:
        return Change("value", subject_text, *slot)
    if cue is not None and NEGATING.search(b.raw) and not NEGATING.search(a.raw) and \
            len(subject) >= NO_LONGER_SUBJECT:
        return Change("replaced", subject_text, subject_text, "")
    swap = _slot_swap(a, b)
    if swap:
        return Change("slot", subject_text, *swap)
    return Change("used", used, f"{used} not used", f"{used} used") if (used := used_after_all(a.raw, b.raw)) else None
