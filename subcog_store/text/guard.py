"""The changed-fact guard: what two texts state differently, read word by word (docs/guard.md).

Sentence embeddings cannot see a changed fact ("TTL is 5 minutes" / "TTL is 10 minutes" scores 0.985), and on
coding memories a rewording and a changed fact have the same cosine. `changed_fact(older, newer)` looks at the
words that differ: a number, unit or date (`guard_numbers`) or an identifier replaced, a word negated in one text
only (`guard_polarity`), an opposite, who did what to whom (`guard_roles`), one slot filled with another word. It
is the veto, `lexical_support` the shared content. Both are symmetric and deterministic, and take an optional
`phrase_similarity(p, q) -> cosine` (the store's model on short phrases) that judges synonyms in a slot; without it
a different word is a different fact (the safe side). Word lists: `guard_words`.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Callable, Sequence

from subcog_store.text import guard_lexicon, guard_polarity, guard_tokens
from subcog_store.text.guard_numbers import date_check, number_check, unit_check
from subcog_store.text.guard_polarity import polarity
from subcog_store.text.guard_roles import order_check
from subcog_store.text.guard_tokens import (
    NUM, SAME, GuardVerdict, compared_form, identifiers_apart, names, stem, tokens)
from subcog_store.text.guard_words import NEGATION_SLOTS, NEGATORS, STOPWORDS

__all__ = ["GuardVerdict", "PhraseSimilarity", "changed_fact", "clear_caches", "lexical_support", "SUPPORT_MIN"]

# cosine of two short phrases as the sentence model embeds them (each alone, unit vectors)
PhraseSimilarity = Callable[[str, str], float]

SUPPORT_MIN = 0.55  # lexical_support floor for a semantic duplicate (training sets, docs/guard.md)
CLAUSE_RUN = 3      # this many consecutive content words the other text lacks = an added clause (MRPC train)
SLOT_MAX = 3        # substitution: at most this many words swapped for a slot
SLOT_CONTEXT = 4    # ... and at least this many words the same around it
SYNONYM_MIN = 0.82  # phrase cosine (slot with one word of context each side) that makes a synonym (PAWS dev)
LONG = 200          # tokens: a longer text skips the word-order rules and the slot search (their cost grows fast)
SEGMENT_MAX = 4     # lexical_support compares differing segments of at most this many words as phrases

# ---------------------------------------------------------------- content

_COMPOUND = re.compile(r"[-/]")

# Words that carry no fact of their own for coverage: attribution, filler, a memory's kind ("TIL:", "Learned that").
_TRANSPARENT = frozenset("""
said says say saying told tell tells added adding according stated reported mr mrs ms dr also even well now
later still already just really yet however meanwhile
decide decided decides deciding decision choose chose chosen chooses picked opt opted use used uses using
til learned learnt noted reminder
""".split())


@lru_cache(maxsize=4096)
def _content(toks: tuple[str, ...]) -> tuple[tuple[int, str], ...]:
    """(token index, content word): stop words, negators, numbers and filler left out."""
    out = []
    for i, tok in enumerate(toks):
        # "85-mph", "49-year-old": the words of a compound with numbers (the numbers are the number check's job)
        for t in _COMPOUND.split(tok) if "-" in tok or "/" in tok else (tok,):
            if t not in STOPWORDS and t not in NEGATORS and t not in _TRANSPARENT and len(t) > 1 and not NUM.match(t):
                out.append((i, t))
    return tuple(out)


def _covered(word: str, other: set[str], other_stems: set[str]) -> bool:
    """Exact, light stem, or a shared prefix of 4+ letters (postgres / postgresql)."""
    if word in other or stem(word) in other_stems:
        return True
    if len(word) < 4:
        return False
    if any(word[:n] in other for n in range(4, len(word))):
        return True   # a shorter word this one starts with
    return len(word) <= 40 and any(len(o) > len(word) and o.startswith(word) for o in other)


def _coverage(ca: Sequence[tuple[int, str]], cb: Sequence[tuple[int, str]]) -> list[bool]:
    """For each content word of one text: does the other text have it (exact, stem or prefix)?"""
    other = {w for _, w in cb}
    stems = {stem(w) for w in other}
    return [_covered(w, other, stems) for _, w in ca]


def _share(words: Sequence[tuple[int, str]], covered: list[bool]) -> tuple[float, int]:
    """Length-weighted covered share, and the longest run of consecutive uncovered words."""
    total = sum(len(w) for _, w in words)
    got = sum(len(w) for (_, w), c in zip(words, covered) if c)
    run = longest = 0
    for c in covered:
        run = 0 if c else run + 1
        longest = max(longest, run)
    return (got / total if total else 1.0), longest


def _support(ca: Sequence[tuple[int, str]], fa: list[bool], cb: Sequence[tuple[int, str]], fb: list[bool]) -> float:
    (sa, ra), (sb, rb) = _share(ca, fa), _share(cb, fb)
    support = min(sa, sb)
    return min(support, 0.5) if max(ra, rb) >= CLAUSE_RUN else support


def lexical_support(a: str, b: str, phrase_similarity: PhraseSimilarity | None = None) -> float:
    """0..1, symmetric: how much of each text's content the other one covers.

    The smaller of the two length-weighted shares of content words (stop words, attribution such as "said",
    and numbers left out; plurals, verb forms and prefixes like postgres/postgresql match). A run of
    CLAUSE_RUN or more consecutive content words missing from the other text (an added clause: "... and was
    also filmed by Fox") caps the support at 0.5. With `phrase_similarity`, a differing segment of at most
    SEGMENT_MAX words that the model rates a synonym of its counterpart ("rate" / "level" in "obesity rate" /
    "obesity level") counts as covered; the model is asked only while the answer can lift the support to
    SUPPORT_MIN. Recommended floor for a duplicate: SUPPORT_MIN.
    """
    ta, tb = tokens(a), tokens(b)
    if tb < ta:
        ta, tb, a, b = tb, ta, b, a
    ca, cb = _content(ta), _content(tb)
    fa, fb = _coverage(ca, cb), _coverage(cb, ca)
    support = _support(ca, fa, cb, fb)
    if phrase_similarity is None or support >= SUPPORT_MIN or max(len(ta), len(tb)) > LONG:
        return support
    named = names(a) | names(b)
    candidates = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        ia = [x for x, (i, _) in enumerate(ca) if i1 <= i < i2]
        ib = [x for x, (j, _) in enumerate(cb) if j1 <= j < j2]
        if (op == "replace" and ia and ib and i2 - i1 <= SEGMENT_MAX and j2 - j1 <= SEGMENT_MAX
                and not (all(fa[x] for x in ia) and all(fb[x] for x in ib))
                and not named.intersection(ta[i1:i2] + tb[j1:j2])):
            gain = sum(len(ca[x][1]) for x in ia if not fa[x]) + sum(len(cb[x][1]) for x in ib if not fb[x])
            candidates.append((-gain, i1, i2, j1, j2, ia, ib))
    if not candidates:
        return support
    up_a, up_b = list(fa), list(fb)
    for *_, ia, ib in candidates:
        for x in ia:
            up_a[x] = True
        for x in ib:
            up_b[x] = True
    if _support(ca, up_a, cb, up_b) < SUPPORT_MIN:
        return support  # even all of them would not make it: spare the model
    for _, i1, i2, j1, j2, ia, ib in sorted(candidates):
        if _synonym(phrase_similarity, _phrase(ta, i1, i2), _phrase(tb, j1, j2)):
            for x in ia:
                fa[x] = True
            for x in ib:
                fb[x] = True
            support = _support(ca, fa, cb, fb)
            if support >= SUPPORT_MIN:
                break
    return support


# ---------------------------------------------------------------- substitution and synonyms



def _phrase(toks: tuple[str, ...], i: int, j: int) -> str:
    """A slot with one word of context on each side: what the model compares ("is slicing an")."""
    return " ".join(toks[max(0, i - 1): j + 1])


def _synonym(phrase_similarity: PhraseSimilarity, p: str, q: str) -> bool:
    """The model rates the two phrases synonyms; a model that fails answers "no" (the safe side)."""
    try:
        return float(phrase_similarity(p, q)) >= SYNONYM_MIN
    except Exception:  # noqa: BLE001 - any failure of the model must leave the verdict on the safe side
        return False


def _lexicon_synonyms(words_a: list[str], words_b: list[str]) -> bool:
    """Each word of one slot has a WordNet synonym in the other ("kids" / "children", "kept" / "preserved")."""
    return (all(any(guard_lexicon.synonyms(x, y) for y in words_b) for x in words_a)
            and all(any(guard_lexicon.synonyms(y, x) for x in words_a) for y in words_b))


def _edited_span(ta: tuple[str, ...], tb: tuple[str, ...]) -> int:
    """The fewest words of either text that one replaced slot would have to cover: each text's length less the
    common prefix and suffix (a lower bound on a single replace's size)."""
    n = min(len(ta), len(tb))
    pre = 0
    while pre < n and ta[pre] == tb[pre]:
        pre += 1
    suf = 0
    while suf < n - pre and ta[-1 - suf] == tb[-1 - suf]:
        suf += 1
    return max(len(ta), len(tb)) - pre - suf


def _substitution_check(ta: tuple[str, ...], tb: tuple[str, ...], named: frozenset[str],
                        phrase_similarity: PhraseSimilarity | None) -> GuardVerdict:
    """The same sentence with one slot filled differently: "pool for DuckDB in sync" / "... in auth",
    "as CSV" / "as Protobuf", "flag sync_v3" / "flag sync_v5". Another name in the same place is another fact;
    a synonym is not ("two children" / "two kids"), when the model says so and the slot holds no name.
    A reworded sentence differs in more places than one."""
    if _edited_span(ta, tb) > SLOT_MAX:
        return SAME   # more than one slot apart: no need to align
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return SAME
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > SLOT_MAX or j2 - j1 > SLOT_MAX or len(ta) - (i2 - i1) < SLOT_CONTEXT:
        return SAME
    if any(" ".join(ta[i1:i2 + d]) in NEGATION_SLOTS and " ".join(tb[j1:j2 + d]) in NEGATION_SLOTS for d in (0, 1)):
        return SAME   # one negation in other words ("instead of" / "rather than"): polarity compared what they negate
    words_a, words_b = [w for _, w in _content(ta[i1:i2])], [w for _, w in _content(tb[j1:j2])]
    if not words_a or not words_b:
        return SAME
    set_a, set_b = set(words_a), set(words_b)
    stems_a, stems_b = {stem(w) for w in set_a}, {stem(w) for w in set_b}
    if any(_covered(w, set_b, stems_b) for w in words_a) or any(_covered(w, set_a, stems_a) for w in words_b):
        return SAME
    if not named.intersection(ta[i1:i2] + tb[j1:j2]) and (
            _lexicon_synonyms(words_a, words_b) or phrase_similarity is not None
            and _synonym(phrase_similarity, _phrase(ta, i1, i2), _phrase(tb, j1, j2))):
        return SAME
    return GuardVerdict(True, "substitution", f"{' '.join(ta[i1:i2])} vs {' '.join(tb[j1:j2])}")


# ---------------------------------------------------------------- identifiers

def _identifier_check(older: str, newer: str) -> GuardVerdict:
    """Each text writes an identifier the other does not: "config/main.yaml" / "config/local.yaml",
    "waitForUsersLoaded()" / "waitForItemsLoaded()", however the rest is worded."""
    only_a, only_b = identifiers_apart(older, newer)
    if only_a and only_b:
        return GuardVerdict(True, "name", f"{', '.join(only_a[:3])} vs {', '.join(only_b[:3])}")
    return SAME


# ---------------------------------------------------------------- the guard

def _flip(verdict: GuardVerdict) -> GuardVerdict:
    left, sep, right = verdict.detail.partition(" vs ")
    return GuardVerdict(True, verdict.reason, f"{right} vs {left}") if sep else verdict


def changed_fact(older: str, newer: str, phrase_similarity: PhraseSimilarity | None = None) -> GuardVerdict:
    """Whether `newer` states a different fact than `older` (a veto on treating them as duplicates): a number,
    version, unit or date replaced; another time or size unit; another identifier (each text writes one the other
    does not); a word negated in one text and affirmed in the other, or negations of another parity when they
    negate nothing the texts share (`guard_polarity`); an opposite; who did what to whom (`guard_roles`); one slot
    filled with a word that is not a synonym. Symmetric: the checks run on the two texts in a canonical order,
    and details are given in the caller's order."""
    if compared_form(older) == compared_form(newer):
        return SAME
    ta, tb = tokens(older), tokens(newer)
    flip = (tb, compared_form(newer)) < (ta, compared_form(older))   # texts of the same tokens: by their form
    if flip:
        older, newer, ta, tb = newer, older, tb, ta
    changed = (number_check(ta, tb) or date_check(ta, tb) or unit_check(ta, tb)
               or _identifier_check(older, newer) or polarity(older, newer, ta, tb))
    long = max(len(ta), len(tb)) > LONG
    if not changed and not long:
        changed = order_check(older, newer)
    if not changed and ta != tb and not long:
        changed = _substitution_check(ta, tb, names(older) | names(newer), phrase_similarity)
    return _flip(changed) if changed and flip else changed


def clear_caches() -> None:
    """Forget every per-text cache (a benchmark times a judged pair as a capture meets it: new texts)."""
    guard_tokens.clear_caches()
    guard_polarity.clear_caches()
    _content.cache_clear()
