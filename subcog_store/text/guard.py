"""The changed-fact guard: cheap checks that veto a semantic (cosine) duplicate.

Sentence embeddings cannot see a changed fact ("TTL is 5 minutes" vs "TTL is 10 minutes" scores 0.985, "Sullivan
defeated Denny" vs "Denny defeated Sullivan" 0.99). `changed_fact(older, newer)` says whether two texts state
different facts: numbers, versions, units, dates, negation/polarity, who did what to whom (word order and roles),
one slot filled with something else. `lexical_support(a, b)` is the positive signal: how much of the content of
each text the other one covers. Both are symmetric and deterministic.

Both take an optional `phrase_similarity(p, q) -> cosine` (the store's MiniLM embedder on short phrases): with
it, a slot or a short segment worded with a synonym ("cutting"/"slicing an onion", "two kids"/"two children")
is judged by meaning; without it the guard stays on the safe side (a different word is a different fact). It is
called only when its answer can change the verdict. The word lists are in `guard_words`; the rules and the data
that chose each constant are in docs/guard.md.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Callable

from subcog_store.text.guard_words import (
    ARTICLES, BE, BOUNDARY, LINKS, MARKERS, MONTHS, MOVABLE, NEGATION_PHRASES, NEGATORS, NOT_NEGATING,
    NUMBER_WORDS, OPPOSITES, PREFERENCE, PREPOSITIONS, PRIVATIVE, PUNCTUATION, REPORTING, SEPARATORS,
    SOFT_NUMBER_WORDS, STOPWORDS, TIME, TIME_MODIFIERS, UNITS, WEEKDAYS)

__all__ = ["GuardVerdict", "PhraseSimilarity", "changed_fact", "lexical_support", "SUPPORT_MIN"]

# cosine of two short phrases as the sentence model embeds them (each alone, unit vectors)
PhraseSimilarity = Callable[[str, str], float]

SUPPORT_MIN = 0.6   # lexical_support floor for a semantic duplicate (MRPC train)
CLAUSE_RUN = 3      # this many consecutive content words the other text lacks = an added clause (MRPC train)
SLOT_MAX = 3        # substitution: at most this many words swapped for a slot
SLOT_CONTEXT = 4    # ... and at least this many words the same around it
SYNONYM_MIN = 0.82  # phrase cosine (slot with one word of context each side) that makes a synonym (PAWS dev)
LONG = 200          # tokens: a longer text skips the word-order rules and the slot search (their cost grows fast)
MODIFIER_WORDS = 0  # neighbouring units trade places freely when one has at most this many content words (a
HEAD_WORDS = 0      # modifier) and the other at most HEAD_WORDS (its head); 0: never (PAWS dev, docs/guard.md)
MAX_ANCHORS = 150   # pairs of equal content words the word-order alignment reads at most (a sentence pair: dozens)
SEGMENT_MAX = 4     # lexical_support compares differing segments of at most this many words as phrases


@dataclass(frozen=True)
class GuardVerdict:
    changed: bool        # True: the texts state different facts; must NOT be treated as duplicates
    reason: str | None   # "number", "version", "unit", "date", "negation", "polarity", "participants", "order",
    #                      "substitution"
    detail: str          # human words, e.g. "5 minutes vs 10 minutes"

    def __bool__(self) -> bool:
        return self.changed


SAME = GuardVerdict(False, None, "")

_OPPOSITE: dict[str, set[str]] = {}
for _x, _y in OPPOSITES:
    _OPPOSITE.setdefault(_x, set()).add(_y)
    _OPPOSITE.setdefault(_y, set()).add(_x)

# ---------------------------------------------------------------- normalisation and tokens

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "`": "'",
                         "\u2013": "-", "\u2014": " - ", "\u00a0": " "})
_WORD = re.compile(r"[$€£%]|[^\W_][\w.'/+#-]*[\w%]|[^\W_]", re.UNICODE)
_KEY_VALUE = re.compile(r"(?<=\w)=(?=\w)")   # "scope=session" is the two words of "session scope"
_NUM = re.compile(r"^(?P<v>v)?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)(?P<u>[a-zµ%]+)?$")


_USA = re.compile(r"\b(?:U\.S\.A\.|U\.S\.|US|USA)(?![\w.])|\bU\.S(?=\W|$)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_TENS = re.compile(r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](one|two|three|four|five|six|seven|"
                   r"eight|nine)\b")
_ONES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}


def compared_form(text: str) -> str:
    """Case-folded, NFKC, straight quotes, single spaces, 1,000 -> 1000, sixty-one -> 61: the compared form."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _USA.sub("usa", text)
    text = " ".join(text.split()).casefold()
    text = _THOUSANDS.sub("", text)
    return _TENS.sub(lambda m: str(NUMBER_WORDS[m.group(1)] + _ONES[m.group(2)]), text)


@lru_cache(maxsize=16384)
def _split_token(tok: str) -> tuple[str, ...]:
    """Split n't, possessives and hyphen/slash compounds that are not numbers or identifiers."""
    tok = tok.strip(".'-/+")
    if not tok:
        return ()
    if tok.endswith("n't"):
        stem = {"ca": "can", "wo": "will", "sha": "shall"}.get(tok[:-3], tok[:-3])
        return (stem, "n't") if stem else ("n't",)
    if tok.endswith("'s") or tok.endswith("s'"):
        tok = tok[:-2] if tok.endswith("'s") else tok[:-1]
    for cont, full in (("'re", "are"), ("'ve", "have"), ("'ll", "will"), ("'d", "would"), ("'m", "am")):
        if tok.endswith(cont):
            return (tok[:-len(cont)], full)
    if any(c.isdigit() for c in tok) or "_" in tok or "." in tok.rstrip("."):
        return (tok,)
    return tuple(p for p in (part.strip("'") for part in re.split(r"[-/]", tok)) if p)


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[str, ...]:
    """Normalised word tokens; numbers keep their dots and commas, n't is its own token."""
    out: list[str] = []
    for raw in _WORD.findall(_KEY_VALUE.sub(" ", compared_form(text))):
        out.extend(_split_token(raw))
    return tuple(out)


@lru_cache(maxsize=16384)
def _stem(word: str) -> str:
    """A light suffix stripper: enough to match plurals and simple verb forms (dance/dancing, share/shares)."""
    if len(word) <= 3 or any(c.isdigit() for c in word):
        return word
    for suffix, repl, min_len in (("ies", "y", 4), ("ied", "y", 4), ("sses", "ss", 4), ("ness", "", 5),
                                  ("ing", "", 5), ("edly", "", 5), ("ed", "", 4), ("ly", "", 5),
                                  ("es", "", 5), ("s", "", 4)):
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= min_len - 1:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + repl
            break
    return word[:-1] if len(word) >= 5 and word.endswith("e") else word


# ---------------------------------------------------------------- facts: numbers, units, dates

@dataclass(frozen=True)
class _Quantity:
    value: str          # canonical number text ("5", "3.8", "1.2.0")
    unit: str | None    # canonical unit after (or attached to) the number
    kind: str           # "number", "version", "date", "word" (two), "soft" (one, first)
    surface: str        # how the text wrote the number
    unit_word: str = ""  # how the text wrote the unit


def _canon_number(n: str) -> str:
    n = n.replace(",", "")
    if n.count(".") == 1:
        whole, frac = n.split(".")
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        return f"{whole}.{frac}" if frac else whole
    if n.count(".") == 0:
        return n.lstrip("0") or "0"
    return n


_ISO_DATE = re.compile(r"(19|20)\d\d-\d\d(-\d\d)?$")


def _quantities(toks: tuple[str, ...]) -> list[_Quantity]:
    out: list[_Quantity] = []
    for i, tok in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        prev = toks[i - 1] if i else ""
        m = _NUM.match(tok)
        if m:
            n, unit = m.group("n"), m.group("u")
            if unit is None and nxt in UNITS:
                unit = nxt
            if unit is None and prev in ("$", "€", "£"):
                unit = prev
            if unit in ("st", "nd", "rd", "th"):
                unit = None
            if m.group("v") or n.count(".") >= 2 or (n.count(".") == 1 and unit is None and prev.isalpha()
                                                        and prev not in UNITS and prev not in STOPWORDS):
                kind = "version"   # v1.2.0, 1.2.0, Python 3.8
            elif (re.fullmatch(r"(19|20)\d\d", n) and unit is None) or prev in MONTHS or nxt in MONTHS:
                kind = "date"      # 2024, August 24, 24 August
            else:
                kind = "number"
            out.append(_Quantity(_canon_number(n), UNITS.get(unit) if unit else None, kind, tok, unit or ""))
        elif tok in NUMBER_WORDS or tok == "one":
            if tok == "second" and prev and (_NUM.match(prev) or prev in NUMBER_WORDS):
                continue  # "5 second timeout": a unit, not a number
            value = 1 if tok == "one" else NUMBER_WORDS[tok]
            unit = nxt if nxt in UNITS else None
            kind = "soft" if tok in SOFT_NUMBER_WORDS or tok == "one" else "word"
            out.append(_Quantity(_canon_number(str(value)), UNITS.get(unit) if unit else None, kind, tok,
                                 unit or ""))
        elif "-" in tok or "/" in tok:
            # "30-year", "22/32", "2004-2005", "2024-03-01": numbers inside compounds
            kind = "date" if _ISO_DATE.match(tok) else "number"
            for part in re.split(r"[-/]", tok):
                pm = _NUM.match(part)
                if pm:
                    out.append(_Quantity(_canon_number(pm.group("n")), None, kind, tok))
    return out


def _say(q: _Quantity) -> str:
    if not q.unit_word or q.surface.endswith(q.unit_word):
        return q.surface
    return f"{q.unit_word}{q.surface}" if q.unit_word in "$€£" else f"{q.surface} {q.unit_word}"


def _number_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    qa, qb = _quantities(ta), _quantities(tb)
    hard_a = {q.value for q in qa if q.kind != "soft"}
    hard_b = {q.value for q in qb if q.kind != "soft"}
    all_a = {q.value for q in qa}
    all_b = {q.value for q in qb}
    only_a = sorted(hard_a - all_b)
    only_b = sorted(hard_b - all_a)
    if only_a or only_b:
        kinds = {q.kind for q in qa + qb if q.value in only_a or q.value in only_b}
        reason = "version" if "version" in kinds else "date" if kinds == {"date"} else "number"
        sa = ", ".join(_say(q) for q in qa if q.value in only_a) or "no number"
        sb = ", ".join(_say(q) for q in qb if q.value in only_b) or "no number"
        return GuardVerdict(True, reason, f"{sa} vs {sb}")
    # same numbers: do they carry the same units? (neither text's units of a value contain the other's)
    units_a: dict[str, set[str]] = {}
    units_b: dict[str, set[str]] = {}
    for qs, units in ((qa, units_a), (qb, units_b)):
        for q in qs:
            if q.unit:
                units.setdefault(q.value, set()).add(q.unit)
    for value in sorted(units_a.keys() & units_b.keys()):
        ua, ub = units_a[value], units_b[value]
        if not ua <= ub and not ub <= ua:
            wa = next(_say(x) for x in qa if x.value == value and x.unit and x.unit not in ub)
            wb = next(_say(x) for x in qb if x.value == value and x.unit and x.unit not in ua)
            return GuardVerdict(True, "unit", f"{wa} vs {wb}")
    return SAME


def _date_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    for table, name in ((MONTHS, "month"), (WEEKDAYS, "weekday")):
        da = {table[t] for t in ta if t in table and not (t == "may" and name == "month" and not _near_num(ta, t))}
        db = {table[t] for t in tb if t in table and not (t == "may" and name == "month" and not _near_num(tb, t))}
        if da and db and da != db:
            wa = " ".join(t for t in ta if t in table)
            wb = " ".join(t for t in tb if t in table)
            return GuardVerdict(True, "date", f"{wa} vs {wb}")
    return SAME


def _near_num(toks: tuple[str, ...], word: str) -> bool:
    i = toks.index(word)
    near = toks[max(0, i - 1): i + 2]
    return any(_NUM.match(t) for t in near)


# ---------------------------------------------------------------- polarity

def _negations(toks: tuple[str, ...]) -> int:
    """How many times a text negates: negators, privative verbs ("drop", "avoid", "refrain"), the
    negation-equivalent phrases "instead of", "rather than", "in place of", "other than", and "prefer X over Y";
    "not only", "nothing but", "no doubt" do not negate, "neither ... nor" negates once."""
    n, preferred = 0, -10
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if t in PREFERENCE:
            preferred = i
        if (t, nxt) in NEGATION_PHRASES or (toks[i - 1] if i else "", t, nxt) in NEGATION_PHRASES:
            n += 1
        elif t == "over" and i - preferred <= 6:
            n += 1
        elif (t in NEGATORS or t in PRIVATIVE) and (t, nxt) not in NOT_NEGATING \
                and not (t == "nor" and "neither" in toks[:i]):
            n += 1
    return n


def _polarity_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    na, nb = _negations(ta), _negations(tb)
    if na % 2 != nb % 2:
        wa = " ".join(t for t in ta if t in NEGATORS or t in PRIVATIVE) or "no negation"
        wb = " ".join(t for t in tb if t in NEGATORS or t in PRIVATIVE) or "no negation"
        return GuardVerdict(True, "negation", f"{wa} vs {wb}")
    sa, sb = set(ta), set(tb)
    for w in sorted(sa - sb):
        for opp in _OPPOSITE.get(w, ()):
            if opp in sb and opp not in sa:
                return GuardVerdict(True, "polarity", f"{w} vs {opp}")
    return SAME


# ---------------------------------------------------------------- who did what to whom: word order

_ORDER_TOKEN = re.compile(r"[$€£%]|[^\W_][\w.'/+#-]*[\w%]|[^\W_]|[,;:()\[\]]", re.UNICODE)
_Block = tuple[int, int, int, int]  # start in a, start in b, end in a, end in b


@lru_cache(maxsize=4096)
def _order_tokens(text: str) -> tuple[str, ...]:
    """`tokens` plus the punctuation that delimits phrases; a hyphenated word stays one word (anthrax-laced)."""
    out: list[str] = []
    for raw in _ORDER_TOKEN.findall(_KEY_VALUE.sub(" ", compared_form(text))):
        if raw in PUNCTUATION:
            out.append(raw)
        elif "-" in raw.strip("-") and not any(c.isdigit() for c in raw):
            out.append(raw.strip("-'"))
        else:
            out.extend(_split_token(raw))
    return tuple(out)


def _is_content(tok: str) -> bool:
    return tok not in STOPWORDS and tok not in PUNCTUATION


def _blocks(a: tuple[str, ...], b: tuple[str, ...]) -> list[_Block]:
    """Align the two texts into blocks of the same words (greedy string tiling, longest first).

    A match that stops at a difference gives its trailing function words to what follows ("born in | Boston"),
    so that "in Boston" and "in 1923" are units that can trade places. Function words left over are paired by
    occurrence; blocks that follow each other in both texts are joined.
    """
    ka = [_stem(t) if _is_content(t) else t for t in a]
    kb = [_stem(t) if _is_content(t) else t for t in b]
    n, m = len(a), len(b)
    used_a, used_b = [False] * n, [False] * m
    where: dict[str, list[int]] = {}
    for j, k in enumerate(kb):
        where.setdefault(k, []).append(j)
    tiles: list[tuple[int, int, int]] = []
    anchors = [(i, j) for i in range(n) if _is_content(a[i]) for j in where.get(ka[i], ())]
    if len(anchors) > MAX_ANCHORS:
        return []   # a few words said over and over: no order to read, and the cost would grow fast
    while anchors:
        best: tuple[tuple[int, float], int, int, int] | None = None
        for i0, j0 in anchors:  # every run of equal words through a pair of equal content words
            i, j = i0, j0
            while i and j and not used_a[i - 1] and not used_b[j - 1] and ka[i - 1] == kb[j - 1]:
                i, j = i - 1, j - 1
            end = i0 + 1
            while (end < n and end - i + j < m and not used_a[end] and not used_b[end - i + j]
                   and ka[end] == kb[end - i + j]):
                end += 1
            length = end - i
            if end < n and end - i + j < m:
                while not _is_content(a[i + length - 1]) and a[i + length - 1] not in PUNCTUATION:
                    length -= 1  # stops at a content word at the latest: the anchor
            score = (length + sum(_is_content(t) for t in a[i:i + length]), -abs(i / n - j / m))
            if best is None or score > best[0]:
                best = (score, i, j, length)
        assert best is not None
        _, i, j, length = best
        for d in range(length):
            used_a[i + d] = used_b[j + d] = True
        tiles.append((i, j, length))
        anchors = [(i, j) for i, j in anchors if not used_a[i] and not used_b[j]]
    spare: dict[str, list[int]] = {}
    for j in range(m):
        if not used_b[j]:
            spare.setdefault(kb[j], []).append(j)
    for i in range(n):
        if not used_a[i] and spare.get(ka[i]):
            j = spare[ka[i]].pop(0)
            used_a[i] = used_b[j] = True
            tiles.append((i, j, 1))
    tiles.sort()
    blocks: list[_Block] = []
    for i, j, length in tiles:
        if blocks and _gap(a, used_a, blocks[-1][2], i) and _gap(b, used_b, blocks[-1][3], j):
            blocks[-1] = (blocks[-1][0], blocks[-1][1], i + length, j + length)
        else:
            blocks.append((i, j, i + length, j + length))
    return blocks


def _gap(seq: tuple[str, ...], aligned: list[bool], start: int, end: int) -> bool:
    """Nothing between start and end but unaligned articles."""
    return start <= end and all(not aligned[p] and seq[p] in ARTICLES for p in range(start, end))


def _self_contained(seq: tuple[str, ...], start: int, end: int) -> bool:
    """A unit that carries its own role wherever it stands: it starts with a preposition, conjunction or
    subordinator, is an adverb or a time word or attribution, or stands between punctuation (a clause, a list
    item)."""
    while start < end and (seq[start] in BOUNDARY or seq[start] in LINKS):
        start += 1
    while end > start and (seq[end - 1] in BOUNDARY or seq[end - 1] in LINKS):
        end -= 1
    if start == end or seq[start] in MARKERS:
        return True
    if _adverbial(seq[start:end]):
        return True
    before = seq[start - 1] if start else ","
    after = seq[end] if end < len(seq) else ","
    return (before in BOUNDARY or before in LINKS) and (after in BOUNDARY or after in LINKS)


def _adverbial(words: tuple[str, ...]) -> bool:
    """Only adverbs, time words or attribution: "last month", "on Saturday", "yesterday", "quickly"."""
    content = [t for t in words if _is_content(t)]
    dated = any(t in MONTHS or t in WEEKDAYS for t in content)
    return any(t not in TIME_MODIFIERS for t in content) and all(
        t in MOVABLE or t in TIME or t in TIME_MODIFIERS or t in MONTHS or t in WEEKDAYS or t in REPORTING
        or t.endswith("ly") or (dated and _NUM.match(t)) for t in content)


def _attribution(seq: tuple[str, ...], start: int, end: int) -> bool:
    """The block is, or stands next to, a reporting verb: "X said" / "said X"."""
    return any(t in REPORTING for t in seq[max(0, start - 1): end + 1])


def _order_check(older: str, newer: str) -> GuardVerdict:
    """Who did what to whom, and which came first: "Sullivan defeated Denny" / "Denny defeated Sullivan",
    "from MySQL to Postgres" / "from Postgres to MySQL", "recorded in 2005 and published in 2006" / the years
    swapped. Moving a unit that carries its own role ("In 1876, he moved ..." / "He moved ... in 1876", "to
    New York from Chapel Hill" / "from Chapel Hill to New York"), reordering a list or moving attribution is not
    a change."""
    a, b = _order_tokens(older), _order_tokens(newer)
    blocks = _blocks(a, b)
    k = len(blocks)
    if k < 2:
        return SAME
    rank_b = [0] * k
    for r, x in enumerate(sorted(range(k), key=lambda x: blocks[x][1])):
        rank_b[x] = r
    if rank_b == list(range(k)):
        return _role_check(a, b, blocks)
    aligned_a, aligned_b = [False] * len(a), [False] * len(b)
    for sa, sb, ea, eb in blocks:
        aligned_a[sa:ea] = [True] * (ea - sa)
        aligned_b[sb:eb] = [True] * (eb - sb)
    words = [a[sa:ea] for sa, _, ea, _ in blocks]
    content = [sum(map(_is_content, w)) for w in words]

    order_b = sorted(range(k), key=rank_b.__getitem__)
    attribution = [any(t in REPORTING for t in w) for w in words]
    # the agent of a passive ("investigated by two agencies" / "two agencies investigate")
    agent = [(sa and not aligned_a[sa - 1] and a[sa - 1] == "by")
             or (sb and not aligned_b[sb - 1] and b[sb - 1] == "by") for sa, sb, _, _ in blocks]

    def neighbours(order: list[int], seq: tuple[str, ...], aligned: list[bool], side: int
                   ) -> tuple[dict[int, int], set[int], set[tuple[int, int]]]:
        """Block -> the block right after it in one text, when no content word of this text only stands between
        (nor a be-form or "by" of this text only: the passive voice); the blocks whose link to the next one is
        tight (nothing of this text only between but articles and punctuation); and the pairs side by side."""
        out, tight, beside = {}, set(), set()
        for u, v in zip(order, order[1:]):
            end, start = blocks[u][side + 2], blocks[v][side]
            loose = [t for i, t in enumerate(seq[end:start]) if not aligned[end + i]]
            if not any(map(_is_content, loose)):
                beside.update({(u, v), (v, u)})
                if not any(t in BE or t == "by" for t in loose):
                    out[u] = v
                    if all(t in ARTICLES or t in BOUNDARY for t in loose):
                        tight.add(u)
        return out, tight, beside

    (next_a, tight_a, beside_a), (next_b, tight_b, beside_b) = neighbours(list(range(k)), a, aligned_a, 0), \
        neighbours(order_b, b, aligned_b, 1)
    prev_a, prev_b = {v: u for u, v in next_a.items()}, {v: u for u, v in next_b.items()}

    def listed(seq: tuple[str, ...], x: tuple[int, int], y: tuple[int, int]) -> bool:
        """Between the end of x and the start of y only separators, articles and other list items: "A, B and C"."""
        if not (x[1] < y[0] and seq[x[1]] in SEPARATORS and seq[y[0] - 1] in SEPARATORS):
            return False
        p = x[1]
        while p < y[0]:
            if seq[p] in SEPARATORS or seq[p] in ARTICLES:
                p += 1
                continue
            q = p
            while q < y[0] and seq[q] not in SEPARATORS:
                q += 1
            if seq[q - 1] in PREPOSITIONS or seq[p] in MARKERS:
                return False  # "and died in": a clause, not an item
            p = q
        return True

    # a unit led by a preposition or subordinator that opens one of the texts ("For the billing service we
    # chose ..." / "We chose ... for the billing service"): its trades are loose evidence only
    fronted = [words[x][0] in MARKERS and words[x][0] not in SEPARATORS and 0 in (sa, sb)
               for x, (sa, sb, _, _) in enumerate(blocks)]

    def traded(x: int | None, y: int | None) -> bool:
        """x and y are different units with content that swapped order, not simply with each other, nor as items
        of one list, nor as the agent of a passive."""
        if (x is None or y is None or x == y or not content[x] or not content[y] or attribution[x] or attribution[y]
                or agent[x] or agent[y] or (x < y) == (rank_b[x] < rank_b[y])):
            return False
        if (x, y) in beside_a and (x, y) in beside_b:
            return False
        u, v = min(x, y), max(x, y)
        return not (listed(a, (blocks[u][0], blocks[u][2]), (blocks[v][0], blocks[v][2]))
                    and listed(b, (blocks[v][1], blocks[v][3]), (blocks[u][1], blocks[u][3])))

    # 1. units hand their neighbours over: "Sullivan [defeated] Denny" / "Denny [defeated] Sullivan", "[born in]
    #    Brooklyn ... [died in] Tiburon" / swapped. A tight link (same words at the junction in both texts) or
    #    two named units trading places is evidence enough; a loose one (a rewording at the junction, or a
    #    phrase moved to the front) needs a second one for the same two units;
    #    a pivot of function words only ("from X [to] Y") counts when it trades on both of its sides.
    seen: dict[tuple[int, int], list[str]] = {}
    names = _names(older) | _names(newer)
    for c in range(k):
        if attribution[c] or (not content[c] and not any(t in PREPOSITIONS or t in "()" for t in words[c])):
            continue
        if words[c][0] in SEPARATORS and words[c][-1] in SEPARATORS:
            continue  # ", B and": the other items of a list
        trades = [(x, y, side) for x, y, side in ((prev_a.get(c), prev_b.get(c), 0), (next_a.get(c), next_b.get(c), 1))
                  if traded(x, y)]
        if not content[c] and len(trades) < 2:
            continue
        for x, y, side in trades:
            pair = (min(x, y), max(x, y))
            near = " ".join(words[c][:3] if side == 0 else words[c][-3:])
            wx, wy = (" ".join(words[x][-4:]), " ".join(words[y][-4:])) if side == 0 else \
                (" ".join(words[x][:4]), " ".join(words[y][:4]))
            seen.setdefault(pair, []).append(f"{wx} {near} vs {wy} {near}" if side == 0 else
                                             f"{near} {wx} vs {near} {wy}")
            tight = (x in tight_a and y in tight_b) if side == 0 else (c in tight_a and c in tight_b)
            named = bool(names.intersection(words[x])) and bool(names.intersection(words[y]))
            if (tight or named) and content[c] and not fronted[x] and not fronted[y]:
                seen[pair].append("")
            if len(seen[pair]) >= 2:
                return GuardVerdict(True, "participants", seen[pair][0])
    # 2. two bare units in the other order, among words that are the same in both texts: "Nine episodes ordered
    #    were broadcast" / "Nine broadcast episodes were ordered". Not when one of them carries its own role
    #    (a phrase led by a preposition, an adverbial, attribution, a passive verb), when the two are items of
    #    one list, nor across a rewording.
    free = [_self_contained(a, sa, ea) or _self_contained(b, sb, eb) or _attribution(a, sa, ea)
            or _attribution(b, sb, eb)
            or (sa and not aligned_a[sa - 1] and a[sa - 1] in BE) or (sb and not aligned_b[sb - 1] and b[sb - 1] in BE)
            for sa, sb, ea, eb in blocks]

    def reworded(seq: tuple[str, ...], aligned: list[bool], start: int, end: int) -> bool:
        return any(not aligned[p] and seq[p] not in ARTICLES and seq[p] not in BOUNDARY for p in range(start, end))

    for x in range(k):
        if not content[x] or free[x]:
            continue
        for y in range(x + 1, k):
            if (rank_b[y] > rank_b[x] or not content[y] or free[y]
                    or (y == x + 1 and rank_b[x] == rank_b[y] + 1   # a modifier moved around its head
                        and min(content[x], content[y]) <= MODIFIER_WORDS and max(content[x], content[y]) <= HEAD_WORDS)
                    or reworded(a, aligned_a, blocks[x][0], blocks[y][2])
                    or reworded(b, aligned_b, blocks[y][1], blocks[x][3])
                    or (listed(a, blocks[x][0:3:2], blocks[y][0:3:2])
                        and listed(b, blocks[y][1:4:2], blocks[x][1:4:2]))):
                continue
            return GuardVerdict(True, "order", f"{' '.join(words[x])} / {' '.join(words[y])} in the other order")
    return _role_check(a, b, blocks)


def _role_check(a: tuple[str, ...], b: tuple[str, ...], blocks: list[_Block]) -> GuardVerdict:
    """3. a bare unit after another preposition, both prepositions being in both texts: "from X to Y" /
    "to X from Y"."""
    aligned_a, aligned_b = [False] * len(a), [False] * len(b)
    for sa, sb, ea, eb in blocks:
        aligned_a[sa:ea] = [True] * (ea - sa)
        aligned_b[sb:eb] = [True] * (eb - sb)

    def governor(seq: tuple[str, ...], aligned: list[bool], p: int) -> str | None:
        p -= 1
        while p >= 0 and seq[p] in ARTICLES:
            p -= 1
        return seq[p] if p >= 0 and aligned[p] and seq[p] in PREPOSITIONS else None

    for sa, sb, _, _ in blocks:
        if _is_content(a[sa]):
            ga, gb = governor(a, aligned_a, sa), governor(b, aligned_b, sb)
            if ga and gb and ga != gb:
                return GuardVerdict(True, "participants", f"{ga} {a[sa]} vs {gb} {a[sa]}")
    return SAME


# ---------------------------------------------------------------- content

# Words that carry no fact of their own for coverage: attribution and filler.
_TRANSPARENT = frozenset("""
said says say saying told tell tells added adding according stated reported mr mrs ms dr also even well now
later still already just really yet however meanwhile
decide decided decides deciding decision choose chose chosen chooses picked opt opted use used uses using
""".split())


def _content(toks: tuple[str, ...]) -> list[tuple[int, str]]:
    """(token index, content word): stop words, negators, numbers and filler left out."""
    out = []
    for i, tok in enumerate(toks):
        # "85-mph", "49-year-old": the words of a compound with numbers (the numbers are the number check's job)
        parts = re.split(r"[-/]", tok) if "-" in tok or "/" in tok else (tok,)
        out.extend((i, t) for t in parts if t not in STOPWORDS and t not in NEGATORS and t not in _TRANSPARENT
                   and len(t) > 1 and not _NUM.match(t))
    return out


def _covered(word: str, other: set[str], other_stems: set[str]) -> bool:
    """Exact, light stem, or a shared prefix of 4+ letters (postgres / postgresql)."""
    if word in other or _stem(word) in other_stems:
        return True
    if len(word) < 4:
        return False
    if any(word[:n] in other for n in range(4, len(word))):
        return True   # a shorter word this one starts with
    return len(word) <= 40 and any(len(o) > len(word) and o.startswith(word) for o in other)


def _coverage(ca: list[tuple[int, str]], cb: list[tuple[int, str]]) -> list[bool]:
    """For each content word of one text: does the other text have it (exact, stem or prefix)?"""
    other = {w for _, w in cb}
    stems = {_stem(w) for w in other}
    return [_covered(w, other, stems) for _, w in ca]


def _share(words: list[tuple[int, str]], covered: list[bool]) -> tuple[float, int]:
    """Length-weighted covered share, and the longest run of consecutive uncovered words."""
    total = sum(len(w) for _, w in words)
    got = sum(len(w) for (_, w), c in zip(words, covered) if c)
    run = longest = 0
    for c in covered:
        run = 0 if c else run + 1
        longest = max(longest, run)
    return (got / total if total else 1.0), longest


def _support(ca: list[tuple[int, str]], fa: list[bool], cb: list[tuple[int, str]], fb: list[bool]) -> float:
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
    names = _names(a) | _names(b)
    candidates = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        ia = [x for x, (i, _) in enumerate(ca) if i1 <= i < i2]
        ib = [x for x, (j, _) in enumerate(cb) if j1 <= j < j2]
        if (op == "replace" and ia and ib and i2 - i1 <= SEGMENT_MAX and j2 - j1 <= SEGMENT_MAX
                and not (all(fa[x] for x in ia) and all(fb[x] for x in ib))
                and not names.intersection(ta[i1:i2] + tb[j1:j2])):
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

_NAME_WORD = re.compile(r"[^\W_][\w.'+#-]*|[.!?:\"(]", re.UNICODE)


@lru_cache(maxsize=4096)
def _names(text: str) -> frozenset[str]:
    """Words written like names or identifiers (Capitalised inside a sentence, ALLCAPS, camelCase, with digits
    or underscores), normalised: another name in a slot is another fact, however close the model rates it."""
    out: set[str] = set()
    start = True
    for raw in _NAME_WORD.findall(unicodedata.normalize("NFKC", text)):
        if raw in '.!?:"(':
            start = True
            continue
        word = raw.strip(".'-")
        if word and (any(c.isdigit() or c == "_" for c in word) or re.search(r"[a-z][A-Z]", word)
                     or (len(word) > 1 and word.isupper()) or (word[0].isupper() and not start)):
            out.update(_split_token(word.casefold()))
        start = False
    return frozenset(out)


def _phrase(toks: tuple[str, ...], i: int, j: int) -> str:
    """A slot with one word of context on each side: what the model compares ("is slicing an")."""
    return " ".join(toks[max(0, i - 1): j + 1])


def _synonym(phrase_similarity: PhraseSimilarity, p: str, q: str) -> bool:
    """The model rates the two phrases synonyms; a model that fails answers "no" (the safe side)."""
    try:
        return float(phrase_similarity(p, q)) >= SYNONYM_MIN
    except Exception:  # noqa: BLE001 - any failure of the model must leave the verdict on the safe side
        return False


def _substitution_check(ta: tuple[str, ...], tb: tuple[str, ...], names: frozenset[str],
                        phrase_similarity: PhraseSimilarity | None) -> GuardVerdict:
    """The same sentence with one slot filled differently: "pool for DuckDB in sync" / "... in auth",
    "as CSV" / "as Protobuf", "flag sync_v3" / "flag sync_v5". Another name in the same place is another fact;
    a synonym is not ("two children" / "two kids"), when the model says so and the slot holds no name.
    A reworded sentence differs in more places than one."""
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return SAME
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > SLOT_MAX or j2 - j1 > SLOT_MAX or len(ta) - (i2 - i1) < SLOT_CONTEXT:
        return SAME
    words_a, words_b = [w for _, w in _content(ta[i1:i2])], [w for _, w in _content(tb[j1:j2])]
    if not words_a or not words_b:
        return SAME
    set_a, set_b = set(words_a), set(words_b)
    stems_a, stems_b = {_stem(w) for w in set_a}, {_stem(w) for w in set_b}
    if any(_covered(w, set_b, stems_b) for w in words_a) or any(_covered(w, set_a, stems_a) for w in words_b):
        return SAME
    if (phrase_similarity is not None and not names.intersection(ta[i1:i2] + tb[j1:j2])
            and _synonym(phrase_similarity, _phrase(ta, i1, i2), _phrase(tb, j1, j2))):
        return SAME
    return GuardVerdict(True, "substitution", f"{' '.join(ta[i1:i2])} vs {' '.join(tb[j1:j2])}")


# ---------------------------------------------------------------- the guard


def _flip(verdict: GuardVerdict) -> GuardVerdict:
    left, sep, right = verdict.detail.partition(" vs ")
    return GuardVerdict(True, verdict.reason, f"{right} vs {left}") if sep else verdict


def changed_fact(older: str, newer: str, phrase_similarity: PhraseSimilarity | None = None) -> GuardVerdict:
    """Whether `newer` states a different fact than `older` (a veto on treating them as duplicates)."""
    if compared_form(older) == compared_form(newer):
        return SAME
    ta, tb = tokens(older), tokens(newer)
    for check in (_number_check, _date_check, _polarity_check):
        verdict = check(ta, tb)
        if verdict.changed:
            return verdict
    flip = tb < ta  # the order and slot checks run on a canonical order: symmetric by construction
    x, y = (newer, older) if flip else (older, newer)
    long = max(len(ta), len(tb)) > LONG
    verdict = SAME if long else _order_check(x, y)
    if not verdict.changed and ta != tb and not long:
        verdict = _substitution_check(tokens(x), tokens(y), _names(x) | _names(y), phrase_similarity)
    return _flip(verdict) if verdict.changed and flip else verdict
