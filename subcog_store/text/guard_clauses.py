"""Clauses and voice, for the word-order rules (`guard_roles`): a clause moved ("X when Y" / "when Y, X", "X; Y" /
"Y: X") and the passive voice ("X is encrypted by Y" / "Y encrypts X") carry no change of roles. The texts are read
again with the clauses of one in the other's order, or with a passive clause said in the active voice, and
compared again (issue 23, docs/guard.md)."""
from __future__ import annotations

import itertools

from subcog_store.text.guard_tokens import is_content, stem
from subcog_store.text.guard_words import BE, BOUNDARY, LINKS, PREPOSITIONS, SEPARATORS, SUBORDINATORS

__all__ = ["active_voice", "clauses_in_order", "CLAUSES_MOVED"]

CLAUSES_MOVED = 3   # a sentence of at most this many clauses is read again with its clauses in another order
CLAUSE_PUNCTUATION = frozenset(";:")
CLAUSE_LEADS = SUBORDINATORS | {"then"}   # clauses moved keep the word that leads them ("when X", "then Y")


def active_voice(seq: tuple[str, ...]) -> tuple[str, ...]:
    """The text with its first passive clause said in the active voice ("X is encrypted by Y" -> "Y encrypted X";
    words are compared by stems, so "encrypted" meets "encrypts"); () when it has none. A clause starts after
    punctuation, a conjunction or subordinator; the agent stops at the next one or a preposition."""
    for k in range(2, len(seq) - 1):
        if seq[k] != "by" or not is_content(seq[k - 1]):
            continue
        be = next((p for p in (k - 2, k - 3) if p >= 0 and seq[p] in BE), None)   # "is [rarely] called by"
        if be is None:
            continue
        start = be
        while start and not _clause_edge(seq[start - 1]):
            start -= 1
        end = k + 1
        while end < len(seq) and (seq[end] in SEPARATORS or not _clause_edge(seq[end])) \
                and seq[end] not in PREPOSITIONS:
            end += 1   # the agent, a list included ("by PostgreSQL, Redis and IPFS")
        while seq[end - 1] in SEPARATORS:
            end -= 1
        if start < be and k + 1 < end:
            return seq[:start] + seq[k + 1:end] + (seq[k - 1],) + seq[start:be] + seq[end:]
    return ()


def _clause_edge(t: str) -> bool:
    return t in BOUNDARY or t in LINKS or t in SUBORDINATORS or t in ("that", "which", "who")


def _clauses(seq: tuple[str, ...], name_words: frozenset[str]) -> list[tuple[str, ...]]:
    """A sentence's clauses: split at ";" and ":" (not a name's key-value colon: "hasText: 'x'"), before a
    subordinator (which stays with its clause), and at the comma that closes a clause led by one ("when X, Y")."""
    out: list[list[str]] = [[]]
    for p, t in enumerate(seq):
        if ((t in CLAUSE_PUNCTUATION and not (p and seq[p - 1] in name_words))
                or (t == "," and out[-1] and out[-1][0] in SUBORDINATORS)):
            out.append([])
        elif t in SUBORDINATORS and out[-1]:
            out.append([t])
        else:
            out[-1].append(t)
    return [tuple(c) for c in out if c]


def clauses_in_order(a: tuple[str, ...], b: tuple[str, ...], name_words: frozenset[str]) -> tuple[str, ...]:
    """b with its clauses in a's order, when both have the same number of clauses (2 to CLAUSES_MOVED) and
    another order matches each clause of a with the b clause sharing most of its words: "X; to do Y, Z" / "to do
    Y, Z: X", "X when Y" / "when Y, X" (a clause moved is no changed fact when the texts then read alike)."""
    parts_a, parts_b = _clauses(a, name_words), _clauses(b, name_words)
    if not 2 <= len(parts_b) <= CLAUSES_MOVED or len(parts_a) != len(parts_b):
        return ()
    words_a = [{stem(t) for t in c if is_content(t)} for c in parts_a]
    words_b = [{stem(t) for t in c if is_content(t)} for c in parts_b]
    lead = lambda clause: clause[0] if clause[0] in CLAUSE_LEADS else ""  # noqa: E731 - stays with its clause
    orders = [o for o in itertools.permutations(range(len(parts_b)))
              if all(lead(parts_a[i]) == lead(parts_b[x]) for i, x in enumerate(o))]
    order = max(orders, key=lambda o: sum(len(words_a[i] & words_b[x]) for i, x in enumerate(o)), default=())
    if list(order) == sorted(order):
        return ()
    return tuple(t for i, x in enumerate(order) for t in ((",",) if i else ()) + parts_b[x])
