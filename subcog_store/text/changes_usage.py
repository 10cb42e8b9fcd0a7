"""A corrected belief about code: an older text says a named piece of code is not used, a newer says it is used.

`used_after_all(older, newer)` returns the shared code identifier when `older` states that it is not used,
read or called ("TranscriptLinesAtStart is stored but never used", "the explain command doesn't read it") and
`newer` states, with no negation of use anywhere, that something uses, reads or calls it, the identifier within
USE_WINDOW tokens of the verb ("The code now uses the TranscriptLinesAtStart field to scope transcripts").
`text.changes.supersedes` calls it as its sixth kind of change (`used`).

Only verbal negations count: the adjective ("the unused `generateRemediationPrompts` call") describes a call
site, and a later "the endpoint calls generateRemediationPrompts" is another site, not a correction (the one
such pair in the 18 training sessions, ctxeval-plan-first-remediation.jsonl). Only code identifiers (camelCase,
snake_case, dotted) name the subject: a plain word ("the LCD is not used") is too vague to link by.
Checked on the training sessions (bench/capture/RESULTS.md, "Round 4, fifth pass"): no pair fires there.
"""
from __future__ import annotations

import re

__all__ = ["used_after_all"]

USE_WINDOW = 6   # tokens between the use verb and the identifier in the newer text ("uses the existing X field")

_USE = r"(?:used|read|called|referenced)"
NOT_USED = re.compile(
    rf"\b(?:(?:is|are|was|were|be|been|being)\s+(?:\w+\s+but\s+)?(?:not|never)\s+(?:actually\s+)?{_USE}"
    rf"|(?:isn't|aren't|wasn't|weren't|isn’t|aren’t)\s+(?:actually\s+)?{_USE}"
    r"|(?:doesn't|don't|didn't|doesn’t|don’t|does\s+not|do\s+not|did\s+not|never)\s+(?:actually\s+)?"
    r"(?:use|read|call|reference)s?"
    rf"|never\s+{_USE}|not\s+{_USE}\s+(?:anywhere|at\s+all|by))\b", re.IGNORECASE)
USES = re.compile(r"\b(?:uses|using|used|reads|reading|calls|calling|references|referencing|wires|wired)\b",
                  re.IGNORECASE)
NO_LONGER = re.compile(r"\b(?:no\s+longer|not\s+\w+\s+any\s?more|stopped\s+using|removed|dropped)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][\w.]*\w|\w")


def _code_names(text: str) -> set[str]:
    """Code identifiers in `text` (camelCase, snake_case, dotted: each dotted part too)."""
    out = set()
    for tok in re.findall(r"[A-Za-z_][\w.]*\w", text):
        for part in [tok] + tok.split("."):
            if len(part) >= 4 and ("_" in part or any(x.islower() and y.isupper() for x, y in zip(part, part[1:]))):
                out.add(part)
    return out


def used_after_all(older: str, newer: str) -> str | None:
    """The code identifier `older` says is not used and `newer` says is used, or None."""
    if not NOT_USED.search(older) or NOT_USED.search(newer) or NO_LONGER.search(newer):
        return None
    shared = _code_names(older) & _code_names(newer)
    if not shared:
        return None
    words = _WORD.findall(newer)
    verbs = [i for i, w in enumerate(words) if USES.fullmatch(w)]
    for i, w in enumerate(words):
        names = {w, *w.split(".")} & shared
        if names and any(abs(i - v) <= USE_WINDOW for v in verbs):
            return sorted(names)[0]
    return None
