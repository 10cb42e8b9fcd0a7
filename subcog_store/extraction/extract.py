"""Turn assistant text and compaction summaries into memory candidates: the sentences a developer would want to find
again next week.

Each text is redacted, split into sentence units (`sentences.split_units`: a sentence with its paragraph, heading and
list lead-in) and every unit is judged by the learned scorer (`scorer.Scorer`, weights loaded once per process). A
unit is kept when P(lasting fact) reaches the threshold, or when it carries an explicit signal ("Decision:",
"we decided to", "turns out", "Gotcha:", "TODO:" ...) and is not narration, a question, an offer or a hedge. A list
item is stored with its lead-in (`unit.memory_text()`). Within one call, a later statement that corrects an earlier
kept one drops it (`scorer.drop_corrected`). A compaction summary yields the lines of its lasting-facts section
(`summary.summary_facts`) when it has one, else its units, minus the sections that never hold lasting facts.

`min_confidence` is a probability floor: None means the threshold shipped with the weights (chosen on the labelled
sessions, see bench/capture/RESULTS.md); an explicit signal counts as SIGNAL_CONFIDENCE, a facts-section line as
FACTS_CONFIDENCE.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable

from subcog_store.extraction.scorer import Scorer, drop_corrected, features, namespace_of, record_features
from subcog_store.extraction.sentences import Unit, split_sentences, split_units
from subcog_store.extraction.summary import FACT_SECTIONS, SKIP_SECTIONS, facts_section, section_title, split_sections
from subcog_store.extraction.transcript import AssistantText
from subcog_store.text.redact import REDACTED, redact

__all__ = ["Candidate", "Verdict", "extract_candidates", "extract_with", "judge", "load_scorer", "signal_of",
           "FACTS_CONFIDENCE", "MAX_CHARS", "SIGNAL_CONFIDENCE"]

MAX_CHARS = 4000  # a longer sentence is a dump, not a memory
SIGNAL_CONFIDENCE = 0.8  # an explicit signal, or an item of a summary's concepts section (12 of the 15 labelled
#                          sentences with an explicit signal are lasting facts)
FACTS_CONFIDENCE = 0.9  # a line of the lasting-facts section the summarizer was asked to write


@dataclass(frozen=True)
class Candidate:
    """One sentence (a list item with its lead-in) or summary fact worth remembering."""

    text: str  # cleaned text, secrets replaced by [REDACTED]
    namespace: str
    confidence: float  # 0..1: P(lasting fact) from the scorer, SIGNAL_CONFIDENCE or FACTS_CONFIDENCE
    source_uuid: str | None
    offset: int = 0      # where the transcript record it comes from starts
    redacted: int = 0    # secrets replaced by [REDACTED] in `text`
    char_start: int = 0  # where the piece of the record it comes from starts in the record's text


@dataclass(frozen=True)
class Verdict:
    """The judgement of one unit (or facts-section line) of one text; `keep` is final (corrections applied)."""

    text: str  # what would be stored
    namespace: str
    confidence: float
    keep: bool
    source: int  # index of the text in the call
    unit: Unit | None  # None for a facts-section line
    kind: str = "assistant"  # "summary" for a compaction summary's units and lines
    redacted: int = 0
    why: str = ""  # kept by "score", "signal" (explicit signal), "section" (summary section) or "facts" (facts
    #                line); "corrected": dropped for a later correction


# --- explicit signals -------------------------------------------------------------------------------------------

_I = re.IGNORECASE
_MARKERS = [  # "Marker: ..." at the start of the sentence
    ("decisions", r"decisions?|decided|adr"),
    ("patterns", r"pattern|convention|best practice|rule|guideline"),
    ("learnings", r"learned|lessons?(?: learned)?|gotcha|til|insight|root cause"),
    ("context", r"important|note|nb|constraint|caveat|warning"),
    ("tech-debt", r"todo|fixme|tech(?:nical)? debt|hack|workaround"),
    ("security", r"security|vulnerability"),
    ("blockers", r"blocker|blocked"),
]
_MARKER_RX = [(ns, re.compile(rf"^(?:{words})\s*:\s*\S", _I)) for ns, words in _MARKERS]
_PHRASES = [(ns, re.compile(rx, _I)) for ns, rx in [
    ("decisions", r"\b(?:we|i|they|the team)\s+(?:have\s+|had\s+|finally\s+)?(?:decided|chose|opted|settled)\b"),
    ("decisions", r"\bdecided\s+(?:to|on|that|against)\b"),
    ("decisions", r"^(?:used|switched to|replaced|went with|chose|opted for|picked)\b[^.!?]{1,80}?"
                  r"\b(?:instead of|rather than)\b"),
    ("learnings", r"\b(?:learned|learnt)\s+(?:that|the hard way)\b|\b(?:discovered|realized|realised|found out)\s+that\b"),
    ("learnings", r"\b(?:turns out|turned out)\b|\bTIL\b|\bgotcha\b|\bthe root cause (?:is|was)\b"),
    ("blockers", r"^(?:fixed|resolved|solved)\s+(?:the|a|an)\s+[^.:;]{0,60}?\b(?:issue|bug|problem|error|crash|failure"
                 r"|regression|timeout|leak|deadlock|race)s?\b[^.:;]{0,60}:\s+\S"),
]]
_NOT_DECIDED = re.compile(r"\b(?:not|n't|yet to|undecided|if we|whether to|should we)\b[^.!?]{0,20}\bdecide", _I)
_CHATTER = ("f:narration", "f:let_me", "f:question", "f:offer", "f:hedge")


def signal_of(sentence: str, feats: dict[str, float]) -> str | None:
    """The namespace of an explicit signal in `sentence`, or None (never for narration, questions, offers, hedges)."""
    if any(feats.get(k) for k in _CHATTER):
        return None
    s = sentence.replace("\u2019", "'")
    for ns, rx in _MARKER_RX:
        if rx.match(s):
            return ns
    for ns, rx in _PHRASES:
        if rx.search(s) and not (ns == "decisions" and _NOT_DECIDED.search(s)):
            return ns
    return None


# --- the scorer, once per process --------------------------------------------------------------------------------

_SCORER: Scorer | None = None


def load_scorer() -> Scorer:
    """The shipped scorer, loaded on first use and kept for the process."""
    global _SCORER
    if _SCORER is None:
        _SCORER = Scorer.load()
    return _SCORER


# --- judging -----------------------------------------------------------------------------------------------------

_MASK = "\ue000REDACTED\ue001"  # a [REDACTED] already in the text: kept, not counted as ours


def _redact(text: str) -> str:
    """Secrets replaced by [REDACTED] before any markdown cleanup (emphasis stripping cannot split a secret)."""
    return redact(text.replace(REDACTED, _MASK))[0]


def _stored(text: str) -> tuple[str, int]:
    return text.replace(_MASK, REDACTED), text.count(REDACTED)


# A narration lead-in before a colon, inside the sentence: "To repeat the earlier point: We decided ..."
_NARRATED_LEAD = re.compile(r"(?i)^(?:(?:so|ok|okay|again|once more|to (?:recap|repeat|restate|reiterate|summari[sz]e|sum "
                            r"up)|in (?:other words|short|summary)|put (?:differently|another way)|as (?:i|we) "
                            r"(?:said|mentioned|noted)|recap)\b[^:.!?]{0,60}:)\s+(?=\S)")
_TITLE_START = re.compile(r"^([A-Z][\w ]{2,40}:)\s+(?=\S)")  # "Primary Request and Intent: The user ..."
# Bold markers the splitter leaves when the emphasis wraps a code span ("**`f` function**"); a glob's ** stays.
_BOLD_LEFT = re.compile(r"(?:(?<=^)|(?<=[\s(\[]))\*\*(?=[^\s*])|(?<=[^\s*/])\*\*(?=$|[\s.,;:!?)\]])")


def _memory_text(unit: Unit, kind: str) -> str:
    """The sentence, a list item prefixed by the last sentence of its lead-in ("Done. Changes:" -> "Changes"); no
    lead-in that is narration ("Let me check the files:") or, in a summary, a section title ("Key Technical
    Concepts:"), which also leaves the start of a summary sentence."""
    if unit.kind == "item" and unit.lead:
        sentences = split_sentences(unit.lead)
        lead = sentences[-1] if sentences else unit.lead
        f = features(Unit(lead, lead, "", "", "para", 0, 0, 0, 1, 0, 0))
        if f.get("f:narration") or f.get("f:let_me") or (kind == "summary" and section_title(lead)):
            lead = ""
        unit = replace(unit, lead=lead)
    text = _NARRATED_LEAD.sub("", unit.memory_text())
    if kind == "summary" and (m := _TITLE_START.match(text)) and section_title(m.group(1)):
        text = text[m.end():]
    return _BOLD_LEFT.sub("", text)


def _judge_units(units: list[Unit], scorer: Scorer, threshold: float, source: int, kind: str,
                 section: str = "") -> list[Verdict]:
    out = []
    for unit, f in zip(units, record_features(units)):
        p = scorer.probability(f)
        signal = signal_of(unit.text, f)
        why = "signal" if signal else ""
        if not signal and section in FACT_SECTIONS and not any(f.get(k) for k in _CHATTER):
            why = "section"
        conf = max(p, SIGNAL_CONFIDENCE) if why else p
        keep = conf >= threshold
        why = ("score" if p >= threshold else why) if keep else ""
        text, n = _stored(_memory_text(unit, kind) if keep else unit.text)
        out.append(Verdict(text, signal or namespace_of(f), round(conf, 6), keep and len(text) <= MAX_CHARS,
                           source, unit, kind, n, why))
    return out


def _fact_verdict(line: str, threshold: float, source: int) -> Verdict:
    text, n = _stored(line)
    unit = Unit(text, text, "", "", "para", 0, 0, 0, 1, 0, 0)
    f = features(unit)
    chatter = any(f.get(k) for k in ("f:narration", "f:let_me", "f:question", "f:offer"))
    ns = signal_of(text, f) or namespace_of(f)
    keep = not chatter and FACTS_CONFIDENCE >= threshold and len(text) <= MAX_CHARS
    return Verdict(text, ns, FACTS_CONFIDENCE, keep, source, None, "summary", n, "facts" if keep else "")


def _judge_text(text: str, kind: str, scorer: Scorer, threshold: float, source: int) -> list[Verdict]:
    text = _redact(text)
    if kind != "summary":
        return _judge_units(split_units(text), scorer, threshold, source, kind)
    facts = facts_section(text)
    if facts is not None:
        return [_fact_verdict(line, threshold, source) for line in facts]
    out: list[Verdict] = []
    for title, chunk in split_sections(text):
        units = split_units(chunk)
        if title in SKIP_SECTIONS:
            out += [Verdict(_stored(u.text)[0], "", 0.0, False, source, u, kind) for u in units]
        else:
            out += _judge_units(units, scorer, threshold, source, kind, title)
    return out


def judge(texts: Iterable[AssistantText | str], scorer: Scorer, threshold: float) -> list[Verdict]:
    """Every unit of every text with its verdict, in order; later corrections already applied to `keep`."""
    out: list[Verdict] = []
    for i, t in enumerate(texts):
        body, kind = (t, "assistant") if isinstance(t, str) else (t.text, t.kind)
        out += _judge_text(body, kind, scorer, threshold, i)
    kept = [i for i, v in enumerate(out) if v.keep]
    final = drop_corrected([out[i].text for i in kept], [True] * len(kept))
    for i, k in zip(kept, final):
        if not k:
            out[i] = replace(out[i], keep=False, why="corrected")
    return out


def extract_with(texts: Iterable[AssistantText | str], scorer: Scorer, threshold: float) -> list[Candidate]:
    """Candidates from `texts` judged by `scorer` at `threshold` (the benchmark passes its per-fold scorers)."""
    texts = list(texts)
    out = []
    for v in judge(texts, scorer, threshold):
        if v.keep:
            t = texts[v.source]
            uuid, offset, start = (None, 0, 0) if isinstance(t, str) else (t.uuid, t.offset, t.char_start)
            out.append(Candidate(v.text, v.namespace, v.confidence, uuid, offset, v.redacted, start))
    return out


def extract_candidates(texts: Iterable[AssistantText | str], *, min_confidence: float | None = None
                       ) -> list[Candidate]:
    """Candidates from assistant texts and compaction summaries, in order; no de-duplication (the store does that).

    `min_confidence`: the probability floor (None: the threshold shipped with the scorer's weights).
    """
    scorer = load_scorer()
    return extract_with(texts, scorer, scorer.threshold if min_confidence is None else min_confidence)
