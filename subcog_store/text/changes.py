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

from subcog_store.text.changes_usage import used_after_all
from subcog_store.text.changes_words import (
    CUES, DIMENSION, EVERY, GENERIC, LINK_WORDS, NEGATING, NEW_BEFORE, OLD_AFTER, OLD_BEFORE, STRONG)
from subcog_store.text.guard_words import NUMBER_WORDS, STOPWORDS, UNITS

__all__ = ["Change", "supersedes"]

SLOT_CONTEXT = 4       # shared content words around a swapped name (the guard's SLOT_CONTEXT)
SUBJECT_MIN = 2        # shared subject words a value or choice change needs
NO_LONGER_SUBJECT = 3  # ... and a bare "no longer" without a new value
CUE_WINDOW = 6         # tokens after a replacement cue in which the replaced value is named

_TOKEN = re.compile(r"'[^'\s]{1,40}'|\"[^\"\s]{1,40}\"|(?<!\S)/[^/\s]{1,40}/(?!\w)|\d{1,3}(?:,\d{3})+(?:\.\d+)?"
                    r"|(?<!\w)\.(?=\w)[\w.+#/@:-]*[\w+#%]|[@$€£]?[\w][\w.+#/@:-]*[\w+#%]|[\w%]", re.UNICODE)
_NUMBER = re.compile(r"^(v)?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)([a-zµ%]+)?$", re.IGNORECASE)
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


@dataclass(frozen=True)
class _Token:
    text: str            # as written
    low: str             # lower case
    stem: str
    kind: str            # word | stop | name | number
    quantity: tuple[str, float] | None = None   # (dimension, value in base units) for numbers with a unit
    clause: int = 0


@dataclass(frozen=True)
class _Text:
    tokens: tuple[_Token, ...]
    raw: str

    @property
    def content(self) -> list[_Token]:
        return [t for t in self.tokens if t.kind != "stop"]

    def stems(self) -> set[str]:
        """Word stems and names, with the parts of a dotted or snake_case name (response.json: response, json)."""
        out = {t.stem for t in self.tokens if t.kind in ("word", "name")}
        for t in self.tokens:
            if t.kind == "name":
                out.update(_stem(p) for p in re.split(r"[._/:-]+", t.low) if len(p) >= 3 and p.isalpha())
        return out

    def names(self) -> set[str]:
        return {t.low for t in self.tokens if t.kind == "name"}


def _stem(word: str) -> str:
    """Light suffix stripping: plurals and simple verb forms (token/tokens, cache/cached/caching)."""
    if len(word) <= 3 or any(c.isdigit() for c in word):
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


@lru_cache(maxsize=4096)
def _parse(text: str) -> _Text:
    raw = [m.group(0) for m in _TOKEN.finditer(text)]
    clause_of = _clauses(text)
    out: list[_Token] = []
    for i, tok in enumerate(raw):
        low = tok.lower().rstrip(".,:")
        prev = raw[i - 1].lower() if i else ""
        nxt = raw[i + 1].lower().rstrip(".,:") if i + 1 < len(raw) else ""
        m = _NUMBER.match(low)
        if _ISO_DATE.match(low):
            out.append(_Token(tok, low, low, "number", ("date", float(low[:4] + low[5:7] + (low[8:10] or "00")))))
        elif low in EVERY or (prev == "every" and low in UNITS and UNITS[low] in DIMENSION):
            seconds = EVERY.get(low) or DIMENSION[UNITS[low]][1]
            out.append(_Token(tok, low, low, "number", ("time", seconds)))
        elif m or low in NUMBER_WORDS and low not in ("one", "first", "second", "single", "once", "half", "double"):
            value = float(m.group(2).replace(",", "")) if m and m.group(2).count(".") <= 1 else None
            if m is None:
                value = float(NUMBER_WORDS[low])
            unit = UNITS.get(m.group(3)) if m and m.group(3) else UNITS.get(nxt)
            quantity = None
            if value is not None and unit in DIMENSION:
                dim, scale = DIMENSION[unit]
                quantity = (dim, value * scale)
            elif value is not None and unit:
                quantity = (unit, value)
            elif value is not None:   # a count of the noun phrase after it ("6 replicas", "1,000 DNS cache entries")
                noun = _head_noun([r for r, k in zip(raw[i + 1: i + 4], clause_of[i + 1: i + 4]) if k == clause_of[i]])
                quantity = ("of " + _stem(noun) if noun else "", value)
            out.append(_Token(tok, low.replace(",", ""), low, "number", quantity))
        elif low in STOPWORDS or len(low) < 2:
            out.append(_Token(tok, low, low, "stop"))
        elif (i > 0 and tok[0].isupper()) or tok[0] in "'\"/." or _identifier(tok):
            out.append(_Token(tok, low, low, "name"))
        else:
            out.append(_Token(tok, low, _stem(low), "word"))
    tokens = tuple(_Token(t.text, t.low, t.stem, t.kind, t.quantity, clause_of[i]) for i, t in enumerate(out))
    return _Text(tokens, text)


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
    return sum(c.isupper() for c in tok) >= 2 or any(c in "_./:@#+" for c in tok) or \
        (any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok)) or \
        any(x.islower() and y.isupper() for x, y in zip(tok, tok[1:]))


def _clauses(text: str) -> list[int]:
    """The clause number of each token (clauses end at ; , . and, but, a dash ...)."""
    bounds = [m.start() for m in _CLAUSE.finditer(text + " ")]
    out, k = [], 0
    for m in _TOKEN.finditer(text):
        while k < len(bounds) and bounds[k] < m.start():
            k += 1
        out.append(k)
    return out


def _subject(a: _Text, b: _Text) -> list[str]:
    """Shared words that can name a subject (not generic, not numbers), in the newer text's order."""
    shared = a.stems() & b.stems()
    seen, words = set(), []
    for t in b.tokens:
        parts = [t.stem] + ([_stem(p) for p in re.split(r"[._/:-]+", t.low) if len(p) >= 3 and p.isalpha()]
                            if t.kind == "name" else [])
        for stem in parts:
            if stem in shared and stem not in GENERIC and t.kind in ("word", "name") and stem not in seen \
                    and t.low not in UNITS:
                seen.add(stem)
                words.append(stem if stem != t.stem else t.low)
    return words


def _qualifier_conflict(a: _Text, b: _Text, subject: list[str]) -> str | None:
    """Two subjects told apart by what stands in front of one head word ("billing service" / "auth service")."""
    def before(text: _Text) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        toks = [t for t in text.tokens if t.low not in ("the", "a", "an", "our", "its", "their", "this", "that")]
        for i in range(1, len(toks)):
            prev, head = toks[i - 1], toks[i]
            if head.kind in ("word", "name") and prev.kind in ("word", "name") and prev.stem not in GENERIC:
                found.setdefault(head.stem, set()).add(prev.stem)
        return found

    heads = {t.stem for t in b.tokens if t.low in subject}
    qa, qb = before(a), before(b)
    sa, sb = a.stems(), b.stems()
    for head in heads:
        xa, xb = qa.get(head, set()), qb.get(head, set())
        if xa and xb and not (xa & xb):
            only_a, only_b = xa - sb, xb - sa
            if only_a and only_b:
                return f"{sorted(only_a)[0]} {head} / {sorted(only_b)[0]} {head}"
    return None


def _cue(older: _Text, newer: _Text) -> re.Match | None:
    """Replacement language in the newer text that the older does not already use."""
    old_cues = {m.group(0).lower().split()[0] for m in CUES.finditer(older.raw)}
    for m in CUES.finditer(newer.raw):
        if m.group(0).lower().split()[0] not in old_cues:
            return m
    return None


def _named_as_replaced(older: _Text, newer: _Text) -> tuple[str, bool] | None:
    """An older name (or content word) that the newer text names as what was replaced or retired, and whether it
    is a name."""
    old_names = {t.low for t in older.tokens if t.kind == "name"}
    old_words = {t.stem for t in older.tokens if t.kind == "word" and t.stem not in GENERIC}
    toks, text = newer.tokens, newer.raw
    spans = []
    for m in OLD_AFTER.finditer(text):
        start = len(_TOKEN.findall(text[: m.end()]))
        spans.append((m, toks[start: start + CUE_WINDOW]))
    for m in OLD_BEFORE.finditer(text):
        end = len(_TOKEN.findall(text[: m.start()]))
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




def _versions(text: _Text) -> dict[str, set[str]]:
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


def _quantities(text: _Text) -> dict[str, set[float]]:
    out: dict[str, set[float]] = {}
    for t in text.tokens:
        if t.quantity is not None:
            out.setdefault(t.quantity[0], set()).add(t.quantity[1])
    return out


def _number_slot(a: _Text, b: _Text) -> tuple[str, str] | None:
    """A quantity of one kind whose value differs, in clauses that share SUBJECT_MIN subject words (or in two
    texts that differ in nothing else): (old, new) as written."""
    qa, qb = _quantities(a), _quantities(b)
    only_numbers = _only_numbers_differ(a, b)
    for dim in qa.keys() & qb.keys():
        old, new = qa[dim] - qb[dim], qb[dim] - qa[dim]
        if not (old and new) or (not dim and not only_numbers):
            continue   # a bare number with nothing to count is a slot only when nothing else differs
        pairs = [(len(_clause_words(a, i) & _clause_words(b, j)), i, j)
                 for i in _where(a, dim, old) for j in _where(b, dim, new)]
        shared, i, j = max(pairs)
        if shared >= SUBJECT_MIN or only_numbers:
            return _say(a, i), _say(b, j)
    return None


def _only_numbers_differ(a: _Text, b: _Text) -> bool:
    """The two texts differ in numbers (and their units) only."""
    ca, cb = a.content, b.content
    sm = SequenceMatcher(a=[t.stem for t in ca], b=[t.stem for t in cb], autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op != "equal" and not all(t.kind == "number" or t.low in UNITS for t in ca[i1:i2] + cb[j1:j2]):
            return False
    return True


def _clause_words(text: _Text, i: int) -> set[str]:
    """The subject words of the clause token i stands in."""
    clause = text.tokens[i].clause
    return {t.stem for t in text.tokens if t.clause == clause and t.kind in ("word", "name")
            and t.stem not in GENERIC and t.low not in UNITS}


def _where(text: _Text, dim: str, values: set[float]) -> list[int]:
    return [i for i, t in enumerate(text.tokens) if t.quantity and t.quantity[0] == dim and t.quantity[1] in values]


def _say(text: _Text, i: int) -> str:
    toks = text.tokens
    nxt = toks[i + 1].text if i + 1 < len(toks) and toks[i + 1].low in UNITS else ""
    return f"{toks[i].text} {nxt}".strip()


def _slot_swap(a: _Text, b: _Text) -> tuple[str, str] | None:
    """One name (or run of names) swapped for another with SLOT_CONTEXT shared content words around it."""
    ca, cb = [t for t in a.content], [t for t in b.content]
    sm = SequenceMatcher(a=[t.stem for t in ca], b=[t.stem for t in cb], autojunk=False)
    swaps = [op for op in sm.get_opcodes() if op[0] != "equal"]
    if len(swaps) != 1 or swaps[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = swaps[0]
    old, new = ca[i1:i2], cb[j1:j2]
    if len(old) > 3 or len(new) > 3 or not all(t.kind == "name" for t in old + new):
        return None
    if sum(1 for t in cb if t.stem in {x.stem for x in ca}) < SLOT_CONTEXT:
        return None
    return " ".join(t.text for t in old), " ".join(t.text for t in new)


def _choice(a: _Text, b: _Text, cue: re.Match, subject: list[str]) -> tuple[str, str] | None:
    """Replacement language followed, in its clause, by a name the older lacks ("now uses /^shared$/"), where a
    clause of the older that shares a subject word with it holds a name the newer lacks: (old, new)."""
    at = len(_TOKEN.findall(b.raw[: cue.start()]))
    if at >= len(b.tokens):
        return None
    clause = b.tokens[at].clause
    after = [t for t in b.tokens[at:] if t.clause == clause]
    new_names = [t.text for t in after if t.kind == "name" and t.low not in a.names()]
    words = {t.stem for t in b.tokens if t.clause == clause and (t.low in subject or t.stem in subject)}
    for k in {t.clause for t in a.tokens}:
        in_clause = [t for t in a.tokens if t.clause == k]
        old_names = [t.text for t in in_clause if t.kind == "name" and t.low not in b.names()]
        if old_names and new_names and any(t.stem in words or t.low in words for t in in_clause):
            return old_names[0], new_names[0]
    return None


def supersedes(older: str, newer: str) -> Change | None:
    """The change by which `newer` outdates `older` (same subject, another value or choice), or None.

    Both are memory texts of one project, `older` stated before `newer`. Deterministic, no model, about 0.1 ms.
    See the module docstring for the six kinds of change and what is never one.
    """
    a, b = _parse(" ".join(older[:MAX_CHARS].split())), _parse(" ".join(newer[:MAX_CHARS].split()))
    if not a.tokens or not b.tokens or a.raw.lower() == b.raw.lower():
        return None
    subject = _subject(a, b)
    subject_text = " ".join(subject[:4])
    cue = _cue(a, b)
    if cue is not None:
        named = _named_as_replaced(a, b)
        if named and (named[1] or len(subject) >= SUBJECT_MIN):
            new_names = [t.text for t in b.tokens if t.kind == "name" and t.low not in a.names()]
            if new_names or NEGATING.search(b.raw) or not named[1]:
                return Change("replaced", subject_text or named[0], named[0], new_names[0] if new_names else "")
    if not subject:
        return None
    va, vb = _versions(a), _versions(b)
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
