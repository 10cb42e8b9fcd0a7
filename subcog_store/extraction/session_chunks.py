"""A session's text as searchable pieces: one per turn (what the user typed, the assistant's text, a compaction
summary), a long turn cut at paragraph boundaries, secrets redacted. What extraction misses stays findable
through search (recall/session_search.py), ranked below the curated memories.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from subcog_store.extraction.transcript import AssistantText
from subcog_store.text.redact import redact

__all__ = ["Chunk", "turn_chunks", "CHUNK_CHARS"]

CHUNK_CHARS = 1200  # about 300 tokens: what the model reads of a text (256 word pieces), plus its tail for BM25
MIN_CHARS = 12      # "ok", "yes", "commit this" are not worth a search result


@dataclass(frozen=True)
class Chunk:
    """One searchable piece of a turn."""

    role: str               # user | assistant | summary
    record_uuid: str | None
    piece: int
    content: str            # redacted
    said_at: str | None


def _pieces(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut after a paragraph (else a line, else anywhere)."""
    out, rest = [], text.strip()
    while len(rest) > limit:
        cut = rest.rfind("\n\n", 0, limit)
        if cut < limit // 3:
            cut = rest.rfind("\n", 0, limit)
        if cut < limit // 3:
            cut = limit
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        out.append(rest)
    return [p for p in out if p]


def turn_chunks(texts: Iterable[AssistantText]) -> list[Chunk]:
    """The searchable pieces of the texts a capture read, in order, by turn: what the user typed, then the
    assistant's texts until the next prompt joined (its short narration records are one text with the rest),
    each compaction summary on its own; sidechains left out."""
    out: list[Chunk] = []
    turn: list[AssistantText] = []

    def flush() -> None:
        if turn:
            _add(out, "assistant", turn[0], "\n\n".join(t.text for t in turn))
            turn.clear()

    for t in texts:
        if t.is_sidechain:
            continue
        if t.kind == "assistant":
            turn.append(t)
            continue
        flush()
        _add(out, t.kind if t.kind in ("user", "summary") else "assistant", t, t.text)
    flush()
    return out


def _add(out: list[Chunk], role: str, first: AssistantText, text: str) -> None:
    for i, piece in enumerate(_pieces(redact(text)[0])):
        if len(piece) >= MIN_CHARS:
            out.append(Chunk(role, first.uuid, i + first.char_start // CHUNK_CHARS, piece, first.timestamp))
