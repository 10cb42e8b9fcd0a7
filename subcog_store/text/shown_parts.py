"""A long memory shown in one line by the parts of it that hold a prompt's words, not by its first characters.

A capture store's memory is often a list or a paragraph of up to 1,000 characters; the prompt hook shows one line
of `width` characters, and the part that answers the prompt is often past the cut. `answering_line` keeps the
parts (the sentences; a list's lead-in and its items) that hold the most of the prompt's significant words, in the
memory's order, a gap marked " … ", the room left filled by the parts that follow them (as the first characters
would be shown); with no part holding one, the memory's first `width` characters (`shown_line`). Measured on TRAIN
(bench/capture/RESULTS.md, helper-69): no constant of its own.
"""
from __future__ import annotations

import re

from subcog_store.text.redact import shown, shown_line
from subcog_store.text.textsim import significant_tokens

JOIN = " … "
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")   # not after "e.g." before a lower-case word
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def parts(text: str) -> tuple[list[str], bool]:
    """The parts of a text, in order, whitespace folded: each line's sentences, a list item whole (its marker
    dropped); and whether the text is a list (its first part the lead-in, ending with ':', then items)."""
    found: list[str] = []
    items = 0
    for raw in text.splitlines():
        if _ITEM.match(raw):   # a list item stays whole: the answer a question about it asks for
            pieces = [_ITEM.sub("", raw, count=1)]
            items += 1
        else:
            pieces = _SENTENCE.split(raw)
        found.extend(" ".join(p.split()) for p in pieces if p.strip())
    return found, bool(items) and bool(found) and found[0].endswith(":")


def render(pieces: list[str], chosen: set[int]) -> str:
    """The chosen parts in their order: neighbours joined by a space, a gap by JOIN."""
    out, last = "", None
    for i in sorted(chosen):
        out += pieces[i] if last is None else (" " if i == last + 1 else JOIN) + pieces[i]
        last = i
    return out


def _fit(part: str, width: int) -> str:
    return part if len(part) <= width else part[: width - 1] + "…"


def answering_line(text: str | None, asked: set[str], width: int) -> str:
    """`text` on its way out as one line of at most `width` characters: whole when it fits; else the parts that
    cover the most of `asked` (the prompt's significant tokens), picked one at a time by the words they add (ties:
    the earlier part) while they fit; a list's lead-in when an item is shown and it fits; then the room left filled
    as the first characters are today: each shown part followed by the parts after it while they fit, the last
    one cut. Shown in their order, a gap marked by JOIN. No part holding a word of `asked`: `shown_line` (the first
    `width` characters)."""
    out = shown(text) or ""
    if not asked or len(" ".join(out.split())) <= width:
        return shown_line(text, width)
    pieces, is_list = parts(out)
    words = [significant_tokens(p) & asked for p in pieces]
    chosen: set[int] = set()
    covered: set[str] = set()
    while True:
        best = max((i for i in range(len(pieces)) if i not in chosen and words[i] - covered),
                   key=lambda i: (len(words[i] - covered), -i), default=None)
        if best is None:
            break
        if chosen and len(render(pieces, chosen | {best})) > width:
            words[best] = set()   # does not fit beside what is chosen: the next best may
            continue
        chosen.add(best)
        covered |= words[best]
    if not chosen:
        return shown_line(text, width)
    if is_list and len(render(pieces, chosen | {0})) <= width:
        chosen.add(0)
    while True:   # the room left: the parts that follow the shown ones, as the first characters would be shown
        following = [i + 1 for i in sorted(chosen) if i + 1 < len(pieces) and i + 1 not in chosen]
        fits = [i for i in following if len(render(pieces, chosen | {i})) <= width]
        if not fits:
            break
        chosen.add(fits[0])
    line = render(pieces, chosen)
    after = max(chosen) + 1
    if after < len(pieces) and len(line) + 2 < width:   # the part after the last one, cut to the width
        line = line + " " + pieces[after]
    return _fit(line, width)
