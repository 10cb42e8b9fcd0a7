"""How the changed-facts judgement (`text.changes`) reads one memory text, and what one text alone says.

`parse(text)` splits a text into tokens (a word with its stem, a stop word, a name as written: capitalised,
quoted, an identifier, a path; a number with its quantity: a unit's dimension in base units, or what it counts)
and numbers each token's clause. A `Text` keeps what the judgement derives from one text alone (stems, names,
the replacement cues, versions, quantities, the words in front of each head word), each computed on first use
and kept: a capture judges one new text against up to ten older ones, and the new text is read once for all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import NamedTuple

from subcog_store.text.changes_words import CUES, DIMENSION, EVERY, GENERIC, LINK_WORDS
from subcog_store.text.guard_words import NUMBER_WORDS, STOPWORDS, UNITS

TOKEN = re.compile(r"'[^'\s]{1,40}'|\"[^\"\s]{1,40}\"|(?<!\S)/[^/\s]{1,40}/(?!\w)|\d{1,3}(?:,\d{3})+(?:\.\d+)?"
                   r"|(?<!\w)\.(?=\w)[\w.+#/@:-]*[\w+#%]|[@$€£]?[\w][\w.+#/@:-]*[\w+#%]|[\w%]", re.UNICODE)
_NUMBER = re.compile(r"^(v)?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)([a-zµ%]+)?$", re.IGNORECASE)


class Token(NamedTuple):
    """One token of a text: as written, lower case, its stem, its kind, a number's quantity, its clause."""

    text: str            # as written
    low: str             # lower case
    stem: str
    kind: str            # word | stop | name | number
    quantity: tuple[str, float] | None = None   # (dimension, value in base units) for numbers with a unit
    clause: int = 0


@dataclass(frozen=True, eq=False)   # eq and hash by identity: one parse of a text is one Text
class Text:
    """A parsed text; what the judgement derives from one text alone is computed once and kept on it."""

    tokens: tuple[Token, ...]
    raw: str

    @cached_property
    def content(self) -> list[Token]:
        return [t for t in self.tokens if t.kind != "stop"]

    @cached_property
    def parts(self) -> tuple[tuple[str, ...], ...]:
        """For each token, the stems of a dotted or snake_case name's parts (response.json: response, json)."""
        return tuple(tuple(stem(p) for p in _NAME_PARTS.split(t.low) if len(p) >= 3 and p.isalpha())
                     if t.kind == "name" else () for t in self.tokens)

    @cached_property
    def stems(self) -> frozenset[str]:
        """Word stems and names, with the parts of names."""
        out = {t.stem for t in self.tokens if t.kind in ("word", "name")}
        for parts in self.parts:
            out.update(parts)
        return frozenset(out)

    @cached_property
    def names(self) -> frozenset[str]:
        return frozenset(t.low for t in self.tokens if t.kind == "name")

    @cached_property
    def cues(self) -> tuple[re.Match, ...]:
        return tuple(CUES.finditer(self.raw))

    @cached_property
    def clause_words(self) -> dict[int, set[str]]:
        """The subject words of each clause."""
        out: dict[int, set[str]] = {}
        for t in self.tokens:
            words = out.setdefault(t.clause, set())
            if t.kind in ("word", "name") and t.stem not in GENERIC and t.low not in UNITS:
                words.add(t.stem)
        return out

    @cached_property
    def versions(self) -> dict[str, set[str]]:
        return _versions(self)

    @cached_property
    def quantities(self) -> dict[str, set[float]]:
        return _quantities(self)

    @cached_property
    def qualified(self) -> dict[str, set[str]]:
        return _qualified(self)


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """Light suffix stripping: plurals and simple verb forms (token/tokens, cache/cached/caching)."""
    if len(word) <= 3 or (not word.isalpha() and any(c.isdigit() for c in word)):   # no letter is a digit
        return word
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if len(word) >= 5 and word.endswith("e") else word


_ISO_DATE = re.compile(r"^(19|20)\d\d-\d\d(-\d\d)?$")
_CLAUSE = re.compile(r"[;,.!?]\s|\s(?:and|but|while|whereas|so)\s|\s[-\u2013\u2014]+\s")
_NAME_PARTS = re.compile(r"[._/:-]+")


@lru_cache(maxsize=4096)
def parse(text: str) -> Text:
    """`text` (whitespace already collapsed) as tokens, each with its clause; kept for the next call."""
    found = list(TOKEN.finditer(text))
    raw = [m.group(0) for m in found]
    clause_of = _clauses(text, found)
    out: list[Token] = []
    for i, tok in enumerate(raw):
        low = tok.lower().rstrip(".,:")
        # _NUMBER and _ISO_DATE begin with a digit (\d is str.isdecimal) or "v": skip them for other tokens
        m = _NUMBER.match(low) if low[:1].isdecimal() or low[:1] == "v" else None
        clause = clause_of[i]
        if low[:2] in ("19", "20") and _ISO_DATE.match(low):
            out.append(Token(tok, low, low, "number", ("date", float(low[:4] + low[5:7] + (low[8:10] or "00"))),
                             clause))
        elif low in EVERY or (i and raw[i - 1].lower() == "every" and low in UNITS and UNITS[low] in DIMENSION):
            seconds = EVERY.get(low) or DIMENSION[UNITS[low]][1]
            out.append(Token(tok, low, low, "number", ("time", seconds), clause))
        elif m or low in NUMBER_WORDS and low not in ("one", "first", "second", "single", "once", "half", "double"):
            value = float(m.group(2).replace(",", "")) if m and m.group(2).count(".") <= 1 else None
            if m is None:
                value = float(NUMBER_WORDS[low])
            nxt = raw[i + 1].lower().rstrip(".,:") if i + 1 < len(raw) else ""
            unit = UNITS.get(m.group(3)) if m and m.group(3) else UNITS.get(nxt)
            quantity = None
            if value is not None and unit in DIMENSION:
                dim, scale = DIMENSION[unit]
                quantity = (dim, value * scale)
            elif value is not None and unit:
                quantity = (unit, value)
            elif value is not None:   # a count of the noun phrase after it ("6 replicas", "1,000 DNS cache entries")
                noun = _head_noun([r for r, k in zip(raw[i + 1: i + 4], clause_of[i + 1: i + 4]) if k == clause])
                quantity = ("of " + stem(noun) if noun else "", value)
            out.append(Token(tok, low.replace(",", ""), low, "number", quantity, clause))
        elif low in STOPWORDS or len(low) < 2:
            out.append(Token(tok, low, low, "stop", None, clause))
        elif (i > 0 and tok[0].isupper()) or tok[0] in "'\"/." or _identifier(tok):
            out.append(Token(tok, low, low, "name", None, clause))
        else:
            out.append(Token(tok, low, stem(low), "word", None, clause))
    return Text(tuple(out), text)


def _head_noun(following: list[str]) -> str:
    """The last word of the noun phrase in `following` (up to a stop word or a number), lower case."""
    head = ""
    for tok in following:
        low = tok.lower().rstrip(".,:;")
        if low in STOPWORDS or _NUMBER.match(low) or low in NUMBER_WORDS or not low.isalpha():
            break
        head = low
        if tok != tok.rstrip(".,:;"):
            break
    return head


def _identifier(tok: str) -> bool:
    """camelCase, ALLCAPS2, snake_case, a.dotted/path, v2beta: written as an identifier, not a word."""
    if tok.isalpha() and tok.islower():   # letters, none upper case (the same test as isupper), none a digit
        return False
    return sum(c.isupper() for c in tok) >= 2 or any(c in "_./:@#+" for c in tok) or \
        (any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok)) or \
        any(x.islower() and y.isupper() for x, y in zip(tok, tok[1:]))


def _clauses(text: str, tokens: list[re.Match]) -> list[int]:
    """The clause number of each token (clauses end at ; , . and, but, a dash ...)."""
    bounds = [m.start() for m in _CLAUSE.finditer(text + " ")]
    out, k = [], 0
    for m in tokens:
        while k < len(bounds) and bounds[k] < m.start():
            k += 1
        out.append(k)
    return out


def _qualified(text: Text) -> dict[str, set[str]]:
    """head word stem -> the stems of the words written right in front of it (articles skipped)."""
    found: dict[str, set[str]] = {}
    toks = [t for t in text.tokens if t.low not in ("the", "a", "an", "our", "its", "their", "this", "that")]
    for i in range(1, len(toks)):
        prev, head = toks[i - 1], toks[i]
        if head.kind in ("word", "name") and prev.kind in ("word", "name") and prev.stem not in GENERIC:
            found.setdefault(head.stem, set()).add(prev.stem)
    return found


def _versions(text: Text) -> dict[str, set[str]]:
    """name -> the values written right after it: versions ("PostGIS 3.5", "Node to 20.11") and settings
    ("IPFS_LOCAL_API_URL, which defaults to http://localhost:5001", "LmCompatibilityLevel is now 5")."""
    out: dict[str, set[str]] = {}
    toks = text.tokens
    for i, t in enumerate(toks):
        is_value = (t.kind == "number" and not (t.quantity and t.quantity[0])) or \
            (t.kind == "name" and any(c.isdigit() for c in t.low) and any(c in ":/" for c in t.low))
        if not is_value:
            continue   # a quantity with a unit is a value of its own slot, not a version
        j = i - 1
        while j >= 0 and i - j <= 4 and toks[j].low in LINK_WORDS:
            j -= 1
        if j >= 0 and i - j <= 4 and toks[j].kind == "name" and toks[j].low != t.low:
            out.setdefault(toks[j].low, set()).add(t.low.lstrip("v").rstrip(".,;"))
    return out


def _quantities(text: Text) -> dict[str, set[float]]:
    out: dict[str, set[float]] = {}
    for t in text.tokens:
        if t.quantity is not None:
            out.setdefault(t.quantity[0], set()).add(t.quantity[1])
    return out
