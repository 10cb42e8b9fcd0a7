"""The items of a list in another order, for the word-order rules (`guard_roles`): two neighbouring items of one
text that the other text lists in the other order, between the same words, each item worded its own way
("PostgreSQL on port 5432 and Redis on port 6380" / "Redis (port 6380) and PostgreSQL (port 5432)"). Put back in
order, the texts are compared again: a list reordered is no changed fact (issue 23, docs/guard.md)."""
from __future__ import annotations

import re

from subcog_store.text.guard_tokens import is_content, stem
from subcog_store.text.guard_words import ARTICLES, BOUNDARY, LINKS, MARKERS, PUNCTUATION, SEPARATORS

__all__ = ["list_items_swapped", "options_sorted", "LIST_ITEM", "LIST_LIGHT"]

LIST_ITEM = 6       # words of a list item at most (coding train: "Redis ( port 6380 )" is 5)
# Words a list item may add or drop and say the same: "on port 5432" / "(port 5432)", "per second" / "a second",
# "and it has" / "and has"; not as the item's first word ("in Brazil" is not "Brazil")
LIST_LIGHT = frozenset({"on", "at", "per", "of", "in", "with", "it", "they"})
_PARENTHESES = frozenset("()")
_JOINERS = frozenset({"&", "plus"})


ItemKey = tuple[str, ...]


def _item_key(item: tuple[str, ...]) -> ItemKey:
    """What a list item says, whatever its order and light wording: the preposition or subordinator it starts
    with ("in Brazil" is not "Brazil"), then its other words but articles, punctuation and LIST_LIGHT
    ("PostgreSQL on port 5432" / "PostgreSQL (port 5432)", "10 requests per second" / "10 requests a second"),
    stemmed and sorted. Empty: no content word, no item."""
    if not any(is_content(t) for t in item):
        return ()
    lead = item[0] if item[0] in MARKERS and item[0] not in PUNCTUATION else ""
    rest = item[1:] if lead else item
    return (lead, *sorted(stem(t) for t in rest if t not in ARTICLES and t not in PUNCTUATION and t not in LIST_LIGHT))


def _edge(seq: tuple[str, ...], p: int) -> str:
    """The word at p, with the ends of the text, punctuation and separators read as one: "|"."""
    return "|" if p < 0 or p >= len(seq) or seq[p] in BOUNDARY or seq[p] in SEPARATORS else seq[p]


def _item_end(tok: str) -> bool:
    """An item stops at a separator or clause punctuation; parentheses stay inside ("Redis (port 6380)")."""
    return tok in SEPARATORS or (tok in BOUNDARY and tok not in _PARENTHESES)


def _list_pairs(seq: tuple[str, ...]) -> dict[tuple[ItemKey, ItemKey, str, str], tuple[int, int, int, int]]:
    """Two neighbouring items of a list: (left key, right key, word before, word after) -> (start, separator
    start, separator end, end). Items have at most LIST_ITEM words and no separator or clause punctuation inside;
    the right one ends where its phrase does (no content word follows: "the staging | cluster" is no item), and
    after a bare comma it is followed by another separator ("Redis, Kafka and Postgres, | the API needs": the
    clause's subject, not an item)."""
    out: dict[tuple[ItemKey, ItemKey, str, str], tuple[int, int, int, int]] = {}
    n, c0 = len(seq), 0
    while c0 < n:
        if seq[c0] not in SEPARATORS or not c0:
            c0 += 1
            continue
        c1 = c0
        while c1 < n and seq[c1] in SEPARATORS:
            c1 += 1
        comma_only = not any(t in LINKS or t in _JOINERS for t in seq[c0:c1])
        lefts = []
        for s in range(c0 - 1, max(-1, c0 - 1 - LIST_ITEM), -1):
            if _item_end(seq[s]):
                break
            lefts.append((s, _item_key(seq[s:c0])))
        for e in range(c1 + 1, min(n, c1 + LIST_ITEM) + 1):
            if _item_end(seq[e - 1]):
                break
            if e < n and (is_content(seq[e]) or (comma_only and seq[e] not in SEPARATORS)):
                continue
            right = _item_key(seq[c1:e])
            for s, left in lefts:
                if left and right and left != right:
                    out.setdefault((left, right, _edge(seq, s - 1), _edge(seq, e)), (s, c0, c1, e))
        c0 = c1
    return out


def list_items_swapped(a: tuple[str, ...], b: tuple[str, ...], name_words: frozenset[str]
                       ) -> tuple[str, ...] | None:
    """b with two neighbouring list items trading places, where a lists the same two items in the other order
    between the same words (the pair with the most words when several do); None when there is none. Items of one
    list are alike: both name something or neither does ("Julita Ross, an author, and ..." is no list)."""
    pairs_a = _list_pairs(a)
    best = None
    for (left, right, before, after), (s, c0, c1, e) in _list_pairs(b).items():
        if ((right, left, before, after) in pairs_a and (best is None or len(left) + len(right) > best[0])
                and bool(name_words.intersection(b[s:c0])) == bool(name_words.intersection(b[c1:e]))):
            best = (len(left) + len(right), s, c0, c1, e)
    if best is None:
        return None
    _, s, c0, c1, e = best
    return b[:s] + b[c1:e] + b[c0:c1] + b[s:c0] + b[e:]


# A command-line option ("-x", "--no-verify", "--port 8080", "--host=0.0.0.0"): a value is kept with its option when
# it is joined by "=" or looks like one (digits, a dot, slash or colon; not a sentence's final dot), so "--name
# foo" leaves "foo" to the prose
_OPTION = r"--?[A-Za-z][\w-]*(?:=[^\s,;]*[^\s,;.]|\s+(?=[^\s,;-]*[\d./:])[^\s,;-](?:[^\s,;]*[^\s,;.])?)?"
_OPTION_RUN = re.compile(rf"(?<![\w-]){_OPTION}(?:\s+{_OPTION})+")
_ONE_OPTION = re.compile(_OPTION)


def options_sorted(text: str) -> str:
    """The text with each run of command-line options in one order (sorted): "-x -q" / "-q -x", "--port 8080
    --host 0.0.0.0" / the other order give their options in any order the same meaning."""
    if "-" not in text:
        return text
    return _OPTION_RUN.sub(lambda m: " ".join(sorted(o.strip() for o in _ONE_OPTION.findall(m.group(0)))), text)
