"""Split one assistant text (markdown) into sentence units, each with the context that gives it meaning.

A unit is one sentence of a paragraph or list item. It carries its paragraph (or item), the nearest heading and,
for list items, the lead-in line ("The root cause:", a parent item, else the heading) that the item depends on.
Fenced code, tables and rules are dropped; emphasis, links and code ticks are cleaned away (code spans are
counted, their text kept). Pure Python and deterministic: the same text always gives the same units.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from subcog_store.text.digests import sha256
from subcog_store.text.lazy_regex import LazyPattern

__all__ = ["Unit", "split_units", "split_sentences", "clean_inline", "sentence_sha", "is_candidate", "MIN_CHARS",
           "SHORT_MIN_CHARS", "MIN_CJK_CHARS", "cjk_chars"]

MIN_CHARS = 25  # the prefilter: shorter sentences are units only when they carry a value (see is_candidate)
SHORT_MIN_CHARS = 12  # ... a short fact with a value ("Default port is 1100.") from this length on
MIN_CJK_CHARS = 8  # text without spaces (Chinese, Japanese, Korean): characters are counted, not words

_FENCE = LazyPattern(r"^(`{3,}|~{3,})")
_TABLE = LazyPattern(r"^\|")
_RULE = LazyPattern(r"^(?:([-*_])(?:\s*\1){2,}|={3,})$")
_HEADING = LazyPattern(r"^(#{1,6})(?:\s+|$)")
_ITEM = LazyPattern(r"^(\s*)(?:[-*+\u2022]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_QUOTE = LazyPattern(r"^\s*(?:>\s?)+")
_CODE_SPAN = LazyPattern(r"(?<!`)(`{1,10})(?!`)(.{1,2000}?)(?<!`)\1(?!`)")
_INLINE = [
    (LazyPattern(r"!\[([^\[\]]*)\]\([^()]*\)"), r"\1"),  # image -> alt text
    (LazyPattern(r"\[([^\[\]]+)\]\([^()]*\)"), r"\1"),  # link -> its text
    (LazyPattern(r"<br\s*/?>", re.I), " "),
    (LazyPattern(r"\*\*(.+?)\*\*|__(.+?)__"), lambda m: m.group(1) or m.group(2)),
    (LazyPattern(r"~~(.+?)~~"), r"\1"),
    (LazyPattern(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),
    (LazyPattern(r"(?<!\w)_(?=\S)([^_]+?)(?<=\S)_(?!\w)"), r"\1"),
]
_CODE_MARK = "\x00"  # wraps a kept code span while sentences are split, so no split happens inside it
# A boundary: end mark (and closing quote/bracket), space, then something that can start a sentence.
_BOUNDARY = LazyPattern(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[\x00]?[A-Z0-9\x00#@$/~.\u2018\u201c\u2705\u274c\u26a0])"
                        r"|(?:(?<=[\u3002\uff01\uff1f])|(?<=[\u3002\uff01\uff1f][\u300d\u300f\uff09)]))\s*(?=[^\s\u300d\u300f\uff09)])")
# CJK full stops (。！？) end a sentence with or without a space after them (a closing bracket stays with it).
_ABBREV = LazyPattern(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|cf|incl|resp|no|fig|ca|dr|mr|mrs|ms|st)\.|\b[A-Z]\.)$", re.I)
_WORD = LazyPattern(r"[A-Za-z][A-Za-z'-]+")
_CJK = LazyPattern(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_VALUE = LazyPattern(r"\d|\x00")  # a number, or an inline code span (marked): what makes a short sentence a fact


@dataclass(frozen=True)
class Unit:
    """One sentence with its context. `index` is its position among the units of the text."""

    text: str  # the cleaned sentence
    context: str  # the cleaned paragraph or list item it belongs to
    heading: str  # nearest heading above ("" if none)
    lead: str  # list items: the lead-in line or parent item ("" for paragraphs)
    kind: str  # "para" | "item"
    index: int  # position among the units of this text
    block: int  # position of its paragraph/item among the blocks of this text
    pos: int  # position of the sentence within its block
    n_in_block: int  # sentences in its block (units and non-units)
    code_spans: int  # inline code spans in the sentence
    depth: int  # list nesting depth (0 for paragraphs and top-level items)
    start: int = 0  # where its paragraph or item starts in the text (a capture may resume there)

    def memory_text(self) -> str:
        """What to store: the sentence, prefixed by its lead-in for a list item (`lead: sentence`)."""
        lead = self.lead.rstrip(" :.")
        if self.kind == "item" and lead and lead not in self.text:
            return f"{lead}: {self.text}"
        return self.text

    @property
    def sha(self) -> str:
        return sentence_sha(self.text)


def sentence_sha(text: str) -> str:
    """First 16 hex of sha256 of the normalized sentence (lower case, whitespace folded: the store's normalize)."""
    return sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()[:16]


def _emphasis(text: str) -> str:
    for rx, repl in _INLINE:
        text = rx.sub(repl, text)
    return text


def _mark_inline(text: str) -> str:
    """Emphasis and links out; code spans kept, wrapped in _CODE_MARK (emphasis rules skip their content)."""
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_emphasis(text[last:m.start()]))
        out.append(_CODE_MARK + m.group(2).strip().replace(_CODE_MARK, "") + _CODE_MARK)
        last = m.end()
    out.append(_emphasis(text[last:]))
    return " ".join("".join(out).split())


def clean_inline(text: str) -> str:
    """Plain text of one markdown line or paragraph (emphasis, link targets and code ticks removed)."""
    return _mark_inline(text).replace(_CODE_MARK, "")


def split_sentences(marked: str) -> list[str]:
    """Sentences of one cleaned line (code spans marked): split after . ! ? before a capital, digit or code."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(marked):
        head = marked[start:m.start()]
        if head.count(_CODE_MARK) % 2 or _ABBREV.search(head):
            continue
        out.append(head)
        start = m.end()
    out.append(marked[start:])
    return [s.strip() for s in out if s.strip()]


def cjk_chars(text: str) -> int:
    """Characters of scripts written without spaces (Chinese, Japanese kana and kanji, Korean)."""
    if text.isascii() or max(text) < "\u3040":   # none of them (their pattern costs 3 ms to compile)
        return 0
    return len(_CJK.findall(text))


def is_candidate(sentence: str, code_free: str | None = None, *, code_spans: int = 0, value: bool = False,
                 lenient: bool = False) -> bool:
    """The prefilter (not pure code, paths or "Done."), on the sentence without markdown:
    - text without spaces: at least MIN_CJK_CHARS CJK characters outside code spans;
    - otherwise at least MIN_CHARS characters and three words (inline code spans count as words when two real
      words remain), or at least SHORT_MIN_CHARS characters, two words and a value (`value`: a number or an
      inline code span: "Default port is 1100.").
    `lenient` (for labelling): SHORT_MIN_CHARS characters and two words or code spans, whatever else."""
    prose = sentence if code_free is None else code_free
    if cjk_chars(prose) >= MIN_CJK_CHARS:
        return True
    words = len(_WORD.findall(prose))
    if lenient:
        return len(sentence) >= SHORT_MIN_CHARS and words + code_spans >= 2
    if len(sentence) >= MIN_CHARS and (words >= 3 or (words >= 2 and words + code_spans >= 3)):
        return True
    return len(sentence) >= SHORT_MIN_CHARS and words >= 2 and value


@dataclass
class _Block:
    lines: list[str]
    kind: str
    heading: str
    lead: str
    indent: int = 0
    depth: int = 0
    start: int = 0  # where its first line starts in the text


def _blocks(text: str) -> list[_Block]:
    """Paragraphs and list items (continuation lines joined) with heading and lead-in, code and tables dropped."""
    blocks: list[_Block] = []
    cur: _Block | None = None
    heading = ""
    fence: str | None = None
    last_para: _Block | None = None  # the paragraph just before a list, its possible lead-in
    items: list[_Block] = []  # open list items, outermost first

    def flush() -> None:
        nonlocal cur
        if cur is not None and cur.lines:
            blocks.append(cur)
        cur = None

    pos, at = 0, 0   # where this line starts in the text (the text as split, line ends "\n")
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        at, pos = pos, pos + len(line) + 1
        s = _QUOTE.sub("", line).rstrip()
        stripped = s.strip()
        f = _FENCE.match(stripped)
        if fence is not None:
            if f and stripped.startswith(fence) and not stripped.strip("`~"):
                fence = None
            continue
        if f:
            flush()
            fence = f.group(1)
            continue
        if not stripped or _TABLE.match(stripped) or _RULE.match(stripped):
            flush()
            continue
        h = _HEADING.match(stripped)
        if h:
            flush()
            heading = clean_inline(_HEADING.sub("", stripped).rstrip("# "))
            last_para, items = None, []
            continue
        item = _ITEM.match(s)
        if item:
            flush()
            indent = len(item.group(1).expandtabs(4))
            while items and items[-1].indent >= indent:
                items.pop()
            if items:
                lead = _first_sentence(" ".join(items[-1].lines))
            elif last_para is not None:
                lead = clean_inline(" ".join(last_para.lines))
            else:
                lead = heading
            cur = _Block([s[item.end():].strip()], "item", heading, lead, indent, len(items), at)
            items.append(cur)
            continue
        if cur is not None:  # a continuation line (a blank line, rule or table would have ended the block)
            cur.lines.append(stripped)
            continue
        flush()
        indented = items and len(s) - len(s.lstrip()) > items[-1].indent
        if not indented:
            items = []
        cur = _Block([stripped], "para", heading, "", start=at)
        if not indented:
            last_para = cur  # may lead the list that follows (kept if it ends in ':' or is short)
    flush()
    for b in blocks:
        if b.kind == "item" and b.lead and b.depth == 0 and not _is_lead(b.lead):
            b.lead = b.heading
    return blocks


def _first_sentence(markdown: str) -> str:
    """First sentence of a parent list item, the lead-in of its sub-items."""
    sentences = split_sentences(_mark_inline(markdown))
    return sentences[0].replace(_CODE_MARK, "")[:200] if sentences else ""


def _is_lead(text: str) -> bool:
    """A lead-in line: ends with ':' or is short (a label, not a paragraph of its own)."""
    return text.rstrip().endswith(":") or len(text) <= 80


def split_units(text: str, *, min_chars: int = MIN_CHARS, lenient: bool = False) -> list[Unit]:
    """Sentence units of one text, in order; only sentences passing the prefilter (see is_candidate; `min_chars`
    raises its length floor, `lenient` is the labelling prefilter).

    Each line of a paragraph ends a sentence (assistants do not hard-wrap prose); a list item's continuation
    lines belong to it.
    """
    units: list[Unit] = []
    for bi, b in enumerate(_blocks(text)):
        marked_lines = [_mark_inline(line) for line in b.lines]
        context = " ".join(m.replace(_CODE_MARK, "") for m in marked_lines).strip()
        if b.kind == "item":
            sentences = split_sentences(" ".join(marked_lines))
        else:
            sentences = [s for m in marked_lines for s in split_sentences(m)]
        for pos, s in enumerate(sentences):
            plain = s.replace(_CODE_MARK, "").strip()
            code_free = re.sub(r"\x00[^\x00]*\x00", " ", s)
            spans = s.count(_CODE_MARK) // 2
            if min_chars > MIN_CHARS and len(plain) < min_chars:
                continue
            if not is_candidate(plain, code_free, code_spans=spans, value=bool(_VALUE.search(s)), lenient=lenient):
                continue
            units.append(Unit(
                text=plain, context=context, heading=b.heading, lead=b.lead if b.kind == "item" else "",
                kind=b.kind, index=len(units), block=bi, pos=pos, n_in_block=len(sentences),
                code_spans=spans, depth=b.depth, start=b.start,
            ))
    return units
