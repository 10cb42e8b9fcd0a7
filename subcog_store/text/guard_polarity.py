"""Polarity: what one text negates and the other affirms, and opposite words (the changed-fact guard).

A negation is read by its scope: the first content word a negator governs ("is not [needed]", "never [clears]",
"instead of [Pinata]", "non-[destructive]"). A word said under a negation in one text and without one in the other
is a changed fact ("The guard is not needed because X always runs first" / "The guard is needed because X does
not always run first", where counting negations sees one each). When scope decides nothing, negation counts of
another parity are a changed fact, unless both texts negate a word they share ("never read globally" / "instead
of being read globally": one negation in other words). Opposites ("hard-deletes" / "soft-deletes", "enabled" /
"disabled") are matched on stems. "fails without X" affirms X ("requires X"); "except X" and "apart from X"
negate X like "other than X".
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

from subcog_store.text import guard_lexicon
from subcog_store.text.guard_tokens import NUM, SAME, GuardVerdict, clause_tokens, stem
from subcog_store.text.guard_words import (
    BE, BOUNDARY, LINKS, NEGATION_PHRASES, NEGATORS, NOT_NEGATING, OPPOSITES, PREFERENCE, PREPOSITIONS, PRIVATIVE,
    SCOPE_SKIP, STOPWORDS)

__all__ = ["polarity", "negations", "clear_caches"]

SCOPE_REACH = 4   # a negation reaches at most this many tokens to the word it negates (training sets, docs/guard.md)
LEAD_REACH = 8    # ... and its subject stands at most this many tokens before it (coding train, docs/guard.md)
ANTONYM_NEGATED = 3   # a WordNet antonym this many tokens after a negator is no opposite ("not available")
_CUES = NEGATORS | PRIVATIVE
_CONDITION_NEGATORS = frozenset({"without", "unless"})
_OBJECT_NEGATORS = frozenset({"nothing", "none"})   # as the object, they negate the verb before them
_SPAN_WORDS = _CUES | PREFERENCE | {"over", "off"} | {phrase[len(phrase) - 2] for phrase in NEGATION_PHRASES}  # "instead", "place"
# "off" as a state negates like "disabled": "caching is turned off" = "caching is disabled" (coding train)
_SWITCHED = BE | frozenset("turn turns turned turning switch switches switched switching set sets".split())

_OPPOSITE: dict[str, set[str]] = {}
for _x, _y in OPPOSITES:
    _OPPOSITE.setdefault(stem(_x), set()).add(stem(_y))
    _OPPOSITE.setdefault(stem(_y), set()).add(stem(_x))


def _spans(toks: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where a text negates: negators, privative verbs ("drop", "avoid"), negation-equivalent phrases ("instead
    of", "rather than", "in place of", "other than"), and "prefer X over Y"; (start, end) token spans. "not only",
    "nothing but" do not negate; "neither ... nor" negates once."""
    out: list[tuple[int, int]] = []
    preferred, cancelled = -10, -1
    for i, t in enumerate(toks):
        if t not in _SPAN_WORDS:
            continue   # starts no negation (most words)
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if t in PREFERENCE:
            preferred = i
        if i <= cancelled:
            continue
        if t in NEGATORS and (nxt, toks[i + 2] if i + 2 < len(toks) else "") in NEGATION_PHRASES:
            cancelled = i + 2   # "nothing other than X" = "only X": two negations that cancel
        elif t in PRIVATIVE and nxt in _CONDITION_NEGATORS:
            cancelled = i + 1   # "fails without X" = "requires X": two negations that cancel
        elif (t, nxt) in NEGATION_PHRASES:
            out.append((i, i + 2))
        elif (toks[i - 1] if i else "", t, nxt) in NEGATION_PHRASES:
            out.append((i - 1, i + 2))
        elif t == "over" and i - preferred <= 6:
            out.append((i, i + 1))
        elif t == "off":
            if i and toks[i - 1] in _SWITCHED and (not nxt or nxt in BOUNDARY or nxt in LINKS
                                                          or nxt in PREPOSITIONS):
                out.append((i, i + 1))   # a state ("is off", "turned off in prod"), read like a privative verb
        elif (t in NEGATORS or t in PRIVATIVE) and (t, nxt) not in NOT_NEGATING \
                and not (t == "nor" and "neither" in toks[:i]):
            out.append((i, i + 1))
    return out


def negations(text: str) -> list[str]:
    """The negations of a text, in words."""
    toks = clause_tokens(text)
    return [" ".join(toks[start:end]) for start, end in _spans(toks)]


def _is_word(t: str) -> bool:
    return t not in STOPWORDS and t not in BOUNDARY and len(t) > 1 and not NUM.match(t)


@dataclass(frozen=True)
class _Scope:
    negated: frozenset[str]               # stems said under a negation
    affirmed: frozenset[str]              # stems said without one
    groups: tuple[frozenset[str], ...]    # what each negation governs (empty: a privative verb, not read)
    count: int                            # negations
    reads: tuple[tuple[str, ...], ...]    # the groups' stems in text order
    lead: tuple[frozenset[str], ...]      # each group's: the stems before its negation, in its clause
    reaches: tuple[frozenset[str], ...]   # what each privative verb reaches ("omits [serde]"; other cues: empty)


@lru_cache(maxsize=4096)
def _scoped(text: str) -> _Scope:
    """What a text says under a negation and without one."""
    toks = clause_tokens(text)
    cues = _spans(toks)
    negated: set[int] = set()
    unsure: set[int] = set()   # what a privative verb governs: negated or not ("drop [support]", "a failed [run]")
    groups: list[frozenset[str]] = []
    reads: list[tuple[str, ...]] = []
    lead: list[frozenset[str]] = []
    reaches: list[frozenset[str]] = []
    for start, end in cues:
        privative = end - start == 1 and (toks[start] in PRIVATIVE or toks[start] == "off")
        group: set[int] = set()
        reached: set[int] = set()
        for p in range(end, min(len(toks), end + SCOPE_REACH)):
            t = toks[p]
            if t in BOUNDARY or t in LINKS:
                break
            if t in _CUES or not _is_word(t) or t in SCOPE_SKIP:
                continue
            if privative:
                reached.add(p)   # each word it reaches: "drop [Python 3.8 support]"
                continue
            group.add(p)
            while (p + 1 < len(toks) and _is_word(toks[p + 1]) and toks[p + 1] not in _CUES
                   and toks[p + 1] not in SCOPE_SKIP):
                p += 1
                group.add(p)    # a compound: "rather than a [protocol limitation]"
            break
        if (toks[start] in _OBJECT_NEGATORS and start and _is_word(toks[start - 1]) and toks[start - 1] not in BE
                and toks[start + 1:start + 2] != ("of",)):   # "none of the musicians" is a subject
            group.add(start - 1)   # "persists [nothing] to X" = "does not persist to X": the verb before it
        negated |= group
        unsure |= reached
        reaches.append(frozenset(stem(toks[p]) for p in reached))
        groups.append(frozenset(stem(toks[p]) for p in group))
        reads.append(tuple(stem(toks[p]) for p in sorted(group)))
        lead.append(_lead(toks, start))
    for p, t in enumerate(toks):
        if t.startswith("non-") and len(t) > 5:   # "non-destructive"
            negated.add(p)
            groups.append(frozenset({stem(t[4:])}))
    cue_words = {p for start, end in cues for p in range(start, end)}
    neg = frozenset(stem(toks[p][4:] if toks[p].startswith("non-") else toks[p]) for p in negated)
    pos = frozenset(stem(t) for p, t in enumerate(toks) if p not in negated and p not in unsure and p not in cue_words
                    and _is_word(t) and t not in SCOPE_SKIP) - {stem(toks[p]) for p in unsure}
    return _Scope(neg, pos, tuple(groups), len(groups), tuple(reads), tuple(lead), tuple(reaches))


def _lead(toks: tuple[str, ...], start: int) -> frozenset[str]:
    """The stems before a negation, back to the clause's punctuation (LEAD_REACH tokens at most): its subject."""
    out = set()
    for p in range(start - 1, max(-1, start - 1 - LEAD_REACH), -1):
        if not any(c.isalnum() for c in toks[p]) or NUM.match(toks[p]):
            break   # punctuation, or a number: "in 1920 no other nation won" leads another clause
        if _is_word(toks[p]):
            out.add(stem(toks[p]))
    return frozenset(out)


def _free(scope: _Scope, other: _Scope) -> bool:
    """A negation of one text that could be the other's, reworded: a privative verb that reaches nothing the other
    text affirms ("drop [Python 3.8 support]" / "no longer supported"; not "bypass [Core Kit]" / "goes through Core
    Kit"), or a negation of words the other text does not say ("is not required" / "works without X")."""
    words = other.negated | other.affirmed
    plain = other.affirmed - other.negated
    return any((not group and not reach & plain) or (group and not group & words)
               for group, reach in itertools.zip_longest(scope.groups, scope.reaches, fillvalue=frozenset()))


def _unmatched(scope: _Scope, other: _Scope) -> frozenset[str]:
    """What one text negates, less what a negation reads beyond a negation of the other text that governs the same
    first words: the same negation read over more words ("not [bumped]" / "without [bumping schema version]",
    "not an [id] or uuid" / "rather than an [id uuid]"); "no [nation won]" / "no [nation entered]" keep theirs.
    Nor what a negation governs beyond a word that a negation of the other text governs too, when the other text
    says it just before that negation: the subject ("nothing ever [calls X]" / "X is never [called]")."""
    matched: set[str] = set()
    for words in scope.reads:
        for shorter, lead in zip(other.reads, other.lead):
            if shorter and len(shorter) < len(words) and words[:len(shorter)] == shorter:
                matched.update(words[len(shorter):])
            elif set(words) & set(shorter):
                matched.update(lead.intersection(words))
    return scope.negated - matched


def _opposite(ta: tuple[str, ...], tb: tuple[str, ...]) -> str | None:
    words_a = {stem(t): t for t in ta if t not in NEGATORS}
    words_b = {stem(t): t for t in tb if t not in NEGATORS}
    for w in sorted(words_a.keys() - words_b.keys()):
        for opp in sorted(_OPPOSITE.get(w, ())):
            if opp in words_b and opp not in words_a:
                return f"{words_a[w]} vs {words_b[opp]}"
    return _lexicon_opposite(ta, tb)


def _lexicon_opposite(ta: tuple[str, ...], tb: tuple[str, ...]) -> str | None:
    """A word of one text whose WordNet antonym only the other text writes ("cheap" / "expensive"), neither of
    the two under a negation ("not available" / "unavailable" is one fact) nor beside its own antonym."""
    content_a, content_b = _plain_words(ta), _plain_words(tb)
    only_b = sorted(content_b - content_a)
    if not only_b:
        return None   # nothing for a word of the first text to be opposed to: spare the lookups
    for x in sorted(w for w in content_a - content_b if guard_lexicon.has_antonyms(w)):
        for y in only_b:
            if (guard_lexicon.antonyms(x, y) and not _negated(ta, x) and not _negated(tb, y)
                    and not any(guard_lexicon.antonyms(x, z) for z in content_a)):
                return f"{x} vs {y}"
    return None


def _plain_words(toks: tuple[str, ...]) -> set[str]:
    return {t for t in toks if len(t) > 2 and t.isalpha() and t not in STOPWORDS and t not in NEGATORS}


def _negated(toks: tuple[str, ...], word: str) -> bool:
    """`word` follows a negator within ANTONYM_NEGATED tokens somewhere in the text."""
    return any(t == word and any(n in NEGATORS for n in toks[max(0, i - ANTONYM_NEGATED):i])
               for i, t in enumerate(toks))


def polarity(older: str, newer: str, ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    """What `older` and `newer` (their `tokens` ta, tb) say with another polarity, details in the caller's order:
    a word negated in one and affirmed in the other; else negation counts of another parity, unless a negation of
    each text governs a word they share (then the negation is the same one, reworded); else an opposite."""
    a, b = _scoped(older), _scoped(newer)
    # a word negated in one text and affirmed in the other; when the counts have the same parity, only if the other
    # has no negation of its own that may be the same one said of another word ("is not required for sessions" /
    # "sessions work without it")
    odd = a.count % 2 != b.count % 2
    witness_a = sorted(_unmatched(a, b) & (b.affirmed - b.negated)) if odd or not _free(b, a) else []
    witness_b = sorted(_unmatched(b, a) & (a.affirmed - a.negated)) if odd or not _free(a, b) else []
    if witness_a:
        return GuardVerdict(True, "negation", f"not {witness_a[0]} vs {witness_a[0]}")
    if witness_b:
        return GuardVerdict(True, "negation", f"{witness_b[0]} vs not {witness_b[0]}")
    shared = (a.negated & (b.affirmed | b.negated)) or (b.negated & (a.affirmed | a.negated))
    if odd and not shared:
        return GuardVerdict(True, "negation", f"{', '.join(negations(older)) or 'no negation'} vs "
                                              f"{', '.join(negations(newer)) or 'no negation'}")
    opposite = _opposite(ta, tb)
    return GuardVerdict(True, "polarity", opposite) if opposite else SAME


def clear_caches() -> None:
    _scoped.cache_clear()
