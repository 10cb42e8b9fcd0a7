"""Turn assistant text into memory candidates: markdown-free paragraphs that say something lasting."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from subcog_store.hook.classify import classify, strip_narration
from subcog_store.text.redact import redact
from subcog_store.hook.transcript import AssistantText

__all__ = ["Candidate", "extract_candidates", "split_paragraphs"]


@dataclass(frozen=True)
class Candidate:
    """One paragraph worth remembering."""

    text: str  # cleaned paragraph, narration sentences and secrets removed
    namespace: str
    confidence: float  # 0..1
    source_uuid: str | None
    offset: int = 0      # where the transcript record it comes from starts
    redacted: int = 0    # secrets replaced by [REDACTED] in `text`


_FENCE = re.compile(r"^(`{3,}|~{3,})")
_TABLE = re.compile(r"^\|.*|^:?-{3,}:?(?:\s*\|\s*:?-{3,}:?)+\s*\|?$")
_RULE = re.compile(r"^(?:([-*_])(?:\s*\1){2,}|={3,})$")
_HEADING = re.compile(r"^#{1,6}(?:\s+|$)")
_ITEM = re.compile(r"^(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = re.compile(r"^(?:>\s?)+")
_CODE_SPAN = re.compile(r"(?<!`)(`{1,10})(?!`)(.{1,2000}?)(?<!`)\1(?!`)")
_INLINE = [
    (re.compile(r"!\[([^\[\]]*)\]\([^()]*\)"), r"\1"),  # image -> alt text
    (re.compile(r"\[([^\[\]]+)\]\([^()]*\)"), r"\1"),  # link -> its text
    (re.compile(r"<br\s*/?>", re.I), " "),
    (re.compile(r"\*\*(.+?)\*\*|__(.+?)__"), lambda m: m.group(1) or m.group(2)),
    (re.compile(r"~~(.+?)~~"), r"\1"),
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<!\w)_(?=\S)([^_]+?)(?<=\S)_(?!\w)"), r"\1"),
]


def _clean_inline(text: str) -> str:
    """Markdown emphasis and links out, code spans kept as plain text (emphasis rules skip their content)."""
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_emphasis(text[last:m.start()]))
        out.append(m.group(2).strip())
        last = m.end()
    out.append(_emphasis(text[last:]))
    return " ".join("".join(out).split())


def _emphasis(text: str) -> str:
    for rx, repl in _INLINE:
        text = rx.sub(repl, text)
    return text


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs of markdown `text`, cleaned to plain text.

    Blank lines separate paragraphs; a heading or list item also starts one. Fenced code blocks, tables and
    horizontal rules are dropped; heading marks, bullets, numbering, block quotes, emphasis, code ticks and
    link targets are removed; whitespace is folded.
    """
    blocks: list[list[str]] = []
    cur: list[str] = []
    fence: str | None = None

    def flush() -> None:
        nonlocal cur
        if cur:
            blocks.append(cur)
        cur = []

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        s = _QUOTE.sub("", line.strip()).strip()
        f = _FENCE.match(s)
        if fence is not None:
            if f and s.startswith(fence) and not s.strip("`~"):
                fence = None
            continue
        if f:
            flush()
            fence = f.group(1)
            continue
        if not s or _TABLE.match(s) or _RULE.match(s):
            flush()
            continue
        if _HEADING.match(s):
            flush()
            blocks.append([_HEADING.sub("", s).rstrip("# ")])
            continue
        if _ITEM.match(s):
            flush()
            s = _ITEM.sub("", s)
        cur.append(s)
    flush()
    paragraphs = (_clean_inline(" ".join(b)) for b in blocks)
    return [p for p in paragraphs if p]


def extract_candidates(
    texts: Iterable[AssistantText | str],
    *,
    min_chars: int = 40,
    min_confidence: float = 0.5,
    max_chars: int = 4000,
) -> list[Candidate]:
    """Candidates from assistant texts, in order; no de-duplication (the store does that).

    Each paragraph is classified as a whole; narration sentences are then dropped from the stored text and
    secrets replaced by `[REDACTED]`. Paragraphs shorter than `min_chars`, longer than `max_chars` (dumps, not
    memories) or below `min_confidence` are skipped.
    """
    out: list[Candidate] = []
    for t in texts:
        text, uuid, offset = (t, None, 0) if isinstance(t, str) else (t.text, t.uuid, t.offset)
        for para in split_paragraphs(text):
            if not min_chars <= len(para) <= max_chars:
                continue
            verdict = classify(para)
            if verdict is None or verdict[1] < min_confidence:
                continue
            body, redacted = redact(strip_narration(para))
            if len(body) >= min_chars:
                out.append(Candidate(body, verdict[0], verdict[1], uuid, offset, redacted))
    return out
