"""Turn what a session said into memory candidates: the sentences a developer would want to find again next week.

Each text is redacted and split into sentence units (`sentences.split_units`: a sentence with its paragraph, heading
and list lead-in). By source:
- assistant text: each unit judged by the learned scorer (`scorer.Scorer`, weights loaded once per process); kept
  when P(lasting fact) reaches the threshold, or when it carries an explicit signal (`signals.signal_of`), or when
  it is the fact inside an intention (`signals.intent_fact`, stored without the "I need to"), or when it is a list
  item whose siblings under the same lead-in were kept (SIBLING_SHARE of them, and its own P at SIBLING_FLOOR); the
  kept sentences of one paragraph, and the kept items of one list under its lead-in (of the assistant's text or a
  summary), are one candidate (`_one_per_point`);
- what the user typed: the choices, rules and preferences it states (`user_words.user_fact`), rewritten to stand
  alone; a preference about how the developer works goes to the user scope; else a unit the learned judge of the
  user's words (`load_user_scorer`) calls a lasting fact, as typed;
- a compaction summary: the lines of its lasting-facts section (`summary.facts_section`) when it has one, else
  its sections read by kind (`summary.split_sections`): facts from errors-and-fixes, problem solving, decisions;
  no topic labels, file change logs, pending tasks or current work.
Status ("currently ...", "not yet committed", "all tests pass", "PR #5 is merged") is never stored
(`status.status_rule`); a status sentence the extractor would otherwise have kept is, when asked for
(`with_status`), a candidate marked `status` (the rule's name), which the capture logs as a decision and does not
store: nothing judged a fact is dropped silently. Nothing is dropped for a later correction: both statements are
candidates, in order, and the store links the older as outdated when the newer changes the same fact.

`min_confidence` is a probability floor: None means the threshold shipped with the weights (chosen on the labelled
sessions, see bench/capture/RESULTS.md); an explicit signal counts as SIGNAL_CONFIDENCE, a facts-section line as
FACTS_CONFIDENCE, a user's choice or preference as USER_CONFIDENCE, the fact of an intention as INTENT_CONFIDENCE.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from subcog_store.extraction.scorer import Scorer, features, namespace_of, record_features
from subcog_store.extraction.sentences import Unit, split_sentences, split_units
from subcog_store.extraction.signals import CHATTER, intent_fact, is_topic_label, signal_of
from subcog_store.extraction.status import status_rule
from subcog_store.extraction.summary import FACT_SECTIONS, SKIP_SECTIONS, facts_section, section_title, split_sections
from subcog_store.extraction.transcript import AssistantText
from subcog_store.extraction.user_words import PROJECT, UserFact, document_title, user_fact
from subcog_store.text.lazy_regex import LazyPattern
from subcog_store.text.redact import REDACTED, redact

__all__ = ["Candidate", "Verdict", "extract_candidates", "extract_with", "judge", "load_scorer", "signal_of",
           "FACTS_CONFIDENCE", "MAX_CHARS", "SIGNAL_CONFIDENCE", "USER_CONFIDENCE", "INTENT_CONFIDENCE"]

MAX_CHARS = 4000  # a longer sentence is a dump, not a memory
SIGNAL_CONFIDENCE = 0.8  # an explicit signal (12 of the 15 labelled sentences with one are lasting facts)
FACTS_CONFIDENCE = 0.9  # a line of the lasting-facts section the summarizer was asked to write
USER_CONFIDENCE = 0.8  # a choice or preference the user states (as sure as an explicit signal)
INTENT_CONFIDENCE = 0.6  # the fact inside an intention: kept at the shipped threshold, below a signal
SIBLING_SHARE = 2 / 3  # a list item is kept when this share of its siblings (3 or more items) were kept ...
SIBLING_FLOOR = 0.3  # ... and its own P(lasting fact) reaches this (chosen on the training sessions: RESULTS.md)
LIST_CHARS = 1000  # a list's items in one candidate up to the 256 word pieces the embedder reads: 3.93 characters a
#                   piece in the sentences kept from the training sessions (bench/capture/CHOICES.md)


@dataclass(frozen=True)
class Candidate:
    """One sentence (a list item with its lead-in), summary fact or user statement worth remembering."""

    text: str  # cleaned text, secrets replaced by [REDACTED]
    namespace: str
    confidence: float  # 0..1: P(lasting fact) from the scorer, or the confidence of the rule that kept it
    source_uuid: str | None
    offset: int = 0      # where the transcript record it comes from starts
    redacted: int = 0    # secrets replaced by [REDACTED] in `text`
    char_start: int = 0  # where its paragraph or item (else its piece) starts in the record's text
    scope: str = PROJECT  # "user": a preference that follows the developer into every project
    from_summary: bool = False  # a compaction summary's line: it restates the session before it
    status: str = ""  # the status rule that vetoed it: logged by the capture, never stored ("" for a memory)


@dataclass(frozen=True)
class Verdict:
    """The judgement of one unit (or facts-section line) of one text; `keep` is final."""

    text: str  # what would be stored
    namespace: str
    confidence: float
    keep: bool
    source: int  # index of the text in the call
    unit: Unit | None  # None for a facts-section line
    kind: str = "assistant"  # "summary" / "user" for a compaction summary's / the user's units
    redacted: int = 0
    why: str = ""  # kept by "score", "signal", "section" (a summary's concepts), "intent", "sibling", "user" or
    #                "facts"; not kept: "status", "topic", "skip" (a summary section that holds no lasting facts),
    #                "" (the scorer said no)
    scope: str = PROJECT
    start: int = 0  # where its paragraph or item starts in the text (0 when the text could not say exactly)
    status: str = ""  # not kept as status although the extractor judged it a fact: the status rule's name


# --- the scorer, once per process --------------------------------------------------------------------------------

_SCORER: Scorer | None = None
_USER_SCORER: Scorer | None = None
USER_WEIGHTS_PATH = Path(__file__).with_name("user_scorer_weights.json")


def load_scorer() -> Scorer:
    """The shipped scorer, loaded on first use and kept for the process."""
    global _SCORER
    if _SCORER is None:
        _SCORER = Scorer.load()
    return _SCORER


def load_user_scorer() -> Scorer:
    """The learned judge of the user's units (the scorer's features, trained on the training sessions' labelled user
    units, its threshold chosen out of fold: bench/capture/train_user_words.py learn), loaded once per process."""
    global _USER_SCORER
    if _USER_SCORER is None:
        _USER_SCORER = Scorer.load(USER_WEIGHTS_PATH)
    return _USER_SCORER


# --- judging -----------------------------------------------------------------------------------------------------

_MASK = "\ue000REDACTED\ue001"  # a [REDACTED] already in the text: kept, not counted as ours


def _redact(text: str) -> str:
    """Secrets replaced by [REDACTED] before any markdown cleanup (emphasis stripping cannot split a secret)."""
    return redact(text.replace(REDACTED, _MASK))[0]


def _stored(text: str) -> tuple[str, int]:
    return text.replace(_MASK, REDACTED), text.count(REDACTED)


# A narration lead-in before a colon, inside the sentence: "To repeat the earlier point: We decided ..."
_NARRATED_LEAD = LazyPattern(r"(?i)^(?:(?:so|ok|okay|again|once more|to (?:recap|repeat|restate|reiterate|summari[sz]e"
                             r"|sum up)|in (?:other words|short|summary)|put (?:differently|another way)|as (?:i|we) "
                             r"(?:said|mentioned|noted)|recap)\b[^:.!?]{0,60}:)\s+(?=\S)")
_TITLE_START = LazyPattern(r"^([A-Z][\w ]{2,40}:)\s+(?=\S)")  # "Primary Request and Intent: The user ..."
# Bold markers the splitter leaves when the emphasis wraps a code span ("**`f` function**"); a glob's ** stays.
_BOLD_LEFT = LazyPattern(r"(?:(?<=^)|(?<=[\s(\[]))\*\*(?=[^\s*])|(?<=[^\s*/])\*\*(?=$|[\s.,;:!?)\]])")


def _memory_text(unit: Unit, kind: str) -> str:
    """The sentence, a list item prefixed by the last sentence of its lead-in ("Done. Changes:" -> "Changes"); no
    lead-in that is narration ("Let me check the files:") or, in a summary, a section title ("Key Technical
    Concepts:"), which also leaves the start of a summary sentence."""
    if unit.kind == "item" and unit.lead:
        unit = replace(unit, lead=_item_lead(unit, kind))
    text = _NARRATED_LEAD.sub("", unit.memory_text())
    if kind == "summary" and (m := _TITLE_START.match(text)) and section_title(m.group(1)):
        text = text[m.end():]
    return _BOLD_LEFT.sub("", text)


def _item_lead(unit: Unit, kind: str) -> str:
    """The lead-in a list item is stored with: the last sentence of its lead-in line, "" when that is narration
    ("Let me check the files:") or, in a summary, a section title."""
    return _stored_lead(unit.lead, kind)


@lru_cache(maxsize=256)
def _stored_lead(lead_line: str, kind: str) -> str:
    sentences = split_sentences(lead_line)
    lead = sentences[-1] if sentences else lead_line
    f = features(Unit(lead, lead, "", "", "para", 0, 0, 0, 1, 0, 0))
    lead = _BOLD_LEFT.sub("", lead)  # as the item's stored text has it ("**`file.ts`** (READ)"), so its list groups
    return "" if f.get("f:narration") or f.get("f:let_me") or (kind == "summary" and section_title(lead)) else lead


def _judge_units(units: list[Unit], scorer: Scorer, threshold: float, source: int, kind: str,
                 section: str = "") -> list[Verdict]:
    """The scorer, the explicit signals, the fact of an intention, then the list items whose siblings were kept;
    in a summary's concepts section, every item that says something (`section`)."""
    out, probs, feats = [], [], record_features(units)
    for unit, f in zip(units, feats):
        p = scorer.probability(f)
        probs.append(p)
        chatter = any(f.get(k) for k in CHATTER)
        signal = signal_of(unit.text, f)
        text, why, conf, ns, status = unit.text, "", p, signal or namespace_of(f), ""
        if rule := status_rule(unit.text, unit.lead if unit.kind == "item" else ""):
            why = "status"
            if p >= threshold or signal and SIGNAL_CONFIDENCE >= threshold:   # judged a fact, vetoed as status
                status, conf = rule, max(p, SIGNAL_CONFIDENCE if signal else p)
        elif kind == "summary" and is_topic_label(unit.text):
            why = "topic"
        elif signal and max(p, SIGNAL_CONFIDENCE) >= threshold:
            why, conf = "score" if p >= threshold else "signal", max(p, SIGNAL_CONFIDENCE)
        elif p >= threshold:
            why = "score"
        elif section in FACT_SECTIONS and not chatter and SIGNAL_CONFIDENCE >= threshold:
            why, conf = "section", SIGNAL_CONFIDENCE
        elif chatter and (fact := intent_fact(unit.text)) and INTENT_CONFIDENCE >= threshold:
            text, why, conf = fact, "intent", INTENT_CONFIDENCE
            ns = namespace_of(features(replace(unit, text=fact)))
        keep = why in ("score", "signal", "section", "intent")
        stored, n = _stored(_memory_text(unit, kind) if keep and why != "intent" else text)
        out.append(Verdict(stored, ns, round(conf, 6), keep and len(stored) <= MAX_CHARS, source, unit, kind, n, why,
                           status=status if len(stored) <= MAX_CHARS else ""))
    return _keep_siblings(out, probs, feats, threshold)


def _keep_siblings(verdicts: list[Verdict], probs: list[float], feats: list[dict], threshold: float
                   ) -> list[Verdict]:
    """A list item is judged with its siblings (the items under the same lead-in at the same depth): when most
    of them state lasting facts, so does it, unless it is chatter, status or far below the threshold."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, v in enumerate(verdicts):
        u = v.unit
        if u is not None and u.kind == "item" and u.lead:
            groups[(u.lead, u.depth, u.heading)].append(i)
    for members in groups.values():
        if len(members) < 3 or sum(verdicts[i].keep for i in members) < SIBLING_SHARE * len(members):
            continue
        for i in members:
            v = verdicts[i]
            if v.keep or v.why in ("status", "topic") or any(feats[i].get(k) for k in CHATTER) \
                    or probs[i] < SIBLING_FLOOR:
                continue
            text, n = _stored(_memory_text(v.unit, v.kind))
            verdicts[i] = replace(v, text=text, redacted=n, keep=len(text) <= MAX_CHARS, why="sibling",
                                  confidence=round(max(probs[i], threshold), 6))
    return verdicts


def _user_verdicts(units: list[Unit], threshold: float, source: int, title: str = "") -> list[Verdict]:
    """The rules' facts (`user_fact`, rewritten to stand alone), else the learned judge's (the sentence as typed)."""
    out, judge = [], load_user_scorer()
    for unit, f in zip(units, record_features(units)):
        fact = user_fact(unit, title)
        rule = status_rule(unit.text)
        if fact is None and (p := judge.probability(f)) >= max(judge.threshold, threshold):
            fact, confidence = UserFact(unit.text, signal_of(unit.text, f) or namespace_of(f), PROJECT), p
        else:
            confidence = USER_CONFIDENCE
        if fact is None or rule:
            status = (rule or "") if fact is not None and confidence >= threshold else ""   # a fact, vetoed
            text, n = _stored(unit.text)
            out.append(Verdict(text, fact.namespace if status else "", confidence if status else 0.0, False,
                               source, unit, "user", n, "status" if status else "", status=status))
            continue
        text, n = _stored(fact.text)
        keep = confidence >= threshold and len(text) <= MAX_CHARS
        out.append(Verdict(text, fact.namespace, round(confidence, 6), keep, source, unit, "user", n, "user",
                           fact.scope))
    return out


def _fact_verdict(line: str, threshold: float, source: int) -> Verdict:
    text, n = _stored(line)
    unit = Unit(text, text, "", "", "para", 0, 0, 0, 1, 0, 0)
    f = features(unit)
    chatter = any(f.get(k) for k in ("f:narration", "f:let_me", "f:question", "f:offer"))
    ns = signal_of(text, f) or namespace_of(f)
    held = not chatter and FACTS_CONFIDENCE >= threshold and len(text) <= MAX_CHARS
    rule = status_rule(text) if held else None
    return Verdict(text, ns, FACTS_CONFIDENCE, held and not rule, source, None, "summary", n,
                   "status" if rule else "facts" if held else "", status=rule or "")


def _judge_text(text: str, kind: str, scorer: Scorer, threshold: float, source: int) -> list[Verdict]:
    """The verdicts of one text, each with where its block starts in it (when redaction left the text as it was,
    so positions are the text's own: a long record's capture may resume at a block)."""
    masked = _redact(text)
    exact = masked == text and "\r" not in text
    return [replace(v, start=v.unit.start) if exact and v.unit is not None else v
            for v in _verdicts(masked, kind, scorer, threshold, source)]


def _verdicts(text: str, kind: str, scorer: Scorer, threshold: float, source: int) -> list[Verdict]:
    if kind == "user":
        return _user_verdicts(split_units(text, lenient=True), threshold, source, document_title(text))
    if kind != "summary":
        return _judge_units(split_units(text), scorer, threshold, source, kind)
    facts = facts_section(text)
    if facts is not None:
        return [_fact_verdict(line, threshold, source) for line in facts]
    out: list[Verdict] = []
    for title, chunk in split_sections(text):
        units = split_units(chunk)
        if title in SKIP_SECTIONS:
            out += [Verdict(_stored(u.text)[0], "", 0.0, False, source, u, kind, why="skip") for u in units]
        else:
            out += _judge_units(units, scorer, threshold, source, kind, title)
    return out


def judge(texts: Iterable[AssistantText | str], scorer: Scorer, threshold: float) -> list[Verdict]:
    """Every unit of every text with its verdict, in order."""
    out: list[Verdict] = []
    for i, t in enumerate(texts):
        body, kind = (t, "assistant") if isinstance(t, str) else (t.text, t.kind)
        out += _judge_text(body, kind, scorer, threshold, i)
    return out


def extract_with(texts: Iterable[AssistantText | str], scorer: Scorer, threshold: float, with_status: bool = False
                 ) -> list[Candidate]:
    """Candidates from `texts` judged by `scorer` at `threshold` (the benchmark passes its per-fold scorers); the
    kept sentences of one paragraph, and the kept items of one list, are one candidate (`_one_per_point`);
    `with_status`: the status sentences judged facts too, in order, marked `status` (for the decision log)."""
    texts = list(texts)
    verdicts = judge(texts, scorer, threshold)
    order = {id(v): i for i, v in enumerate(verdicts)}
    points = [(order[id(g[0])], g, "") for g in _one_per_point([v for v in verdicts if v.keep])]
    points += [(order[id(v)], [v], v.status) for v in verdicts if v.status and with_status]   # logged, not stored
    out = []
    for _, group, status in sorted(points, key=lambda p: p[0]):
        v = max(group, key=lambda g: g.confidence)
        t = texts[v.source]
        uuid, offset, start = (None, 0, 0) if isinstance(t, str) else (t.uuid, t.offset, t.char_start)
        out.append(Candidate(_group_text(group), v.namespace, v.confidence, uuid, offset,
                             sum(g.redacted for g in group), start + group[0].start, v.scope,
                             any(g.kind == "summary" for g in group), status))
    return out


def _one_per_point(kept: list[Verdict]) -> list[list[Verdict]]:
    """Kept verdicts in order, grouped by the point they make: the sentences of one paragraph of the assistant's
    text or a summary (its sentences told apart are restatements of it, "The repo is large ..." / "Because it's a
    direct relay, ...", or lean on each other, "This is why ..."), and the items of one list under the lead-in they
    share (the lead-in states the point, the items its parts: "This is wrong, in two ways:" then eight items, stored
    eight times with the lead-in, made one finding eight memories). The user's words, facts-section lines, the fact
    of an intention and items without a lead-in (the lead was narration or a section title) stay one a candidate.
    A paragraph's group stops short of MAX_CHARS, a list's short of LIST_CHARS."""
    groups: list[list[Verdict]] = []
    for v in kept:
        group = groups[-1] if groups else []
        last = group[-1] if group else None
        size = sum(len(g.text) + 1 for g in group) + len(v.text)
        if last is not None and _paragraph(v) and _paragraph(last) and (last.source, last.unit.block) == \
                (v.source, v.unit.block) and size <= MAX_CHARS:
            group.append(v)
        elif last is not None and _list_key(v) is not None and _list_key(v) == _list_key(last) and \
                len(_group_text(group + [v])) <= LIST_CHARS:
            group.append(v)
        else:
            groups.append([v])
    return groups


def _paragraph(v: Verdict) -> bool:
    return v.unit is not None and v.unit.kind == "para" and v.kind in ("assistant", "summary") and v.why != "intent"


def _lead_prefix(v: Verdict) -> str:
    """The lead-in a list item's stored text starts with ("Two problems in the zsh integration: "), or ""."""
    u = v.unit
    if u is None or u.kind != "item" or not u.lead:
        return ""
    lead = _item_lead(u, v.kind).rstrip(" :.")
    prefix = f"{lead}: "
    return prefix if lead and lead not in u.text and v.text.startswith(prefix) else ""


def _list_key(v: Verdict) -> tuple | None:
    """The list an item belongs to (its text, lead-in, depth and heading), for an item of the assistant's text or
    a summary stored with its lead-in; None for anything else."""
    if v.kind not in ("assistant", "summary") or v.why == "intent" or not _lead_prefix(v):
        return None
    u = v.unit
    return v.source, u.lead, u.depth, u.heading, _lead_prefix(v)


def _group_text(group: list[Verdict]) -> str:
    """One candidate's text: a paragraph's sentences joined; a list as its lead-in, then one item a line
    ("Two problems in the zsh integration:\n- A\n- B"); a group of one as it was."""
    if len(group) == 1 or _list_key(group[0]) is None:
        return " ".join(g.text for g in group)
    lead = _lead_prefix(group[0])
    return lead.rstrip() + "".join(f"\n- {g.text[len(lead):]}" for g in group)


def extract_candidates(texts: Iterable[AssistantText | str], *, min_confidence: float | None = None,
                       with_status: bool = False) -> list[Candidate]:
    """Candidates from assistant texts, what the user typed and compaction summaries, in order; no
    de-duplication (the store does that).

    `min_confidence`: the probability floor (None: the threshold shipped with the scorer's weights);
    `with_status`: see `extract_with`.
    """
    scorer = load_scorer()
    return extract_with(texts, scorer, scorer.threshold if min_confidence is None else min_confidence, with_status)
