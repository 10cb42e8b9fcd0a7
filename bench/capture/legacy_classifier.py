"""(bench only) The rule classifier the capture hook used before the learned sentence scorer (kept as the benchmarks' baseline).

Rules, not a model: an explicit marker ("Decision:", "Gotcha:") gives high confidence, signal phrases matched on
word boundaries give a weight each, and narration ("Now let me run the tests."), hedges and questions lower it.
`legacy_candidates` is the old paragraph pipeline (`split_paragraphs`, `classify`, `strip_narration`, redaction), as
the hook ran it; bench/capture compares it with `subcog_store.extraction.extract`. The hook itself no longer uses this
module.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

from subcog_store.text.namespaces import NAMESPACES
from subcog_store.text.redact import redact

if TYPE_CHECKING:
    from subcog_store.extraction.extract import Candidate
    from subcog_store.extraction.transcript import AssistantText

__all__ = ["NAMESPACES", "classify", "is_narration", "legacy_candidates", "split_paragraphs", "split_sentences",
           "strip_narration"]


_I = re.IGNORECASE
MAX_CHARS = 8000  # only the start of a longer text is looked at

# "Marker: ..." at the start of a sentence -> (namespace, confidence). Section labels that often head mere
# summaries ("Tests:", "Config:") count for less than explicit ones ("Decision:", "Gotcha:").
_MARKER_TABLE = [
    ("decisions", 0.9, "decision|decisions|decided|adr"),
    ("patterns", 0.9, "pattern|convention|best practice|rule|guideline"),
    ("learnings", 0.9, "learned|lesson|lesson learned|lessons learned|gotcha|til|insight"),
    ("learnings", 0.75, "learning|finding|discovery"),
    ("context", 0.85, "important|note|nb|constraint|caveat|warning"),
    ("context", 0.65, "context|background|why"),
    ("tech-debt", 0.85, "todo|fixme|tech debt|technical debt|hack|workaround"),
    ("blockers", 0.85, "blocker|blocked|fixed|root cause|resolved"),
    ("blockers", 0.7, "fix|bug"),
    ("security", 0.85, "security|vulnerability|cve"),
    ("performance", 0.8, "performance|perf|benchmark"),
    ("apis", 0.65, "api|endpoint"),
    ("config", 0.65, "config|configuration|setting|settings"),
    ("testing", 0.6, "testing|tests"),
    ("progress", 0.8, "progress|milestone"),
    ("help", 0.65, "help|how to|howto|tip"),
    ("prompts", 0.8, "prompt|user preference|preference"),
]
_MARKERS = {w: (ns, conf) for ns, conf, words in _MARKER_TABLE for w in words.split("|")}
_MARKER_RE = re.compile(
    r"(?:^|(?<=[.!?])\s+)(" + "|".join(sorted(map(re.escape, _MARKERS), key=len, reverse=True)) + r")\s*:\s*\S", _I
)

# (namespace, weight, pattern); several distinct hits in one namespace add up a little.
_RULES: list[tuple[str, float, re.Pattern]] = [
    (ns, w, re.compile(rx, flags))
    for ns, w, rx, flags in [
        ("decisions", 0.8, r"\b(?:we|i|they|team)\s+(?:have\s+|had\s+|finally\s+)?(?:decided|chose|opted|settled)\b", _I),
        ("decisions", 0.8, r"\bdecided\s+(?:to|on|that|against)\b", _I),
        ("decisions", 0.7, r"\b(?:chose|chosen|opted for|settled on|went with|going with)\b", _I),
        ("decisions", 0.7, r"\b(?:we(?:'re| are)\s+going to use|we'll use|we will use|we'll go with)\b", _I),
        ("decisions", 0.6, r"\b(?:going to use|decision)\b", _I),
        ("decisions", 0.7, r"\b(?:used|use|using|switched to|replaced \S+ with|went with)\b[^.!?]{1,80}?\binstead of\b", _I),
        ("decisions", 0.45, r"\bi'll use\b", _I),
        ("learnings", 0.85, r"\b(?:learned|learnt)\s+(?:that|the hard way)\b", _I),
        ("learnings", 0.8, r"\b(?:discovered|realized|realised|found out)\s+that\b|\bTIL\b|\bgotcha\b", _I),
        ("learnings", 0.75, r"\b(?:turns out|turned out|lesson learned)\b", _I),
        ("learnings", 0.65, r"\b(?:learned|discovered|realized|realised)\b|\bthe root cause (?:was|is)\b", _I),
        ("blockers", 0.75,
         r"\b(?:fixed|resolved|solved)\b[^.!?]{0,60}?\b(?:issue|bug|error|problem|crash|failure|exception|regression"
         r"|timeout|leak|deadlock|race)s?\b", _I),
        ("blockers", 0.75,
         r"\b(?:issue|bug|error|problem|crash|failure)s?\b[^.!?]{0,40}?\b(?:is|was|has been|were|are)\s+(?:now\s+)?"
         r"(?:fixed|resolved)\b", _I),
        ("blockers", 0.6, r"\b(?:blocked (?:by|on)|blocker|blocking issue)\b", _I),
        ("patterns", 0.75, r"\b(?:best practices?|rule of thumb)\b", _I),
        ("patterns", 0.65, r"\b(?:conventions?|(?:should|must) (?:always|never))\b", _I),
        ("patterns", 0.55, r"\bpatterns?\b", _I),
        ("patterns", 0.5, r"\b(?:always|never)\b", _I),
        ("context", 0.6, r"\b(?:note that|keep in mind|be aware|constraints?)\b", _I),
        ("context", 0.55, r"\bimportant\b", _I),
        ("context", 0.4, r"\bbecause\b", _I),
        ("context", 0.4, r"\bmust\b", _I),
        ("tech-debt", 0.85, r"\btech(?:nical)? debt\b", _I),
        ("tech-debt", 0.7, r"\b(?:TODO|FIXME|XXX)\b", 0),
        ("tech-debt", 0.7, r"\b(?:temporary (?:fix|solution|hack)|refactor(?:ed)? (?:later|eventually|this later))\b", _I),
        ("tech-debt", 0.65, r"\b(?:workarounds?|hack(?:y|ish)?)\b", _I),
        ("security", 0.85, r"\bCVE-\d{4}-\d+\b|\b(?:sql|command|shell|code|ldap|header) injection\b", _I),
        ("security", 0.8, r"\b(?:path traversal|(?:token|secret|credential|key|password)s? (?:leak|leaked|leaks|exposed)"
                          r"|leak(?:s|ed|ing)? (?:the |an? |our )?(?:auth |api |access )?(?:token|secret|credential|key)s?)\b", _I),
        ("security", 0.75, r"\b(?:vulnerab(?:le|ility|ilities)|XSS|CSRF|SSRF|CVE|RCE)\b", _I),
        ("security", 0.55, r"\b(?:injection|security|sanitiz(?:e|ed|ation)|privilege escalation)\b", _I),
        ("performance", 0.7, r"\bp(?:50|90|95|99|999)\b", _I),
        ("performance", 0.55, r"\b(?:latency|throughput|bottleneck|memory usage|cpu usage)\b", _I),
        ("performance", 0.5, r"\b(?:faster|slower|performance|speed ?up)\b", _I),
        ("performance", 0.45, r"\bslow(?:ly|s|ed)?\b", _I),
        ("testing", 0.7, r"\bflaky\b", _I),
        ("testing", 0.55, r"\b(?:test suite|fixtures?)\b", _I),
        ("testing", 0.4, r"\b(?:coverage|(?:unit|integration|e2e|end-to-end|snapshot) tests?|mocks?|mocking)\b", _I),
        ("apis", 0.65, r"\b(?:GET|POST|PUT|PATCH|DELETE)\s+/\S*|\bstatus code\b|\brate[- ]limit", 0),
        ("apis", 0.55, r"\bendpoints?\b", _I),
        ("apis", 0.45, r"\bAPIs?\b", _I),
        ("apis", 0.3, r"\b(?:returns?|requests?|responses?)\b", _I),
        ("config", 0.6, r"\b(?:env(?:ironment)? var(?:iable)?s?|config(?:uration)? (?:files?|options?|settings?|keys?))\b", _I),
        ("config", 0.4, r"\b(?:settings?|flags?)\b|(?<!\w)--[a-z][\w-]+", _I),
        ("config", 0.4, r"\b(?:defaults? to|set to)\b", _I),
        ("config", 0.4, r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|(?<![\w-])[\w-]{1,80}\.(?:toml|ya?ml|ini|cfg|env)\b", 0),
        ("progress", 0.45, r"\b(?:milestone|shipped|released|deployed)\b", _I),
        ("progress", 0.4, r"\b(?:has|have) been (?:fully )?(?:implemented|completed|ported|migrated|merged)\b", _I),
        ("help", 0.6, r"^to \w+[^,.]{0,80}, (?:run|use|call|set)\b", _I),
    ]
]
_ORDER = {ns: i for i, ns in enumerate(("decisions", "learnings", "blockers", "patterns", "security", "tech-debt"))}
_NOT_DECIDED = re.compile(r"\b(?:not|n't|yet to|undecided|if we|whether to|should we)\b[^.!?]{0,20}\bdecide", _I)
_HEDGE = re.compile(r"\b(?:maybe|might|perhaps|probably|possibly|likely|i think|i guess|not sure|seems|could be)\b", _I)
_STRONG = re.compile(
    r"\b(?:decided|chose|we'll use|learned|learnt|discovered|realized|realised|turns out|TIL|gotcha"
    r"|fixed|resolved|convention|best practice)\b", _I
)
_NARRATION = re.compile(
    r"""^(?:(?:now|next|first|then|finally|also|so|ok|okay|alright)\b[,\s]*)*
    (?:let\ me|let's|lets\ |i'll|i\ will|i'm|i\ am|i\ need|i\ should|i\ can|i\ see|i've|i\ have|i\ now|i\ want
      |we\ need\ to|we\ should\ now|here's|here\ is|here\ are|looking\ at|checking|searching\ for|exploring
      |(?:all\ )?(?:the\ )?(?:\d+\ )?tests?\ (?:now\ )?(?:pass|passed|are\ passing|still\ pass)
      |(?:the\ )?(?:task|port|work|change|changes|fix|job)\ (?:is|are)\ (?:now\ )?(?:complete|done|finished)
      |(?:done|great|perfect|excellent|good|nice|awesome|sure|thanks|got\ it|yes|no|right)\s*(?:[.!,:;]|$)
      |recap\b|to\ summarize|in\ summary)""",
    _I | re.X,
)
_ANYWHERE_NARRATION = re.compile(r"\blet me\b", _I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'`(\[]?[A-Z0-9])")
_LEAD = re.compile(r"^[\s>*_#+-]*(?:\d+[.)]\s+)?")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (split after . ! ? before a capital or digit)."""
    return [s.strip() for s in _SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def is_narration(sentence: str) -> bool:
    """True for running commentary: "Now let me run the tests.", "Great!", "I'll update the settings next."."""
    s = sentence.strip().replace("\u2019", "'")
    if _MARKER_RE.match(s) or _STRONG.search(s):
        return False
    if _NARRATION.match(s) or _ANYWHERE_NARRATION.search(s):
        return True
    return len(s.split()) <= 3


def strip_narration(text: str) -> str:
    """The paragraph without its narration sentences ("" when it is all narration)."""
    return " ".join(s for s in split_sentences(text) if not is_narration(s))


def _score(body: str) -> dict[str, float]:
    hits: dict[str, list[float]] = {}
    for ns, weight, rx in _RULES:
        if rx.search(body):
            hits.setdefault(ns, []).append(weight)
    if "decisions" in hits and _NOT_DECIDED.search(body):
        del hits["decisions"]
    if "performance" in hits and re.search(r"\d\s?(?:ms|s|sec|seconds|µs|us|ns|x|%|[kmg]b|rps|qps|req/s)\b", body, _I):
        hits["performance"].append(0.7)
    return {ns: min(0.95, max(ws) + 0.1 * (len(ws) - 1)) for ns, ws in hits.items()}


def classify(text: str) -> tuple[str, float] | None:
    """(namespace, confidence 0..1) for a paragraph worth remembering, or None when nothing lasting is said.

    Only the first MAX_CHARS characters are looked at.
    """
    text = text[:MAX_CHARS].replace("**", "").replace("__", "").replace("\u2019", "'")
    text = _LEAD.sub("", " ".join(text.split()))
    if not text:
        return None
    sentences = split_sentences(text)
    content = [s for s in sentences if not is_narration(s)]
    statements = [s for s in content if not s.endswith("?")]
    body = " ".join(statements or content)
    if not body:
        return None
    verdict = _verdict(body)
    if verdict is None:
        return None
    ns, conf = verdict
    if not statements:  # only questions carry the signal
        conf *= 0.5
    if len(content) < len(sentences):
        conf *= 0.9
    if len(body.split()) < 5:
        conf *= 0.7
    return ns, round(min(conf, 1.0), 3)


def _verdict(body: str) -> tuple[str, float] | None:
    """A marker at the start decides; otherwise the best-scoring namespace, a later marker counting as a hit."""
    marker = _MARKER_RE.search(body)
    if marker and marker.start() == 0:
        return _MARKERS[marker.group(1).lower()]
    scores = _score(body)
    if _HEDGE.search(body):
        scores = {ns: c * 0.75 for ns, c in scores.items()}
    if marker:
        ns, conf = _MARKERS[marker.group(1).lower()]
        scores[ns] = max(scores.get(ns, 0.0), conf - 0.05)
    if not scores:
        return None
    ns = max(scores, key=lambda n: (round(scores[n], 3), -_ORDER.get(n, len(_ORDER))))
    return ns, scores[ns]


# --- the old paragraph pipeline ----------------------------------------------------------------------------------

_FENCE = re.compile(r"^(`{3,}|~{3,})")
_TABLE = re.compile(r"^\|.*|^:?-{3,}:?(?:\s*\|\s*:?-{3,}:?)+\s*\|?$")
_RULE_LINE = re.compile(r"^(?:([-*_])(?:\s*\1){2,}|={3,})$")
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
        if not s or _TABLE.match(s) or _RULE_LINE.match(s):
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


def legacy_candidates(texts: Iterable["AssistantText | str"], *, min_chars: int = 40, min_confidence: float = 0.5,
                      max_chars: int = 4000) -> list["Candidate"]:
    """The old hook's candidates: each paragraph classified as a whole, narration sentences then dropped from the
    stored text, secrets replaced by `[REDACTED]`; paragraphs shorter than `min_chars`, longer than `max_chars` or
    below `min_confidence` skipped."""
    from subcog_store.extraction.extract import Candidate

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
