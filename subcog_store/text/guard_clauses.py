"""Clauses and voice, for the word-order rules (`guard_roles`): a clause moved ("X when Y" / "when Y, X", "X; Y" /
"Y: X") and the passive voice ("X is encrypted by Y" / "Y encrypts X") carry no change of roles. The texts are read
again with the clauses of one in the other's order, or with a passive clause said in the active voice, and
compared again (issue 23, docs/guard.md)."""
from __future__ import annotations

import itertools
from typing import Callable

from subcog_store.text.guard_tokens import is_content, stem
from subcog_store.text.guard_words import BE, BOUNDARY, LINKS, PREPOSITIONS, SEPARATORS, SUBORDINATORS

__all__ = ["active_voice", "causes_traded", "clauses_in_order", "CLAUSES_MOVED"]

CLAUSES_MOVED = 3   # a sentence of at most this many clauses is read again with its clauses in another order
CLAUSE_PUNCTUATION = frozenset(";:")
CLAUSE_LEADS = SUBORDINATORS | {"then"}   # clauses moved keep the word that leads them ("when X", "then Y")
_KINDS = {"since": "because", "when": "if"}
_FIRST = {("", "so"): (0, "cause"), ("", "because"): (1, "cause"), ("because", ""): (0, "cause"),
          ("", "if"): (1, "if"), ("if", ""): (0, "if"), ("", "then"): (0, "then")}


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
    return [tuple(c[:-1] if c[-1] == "," else c) for c in out if c and c != [","]]


def clauses_in_order(a: tuple[str, ...], b: tuple[str, ...], name_words: frozenset[str]) -> tuple[str, ...]:
    """b with its clauses in a's order, when both have the same number of clauses (2 to CLAUSES_MOVED) and
    another order matches each clause of a with the b clause sharing most of its words, each clause keeping the
    word that leads it: "X; to do Y, Z" / "to do Y, Z: X", "X when Y" / "when Y, X" (a clause moved is no
    changed fact when the texts then read alike); () when none moved."""
    parts_a, parts_b = _clauses(a, name_words), _clauses(b, name_words)
    if not 2 <= len(parts_b) <= CLAUSES_MOVED or len(parts_a) != len(parts_b):
        return ()
    order = _pairing(parts_a, parts_b, _lead)
    if list(order) == sorted(order):
        return ()
    return tuple(t for i, x in enumerate(order) for t in ((",",) if i else ()) + parts_b[x])


def causes_traded(a: tuple[str, ...], b: tuple[str, ...], name_words: frozenset[str]) -> bool:
    """Two clauses that say which comes first (a cause, a condition, an earlier step) where the other text puts
    the other one first: "X, so Y" / "X because Y", "when X, Y" / "when Y, X", "X; then Y" / "Y; then X"; not
    "X, so Y" / "Y because X" (the same clauses, each with its role)."""
    parts_a, parts_b = _clauses(a, name_words), _clauses(b, name_words)
    first_a, first_b = _first(parts_a), _first(parts_b)
    if first_a is None or first_b is None or first_a[1] != first_b[1]:
        return False
    order = _pairing(parts_a, parts_b, lambda clause: "")
    return bool(order) and order[first_a[0]] != first_b[0]


def _pairing(parts_a: list[tuple[str, ...]], parts_b: list[tuple[str, ...]], lead: Callable[[tuple[str, ...]], str]
             ) -> tuple[int, ...]:
    """The order of b's clauses that pairs each clause of a with the one sharing most of its words, among the
    orders pairing clauses of the same `lead` only; () when there is none."""
    words_a = [{stem(t) for t in c if is_content(t)} for c in parts_a]
    words_b = [{stem(t) for t in c if is_content(t)} for c in parts_b]
    orders = [o for o in itertools.permutations(range(len(parts_b)))
              if all(lead(parts_a[i]) == lead(parts_b[x]) for i, x in enumerate(o))]
    return max(orders, key=lambda o: sum(len(words_a[i] & words_b[x]) for i, x in enumerate(o)), default=())


def _lead(clause: tuple[str, ...]) -> str:
    """The word that leads a clause and stays with it ("when", "because", "then"), or ""."""
    return clause[0] if clause[0] in CLAUSE_LEADS else ""


def _first(parts: list[tuple[str, ...]]) -> tuple[int, str] | None:
    """Of two clauses, the one that comes first (the cause: "X, so Y", "Y because X"; the condition: "Y when X";
    the earlier step: "X; then Y") and the kind of relation; None for other sentences ("so that" is a purpose)."""
    if len(parts) != 2:
        return None
    kinds = [_KINDS.get(_lead(p), _lead(p)) for p in parts]
    if kinds == ["", "so"] and parts[1][1:2] == ("that",):
        return None
    return _FIRST.get((kinds[0], kinds[1]))
