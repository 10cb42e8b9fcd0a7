"""Rules beside the scorer: explicit signals that keep a sentence ("Decision:", "we decided to", "turns out"),
the fact inside an intention ("I need to fix the imports to use .ts instead of .js when ..."), and topic labels
that are not facts ("Span creation, attributes, error status").

All fixed rules written before measuring: the signals are the old classifier's strongest markers; the intention
and topic-label rules come from the issue's examples. `bench/capture/RESULTS.md` measures each.
"""
from __future__ import annotations

import re

from subcog_store.text.lazy_regex import LazyPattern

from .cjk import is_cjk_decision

__all__ = ["signal_of", "intent_fact", "is_topic_label", "CHATTER"]

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
_MARKER_RX = [(ns, LazyPattern(rf"^(?:{words})\s*:\s*\S", _I)) for ns, words in _MARKERS]
_PHRASES = [(ns, LazyPattern(rx, _I)) for ns, rx in [
    ("decisions", r"\b(?:we|i|they|the team)\s+(?:have\s+|had\s+|finally\s+)?(?:decided|chose|opted|settled)\b"),
    ("decisions", r"\bdecided\s+(?:to|on|that|against)\b"),
    ("decisions", r"^(?:used|switched to|replaced|went with|chose|opted for|picked)\b[^.!?]{1,80}?"
                  r"\b(?:instead of|rather than)\b"),
    ("learnings", r"\b(?:learned|learnt)\s+(?:that|the hard way)\b|\b(?:discovered|realized|realised|found out)\s+that\b"),
    ("learnings", r"\b(?:turns out|turned out)\b|\bTIL\b|\bgotcha\b|\bthe root cause (?:is|was)\b"),
    ("blockers", r"^(?:fixed|resolved|solved)\s+(?:the|a|an)\s+[^.:;]{0,60}?\b(?:issue|bug|problem|error|crash|failure"
                 r"|regression|timeout|leak|deadlock|race)s?\b[^.:;]{0,60}:\s+\S"),
]]
_NOT_DECIDED = LazyPattern(r"\b(?:not|n't|yet to|undecided|if we|whether to|should we)\b[^.!?]{0,20}\bdecide", _I)
CHATTER = ("f:narration", "f:let_me", "f:question", "f:offer", "f:hedge")


def signal_of(sentence: str, feats: dict[str, float]) -> str | None:
    """The namespace of an explicit signal in `sentence`, or None (never for narration, questions, offers, hedges)."""
    if any(feats.get(k) for k in CHATTER):
        return None
    s = sentence.replace("\u2019", "'")
    for ns, rx in _MARKER_RX:
        if rx.match(s):
            return ns
    for ns, rx in _PHRASES:
        if rx.search(s) and not (ns == "decisions" and _NOT_DECIDED.search(s)):
            return ns
    if is_cjk_decision(s):
        return "decisions"
    return None


# --- the fact inside an intention ------------------------------------------------------------------------------

_INTENT = LazyPattern(
    r"^(?:(?:now|ok(?:ay)?|so|first|next|then|also|alright|great|good|perfect|right)[,!.]?\s+)*"
    r"(?:(?:i|we) (?:need|have|want|should|must|will need|'ll need) to|let me|let's|i'll|we'll|i will|we will"
    r"|i'm going to|we're going to)\s+(?P<rest>\S.*)$", _I)
# What makes the rest a fact and not a plan step: a choice with its alternative, or a rule of use.
_FACT_CUE = LazyPattern(r"\b(?:instead of|rather than|when (?:using|running|calling|building)|unless|must|never|always"
                        r"|only (?:works|accepts|supports|when|if)|requires?)\b", _I)
_THING = LazyPattern(r"\.\w{1,5}\b|[\w-]+/[\w./-]+|\b[a-z]+[A-Z]\w*\b|\b\w+_\w+\b|--?\w[\w-]+|\w\(\)|\d")


def intent_fact(sentence: str) -> str | None:
    """The fact of a first-person intention, standing alone ("I need to fix the imports to use .ts extensions
    instead of .js when ..." -> "Fix the imports to use .ts extensions instead of .js when ..."), or None."""
    m = _INTENT.match(sentence.strip())
    if not m:
        return None
    rest = m.group("rest").rstrip(":").strip()
    if not (_FACT_CUE.search(rest) and _THING.search(rest)) or rest.endswith("?"):
        return None
    rest = rest[:1].upper() + rest[1:]
    return rest if rest.endswith((".", "!")) else rest + "."


# --- topic labels ------------------------------------------------------------------------------------------------

_LABEL_HEAD = LazyPattern(r"^\**[^:—–]{1,60}?\**\s*(?::|—|–| - )\s+")
_VERB = LazyPattern(r"\b(?:is|are|was|were|be|been|has|have|had|does|do|did|can|cannot|can't|will|won't|must|should"
                    r"|would|could|may|uses?|used|returns?|returned|runs?|reads?|writes?|calls?|stores?|holds?|keeps?"
                    r"|needs?|requires?|expects?|means|causes?|caused|fails?|failed|breaks?|works?|handles?|supports?"
                    r"|contains?|includes?|lives?|sits?|renders?|resolves?|falls? back|stays?|becomes?|gets?|sets?"
                    r"|makes?|takes?|gives?|sends?|shows?|lets?|allows?|blocks?|matches|match|counts?|creates?|deletes?"
                    r"|skips?|ignores?|loads?|points?|maps?|wraps?|parses?|checks?|only|never|always|not|no longer"
                    r"|rotates?|happens?|appl(?:y|ies)|occurs?|triggers?|fires?|persists?|expires?|refresh(?:es)?"
                    r"|retr(?:y|ies)|syncs?|fetch(?:es)?|waits?|receives?|exists?|remains?|changes?|sends?|lands?"
                    r"|\w+s (?:the|a|an|to|on|in|from)|\w+ed (?:by|to|from|in|on|with|as))\b", _I)
_VALUE = LazyPattern(r"\d|[=→]|->|[\w-]+/[\w./-]+|\w\(\)|\b[a-z]+[A-Z]\w*\b|\b\w+_\w+\b")


def is_topic_label(sentence: str) -> bool:
    """A noun phrase that names a topic without saying anything about it ("Span creation, attributes, error
    status, trace correlation"): no verb, no value, and no explanation after a "Label:" head of five words or
    more ("Lazy key rotation: folder keys rotate on the next upload after a revoke" says something)."""
    body = _LABEL_HEAD.sub("", sentence, count=1)
    explained = body != sentence and len(body.split()) >= 5
    return not explained and not _VERB.search(body) and not _VALUE.search(body)
