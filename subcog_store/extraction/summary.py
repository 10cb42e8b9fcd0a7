"""Compaction summaries as a capture source.

When the client compacts, the model writes a structured summary, stored in the transcript as an `isCompactSummary`
record. The PreCompact hook prints SUMMARY_INSTRUCTION, which asks the summarizer to end with a short section of
lasting facts under LASTING_FACTS_HEADING; `summary_facts` reads those lines back. A summary without the section
(older sessions, a summarizer that ignored it) is read by section instead: the sections of the client's summary
format that never hold lasting facts are skipped (`split_sections`, SKIP_SECTIONS), the others judged sentence by
sentence.
"""
from __future__ import annotations

import re

from subcog_store.extraction.sentences import clean_inline
from subcog_store.text.lazy_regex import LazyPattern

__all__ = ["LASTING_FACTS_HEADING", "SUMMARY_INSTRUCTION", "SKIP_SECTIONS", "FACT_SECTIONS", "MAX_FACTS",
           "facts_section", "section_title", "summary_facts", "split_sections"]

LASTING_FACTS_HEADING = "Lasting facts (for subcog)"
MAX_FACTS = 30  # the instruction asks for at most 15; more lines than this are not a facts list

SUMMARY_INSTRUCTION = (
    f'End the summary with a section headed exactly "{LASTING_FACTS_HEADING}:" listing, one per line starting '
    'with "- ", the facts from this conversation a developer would want to find again next week: decisions with '
    "their reason, causes of bugs, conventions and rules, constraints and limitations, values that matter (ports, "
    "hosts, limits, versions, paths). Each line must stand on its own (name the file, component or tool). No "
    "narration, status, progress or pending tasks, and nothing the conversation later corrected. At most 15 lines; "
    'write "- none" if there is nothing lasting.'
)

# The sections of the client's summary format (its compaction prompt); those in SKIP_SECTIONS restate the request,
# log the changes file by file, quote the user, list what is left to do or describe the moment of compaction: by
# the labelling guideline never a lasting fact (the user's own words are read from their records). The others
# (errors and fixes, problem solving, key concepts, a summary's own decisions) are judged sentence by sentence,
# topic labels and status left out.
KNOWN_SECTIONS = frozenset({
    "analysis", "summary", "primary request and intent", "key technical concepts", "files and code sections",
    "errors and fixes", "problem solving", "all user messages", "pending tasks", "current work",
    "optional next step",
})
SKIP_SECTIONS = frozenset({"all user messages", "pending tasks", "current work", "optional next step",
                           "files and code sections", "primary request and intent"})
# The section the format reserves for the session's concepts: its items that say something (not a topic label,
# not chatter or status) are kept (in the labelled training summaries 42 of its 48 units are lasting facts).
FACT_SECTIONS = frozenset({"key technical concepts"})

_TITLE = LazyPattern(r"^ {0,3}(?:#{1,6}\s*)?(?:\*\*|__)?(?:\d{1,2}[.)]\s*)?(?:\*\*|__)?\s*"
                     r"(?P<title>[A-Za-z][\w ()/&',-]{1,80}?)\s*(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*:?\s*$")
_BULLET = LazyPattern(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
_TRAILER = LazyPattern(r"^(?:if you need specific details from before compaction|please continue the conversation"
                       r"|this session is being continued from a previous conversation)", re.I)
_NONE = LazyPattern(r"^(?:none|n/?a|nothing(?: lasting)?|-+)\W*$", re.I)
_GROUP_LABEL = LazyPattern(r"^[\w /&()-]{1,40}:$")  # "Decisions:" grouping lines inside the section
_WORD = LazyPattern(r"[A-Za-z0-9][\w'-]*")


def _title(line: str) -> str | None:
    """The normalized title when `line` is only a section title ("2. Key Technical Concepts:", "## Summary")."""
    m = _TITLE.match(line)
    return " ".join(m.group("title").lower().split()) if m else None


def section_title(line: str) -> str | None:
    """The normalized title when `line` is the title of a known section of the summary format, else None."""
    t = _title(line)
    return t if t in KNOWN_SECTIONS else None


def _is_facts_heading(title: str | None) -> bool:
    return title is not None and title.startswith("lasting facts")


def split_sections(text: str) -> list[tuple[str, str]]:
    """`text` cut before each line that is a known section title of the client's summary format (or the facts
    heading): (normalized title, or "" before the first one; the chunk, title line included). The chunks joined
    give `text` back."""
    out: list[tuple[str, str]] = []
    title, start, pos = "", 0, 0
    for line in text.splitlines(keepends=True):
        t = _title(line)
        if t is not None and (t in KNOWN_SECTIONS or _is_facts_heading(t)):
            if pos > start:
                out.append((title, text[start:pos]))
            title, start = t, pos
        pos += len(line)
    if pos > start:
        out.append((title, text[start:pos]))
    return out


def facts_section(text: str) -> list[str] | None:
    """The lines of the last lasting-facts section of a summary (cleaned of bullets and markdown), or None when the
    summary has no such section ([] when it says "none")."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    heads = [i for i, line in enumerate(lines) if _is_facts_heading(_title(line))]
    if not heads:
        return None
    facts: list[str] = []
    bulleted: bool | None = None
    gap = False
    for line in lines[heads[-1] + 1:]:
        stripped = line.strip()
        if not stripped:
            gap = gap or bulleted is not None
            continue
        if _TRAILER.match(stripped) or stripped.startswith("</") or stripped.startswith("#"):
            break
        bullet = bool(_BULLET.match(line))
        if bulleted is None:
            bulleted = bullet
        elif gap and (not bulleted or not bullet):
            break  # a paragraph after the list: the section has ended
        if not bullet and (title := _title(line)) is not None and title in KNOWN_SECTIONS:
            break
        gap = False
        fact = clean_inline(_BULLET.sub("", line)).strip()
        if not fact or _NONE.match(fact) or _GROUP_LABEL.match(fact) or len(_WORD.findall(fact)) < 3:
            continue
        facts.append(fact)
        if len(facts) >= MAX_FACTS:
            break
    return facts


def summary_facts(text: str) -> list[str]:
    """The lines of the lasting-facts section the PreCompact hook asks for (one fact per line), else []."""
    return facts_section(text) or []
