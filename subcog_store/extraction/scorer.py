"""A learned scorer for sentence units: the probability that a sentence states a lasting fact, and its namespace.

Cheap lexical features only (no embedding, no numpy at run time): diagnostic patterns (a code identifier, file or
value with a claim), modal/causal/negation words, narration, status and question markers, list position, length, the
heading or list lead-in, the other sentences of the block, optionally a vocabulary of words and word pairs. These
sparse features feed a logistic model for "lasting fact", trained by `bench/capture/train_scorer.py` on
hand-labelled real sessions (weights in `scorer_weights.json`); the namespace comes from cue words (`namespace_of`).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from subcog_store.text.lazy_regex import LazyPattern

from .cjk import cjk_features, cjk_namespace_cues, is_cjk, spaced
from .sentences import Unit, cjk_chars, split_units

__all__ = ["Score", "Scorer", "features", "record_features", "namespace_of", "WEIGHTS_PATH"]

WEIGHTS_PATH = Path(__file__).with_name("scorer_weights.json")

_I = re.IGNORECASE
_TOKEN = LazyPattern(r"[A-Za-z][A-Za-z'_]*[A-Za-z]|\d+(?:\.\d+)?")
_CAMEL = LazyPattern(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b")
_SNAKE = LazyPattern(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")
_DOTTED = LazyPattern(r"\b[A-Za-z_][\w]*\.[A-Za-z_][\w]*(?:\.[\w]+)*\b")
_CALL = LazyPattern(r"\b[A-Za-z_][\w.]*\(\)")
_PATH = LazyPattern(r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:go|py|ts|tsx|js|jsx|rs|md|mdx|json|jsonl|ya?ml|toml|zsh|sh|ps1"
                    r"|lua|nu|fish|sql|env|ini|css|html)\b")
_ALLCAPS = LazyPattern(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
_NUMBER = LazyPattern(r"\b\d+(?:\.\d+)?\b")
_UNIT_NUM = LazyPattern(r"\d\s?(?:ms|s|µs|us|ns|KB|MB|GB|kB|%|x|×|req/s|bytes?|B|cells?|min|minutes?|seconds?|hours?"
                        r"|days?)\b", _I)
_LINE_REF = LazyPattern(r"\w:\d+")
_ACRONYM = LazyPattern(r"\b(?!I\b|OK\b)[A-Z]{2,}[a-z]*\d*\b")  # SQLite, CORS, JWT, TABLE
_PROPER = LazyPattern(r"(?<=[a-z,] )[A-Z][a-z]+\b")  # a capitalized name inside the sentence (Elixir, Playwright)
_DIR = LazyPattern(r"\b[\w.-]+/(?=[\s),.;:]|$)")  # assets/

_RX = {name: LazyPattern(rx, flags) for name, rx, flags in [
    ("narr_start", r"^(?:(?:now|next|first|then|ok(?:ay)?|so|also|alright|good|great|perfect|excellent|right)\b"
                   r"[,.!—-]*\s*)*(?:let me|let's|i'll|i will|i'm going|i am going|i need to|i should|i want to|i can"
                   r"|i'd|going to)\b", _I),
    ("let_me", r"\blet me\b|\blet's\b", _I),
    ("first_person", r"\b(?:I|I'm|I've|I'd|I'll|me|my|we|we're|we'll|our|us)\b", 0),
    ("you", r"\b(?:you|your|you're|you'll)\b", _I),
    ("offer", r"\b(?:want me to|would you like|should i|shall i|say the word|do you want|let me know|happy to)\b", _I),
    ("status", r"\b(?:tests? (?:pass|passed|green)|all (?:\d+ )?(?:tests )?pass|all green|green|lint(?:s)? clean"
               r"|clean|committed|pushed|"
               r"pr (?:is up|created)|done|complete[d]?|succeeded|successfully|works now|is working|passes)\b", _I),
    ("step", r"^(?:step|task|phase|plan|t)\s*\d+(?:\.\d+)?\b", _I),
    ("hash", r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,12}\b", 0),
    ("url", r"https?://", 0),
    ("past_action", r"^(?:added|updated|removed|created|fixed|changed|moved|replaced|ran|verified|confirmed|committed"
                    r"|pushed|"
                    r"rebuilt|reverted|implemented|wrote|deleted|renamed|installed|started|killed|restarted|extended|"
                    r"refactored|merged|amended|cleaned|dropped|kept|set|enabled|disabled)\b", _I),
    ("imperative", r"^(?:add|update|remove|check|run|fix|use|make|create|keep|drop|move|try|restart|wait|open|review|"
                   r"rebuild|investigate|consider|enable|disable|monitor|implement|verify|test)\b", _I),
    ("neg", r"\b(?:doesn't|does not|don't|do not|can't|cannot|can not|isn't|is not|aren't|are not|won't|wasn't|weren't|"
            r"never|no longer|not|no|nothing|none|without)\b", _I),
    ("req", r"\b(?:requires?|required|expects?|expected|must|needs? to|only|always|defaults? to|default|returns?|"
            r"supports?|is set|configured|reads?|writes?|calls?|uses?|runs?|stores?|holds?|accepts?|rejects?)\b", _I),
    ("causal", r"\b(?:because|since|so that|which means|means|causes?|caused|due to|therefore|that's why|hence|"
               r"otherwise|as a result|so)\b", _I),
    ("diag", r"\b(?:the (?:real )?(?:issue|problem|bug|cause|root cause|culprit|fix|reason) (?:is|was)|root cause|"
             r"known (?:\w+ ){0,3}(?:bug|issue|gotcha|limitation|quirk)|gotcha|turns out|turned out|actually"
             r"|it's because|the catch)\b", _I),
    ("hedge", r"\b(?:might|maybe|probably|likely|possibly|perhaps|could be|may|i think|i suspect|seems?|appears? to|"
              r"suggests?|presumably|unclear|not sure|guess)\b", _I),
    ("modal", r"\b(?:should|would|could)\b", _I),
    ("is_are", r"\b(?:is|are|isn't|aren't)\b", _I),
    ("was_were", r"\b(?:was|were|wasn't|weren't|had)\b", _I),
    ("marker", r"^[A-Z][\w /()-]{1,40}:\s", 0),
    ("mk_fix", r"^(?:the )?fix(?: direction)?:", _I),
    ("mk_root", r"^(?:root cause|cause|why)\b", _I),
    ("mk_risk", r"^(?:risk|impact|issue|problem|caveat|limitation|warning|note)\b", _I),
    ("mk_status", r"^(?:status|result|verdict|verified|verification|current state|summary)\b", _I),
    ("mk_reco", r"^(?:recommendation|recommended|action|next|option|proposal|proposed|todo)\b", _I),
    ("check", r"[✅✓✔]", 0),
    ("warn", r"[⚠🔴🟠🟡❌]", 0),
    ("arrow", r"→|->|=>", 0),
    ("quote", r"[\"“”]", 0),
    ("digit_version", r"\bv?\d+\.\d+(?:\.\d+)?\b", 0),
    ("assign", r"\b[\w.]+\s?(?:=|:)\s?[\w\"'#./-]+", 0),
    ("time_now", r"\b(?:now|currently|today|right now|at the moment|still)\b", _I),
    ("summary_word", r"\b(?:summary|here's|here is|overview|recap)\b", _I),
    ("present_verb", r"\b(?:is|are|has|have|does|doesn't|don't|can't|cannot|won't|returns|uses|runs|calls|reads|writes|"
                     r"stores|requires|expects|needs|means|works|handles|supports|contains|includes|lives|sits|"
                     r"resolves|renders|falls? back|stays|becomes|only)\b", _I),
    ("starts_det", r"^(?:the|this|that|these|those|each|every|all|no|both|only|its?|there(?:'s| is| are))\b", _I),
    ("past_first", r"\b(?:I|we)\s+(?:\w+\s+)?(?:found|saw|ran|added|checked|tried|made|fixed|noticed|verified"
                   r"|confirmed|"
                   r"changed|updated|created|removed|used|looked|read|got)\b", 0),
]}
_STARTS_IDENT = LazyPattern(r"^(?:[A-Za-z_][\w.]*\(\)|[a-z]+[A-Z]\w*|[A-Za-z_]\w*\.[A-Za-z_][\w.]*|[\w.-]+/[\w./-]+|"
                            r"[\w-]+\.(?:go|py|ts|tsx|js|rs|md|json|ya?ml|toml|zsh|ps1|lua|sh)\b"
                            r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+)")
# Namespace cues ("n:" features; namespace_of reads them, the logistic model may too).
_NS_RX = {name: LazyPattern(rx, _I) for name, rx in [
    ("security", r"\b(?:secur\w*|vulnerab\w*|cve-\d+|attack\w*|exploit\w*|malware|auth\w*|credential\w*|password\w*|"
                 r"encrypt\w*|decrypt\w*|crypto\w*|private key|public key|pubkey|token|secret\w*|privacy|"
                 r"firewall|injection|sanitiz\w*|trust(?:ed)?|untrusted|zero-knowledge|permission\w*|admin\w*|"
                 r"leak\w*|rce|xss|csrf|fido2|bitlocker|ntlm|tls|ssh|signature\w*)\b"),
    ("config", r"\b(?:config\w*|settings?|env(?:ironment)? var\w*|\.env\b|port \d+|:\d{2,5}\b|localhost|host|"
               r"default(?:s)? to|enabled?|disabled?|flag|option|timeout|ttl|cache size|buffer|level \d|"
               r"[A-Z]+_[A-Z_]+|ya?ml|toml|json|ini|cron\w*|dns|dhcp|ip address)\b"),
    ("testing", r"\b(?:tests?|testing|e2e|playwright|spec|fixture\w*|mock\w*|assert\w*|flaky|ci|coverage|"
                r"benchmark\w*|regression test\w*|test suite|page object)\b"),
    ("performance", r"\b(?:perf\w*|latency|faster|slower|slow\w*|speed\w*|throughput|alloc\w*|memory|cpu|"
                    r"o\(n\w*\)|quadratic|overhead|cost\w*|bytes?|[kmg]b|ms|µs|us/op|ns/op|benchstat)\b"),
    ("tech_debt", r"\b(?:todo(?=:)|todo comment|fixme(?=:)|tech(?:nical)? debt|dead code|unused|never called"
                  r"|workaround|hack\w*|legacy|"
                  r"deferred|follow-up|later|pre-existing|redundant|stale|cleanup|clean up|not yet)\b"),
    ("decisions", r"\b(?:decid\w*|decision|chose|chosen|choose|opted|prefer\w*|instead of|rather than|we'll|"
                  r"go with|went with|for now|for this phase|approach|option [ab1-3]|trade-?off\w*|recommend\w*|"
                  r"deliberate\w*|intentional\w*|agreed|keep|drop)\b"),
    ("apis", r"\b(?:api|endpoint\w*|returns?|request\w*|response\w*|get|post|put|patch|delete|status code|"
             r"\d{3} (?:no content|created|ok)|function|method|signature|parameter\w*|argument\w*|interface|"
             r"type|callback|hook|sdk|client|protocol|field)\b"),
    ("patterns", r"\b(?:convention\w*|pattern\w*|always|never|rule\w*|must|should always|guideline\w*|"
                 r"best practice\w*|idiom\w*|style|standard)\b"),
    ("learnings", r"\b(?:because|root cause|caus\w*|bug|issue|problem|turns out|gotcha|actually|fails?|failed|"
                  r"breaks?|broke|crash\w*|error\w*|why|fix\w*|wrong|silently)\b"),
    ("context", r"\b(?:project|phase|milestone|roadmap|repo\w*|directory|folder|lives? in|located|branch|"
                r"machine|system|router|device|version|firmware|windows|linux|macos|wsl|docker|vm)\b"),
]}
_HEAD_KEYS = {
    "root": r"root cause|cause|why|diagnos|finding|gotcha|what's happening|what happened|issue identified",
    "decision": r"decision|decided|recommend|proposal|design|approach|choice|verdict",
    "limit": r"limitation|gap|risk|caveat|concern|blocker|constraint|problem",
    "done": r"summary|what changed|changes|verification|verified|status|result|complete|done|fixed|applied|commit",
    "next": r"next|todo|pending|follow|remaining|optional|open question",
    "how": r"how|works|architecture|protocol|structure|format|concept|overview|rule",
}
_HEAD_RX = {k: LazyPattern(v, _I) for k, v in _HEAD_KEYS.items()}


def tokens(text: str) -> list[str]:
    """Lower-case word tokens; numbers become <num>, identifiers keep their (lower-cased) spelling."""
    out = []
    for t in _TOKEN.findall(text):
        out.append("<num>" if t[0].isdigit() else t.lower())
    return out


def record_features(units: Sequence[Unit]) -> list[dict[str, float]]:
    """Features of every unit of one record (all units of one assistant text, in order)."""
    n = len(units)
    out = [features(u) for u in units]
    # Context: another statement in the same block (facts come in clusters). Narration around a sentence is
    # deliberately not a feature: a fact after "I need to ..." must be judged on its own.
    diag = [bool(f.get("f:diagnostic") or f.get("f:decl")) for f in out]
    for i, (u, f) in enumerate(zip(units, out)):
        if any(diag[j] for j in range(n) if j != i and units[j].block == u.block):
            f["c:block_diag"] = 1.0
    return out


def features(unit: Unit) -> dict[str, float]:
    """Sparse named features of one unit: `f:` hand-made, `w:`/`b:` words and word pairs, `h:` heading words."""
    cjk = is_cjk(unit.text)
    s = spaced(unit.text) if cjk else unit.text
    f: dict[str, float] = {"f:bias_in": 1.0}
    n = len(s) + (cjk_chars(unit.text) if cjk else 0)  # a CJK character says about what two Latin ones do
    words = s.split()
    f["f:len_short"] = float(n < 50)
    f["f:len_long"] = float(n > 200)
    f["f:words_log"] = math.log1p(len(words)) / 4
    f["f:item"] = float(unit.kind == "item")
    f["f:depth"] = float(unit.depth > 0)
    f["f:lead_colon"] = float(unit.kind == "item" and unit.lead.rstrip().endswith(":"))
    f["f:has_heading"] = float(bool(unit.heading))
    f["f:code"] = min(unit.code_spans, 3) / 3
    f["f:camel"] = float(bool(_CAMEL.search(s)))
    f["f:snake"] = float(bool(_SNAKE.search(s)))
    f["f:dotted"] = float(bool(_DOTTED.search(s)))
    f["f:call"] = float(bool(_CALL.search(s)))
    f["f:path"] = float(bool(_PATH.search(s)))
    f["f:allcaps"] = float(bool(_ALLCAPS.search(s)))
    f["f:number"] = float(bool(_NUMBER.search(s)))
    f["f:unit_num"] = float(bool(_UNIT_NUM.search(s)))
    f["f:line_ref"] = float(bool(_LINE_REF.search(s)))
    f["f:acronym"] = float(bool(_ACRONYM.search(s)))
    f["f:proper"] = float(bool(_PROPER.search(s)))
    f["f:dir"] = float(bool(_DIR.search(s)))
    f["f:question"] = float(s.rstrip().endswith("?"))
    f["f:colon_end"] = float(s.rstrip().endswith(":"))
    f["f:exclaim"] = float(s.rstrip().endswith("!"))
    for name, rx in _RX.items():
        if rx.search(s):
            f["f:" + name] = 1.0
    if cjk:   # the same kinds of cue in CJK words (the trained weights know only the English ones)
        f.update(cjk_features(unit.text))
        f["f:words_log"] = math.log1p(len(words) + cjk_chars(unit.text) / 2) / 4
    ident = any(f.get(k) for k in ("f:camel", "f:snake", "f:dotted", "f:call", "f:path", "f:allcaps", "f:dir")) \
        or unit.code_spans
    named = ident or f.get("f:acronym") or f.get("f:proper")
    claim = any(f.get(k) for k in ("f:neg", "f:req", "f:causal", "f:diag"))
    if ident and claim:
        f["f:diagnostic"] = 1.0  # an identifier, file or value with a claim about it
    if named and claim:
        f["f:diagnostic_named"] = 1.0  # the same with a module/tool name (SQLite, LiveView, Elixir)
    if (ident or f.get("f:number")) and f.get("f:is_are") and not f.get("f:hedge"):
        f["f:ident_is"] = 1.0
    if f.get("f:narr_start") or f.get("f:let_me"):
        f["f:narration"] = 1.0
    chatter = any(f.get(k) for k in ("f:narration", "f:question", "f:offer", "f:hedge", "f:first_person", "f:you"))
    if f.get("f:present_verb") and not chatter:
        f["f:decl"] = 1.0  # a present-tense statement, not about the speaker or the reader
        if ident:
            f["f:decl_ident"] = 1.0
        if f.get("f:neg"):
            f["f:neg_decl"] = 1.0  # a plain diagnosis: "The root layout doesn't render flash messages."
    if (f.get("f:number") or unit.code_spans) and (f.get("f:is_are") or f.get("f:assign")) and n < 80 and not chatter:
        f["f:value_fact"] = 1.0  # a short statement of a value: "Default port is 1100."
    if _STARTS_IDENT.match(s):
        f["f:starts_ident"] = 1.0
    if unit.kind == "item" and f.get("f:marker"):
        f["f:kv_item"] = 1.0
    heading = unit.heading + " " + unit.lead
    for key, rx in _HEAD_RX.items():
        if rx.search(heading):
            f["f:h_" + key] = 1.0
    for name, rx in _NS_RX.items():
        hits = len(rx.findall(s))
        if hits:
            f["n:" + name] = min(hits, 3) / 3
        if rx.search(heading):
            f["n:h_" + name] = 1.0
    if cjk:
        for key, value in cjk_namespace_cues(unit.text).items():
            f[key] = max(f.get(key, 0.0), value)
    toks = tokens(s)
    for t in toks:
        f["w:" + t] = 1.0
    for a, b in zip(toks, toks[1:]):
        f["b:" + a + "_" + b] = 1.0
    for t in tokens(heading):
        f["h:" + t] = 1.0
    return f


NS_ORDER = ("decisions", "tech_debt", "testing", "performance", "security", "config", "apis", "patterns", "learnings",
            "context")


def namespace_of(feats: dict[str, float], default: str = "learnings") -> str:
    """The namespace with the most cue words in the sentence (ties: NS_ORDER), else `default`.

    A fixed rule, not learned: across projects a learned namespace model did no better than always answering
    "learnings" (see bench/capture/RESULTS.md), this rule does.
    """
    best, top = default, 0.0
    for name in NS_ORDER:
        v = feats.get("n:" + name, 0.0)
        if v > top:
            best, top = name.replace("_", "-"), v
    return best


@dataclass(frozen=True)
class Score:
    """The scorer's verdict on one unit."""

    probability: float  # that the unit states a lasting fact
    namespace: str  # where it would be stored (meaningful when probability >= the threshold)

    def keep(self, threshold: float) -> bool:
        return self.probability >= threshold


class Scorer:
    """A logistic model over `features`, loaded from a JSON weights file (pure Python, deterministic)."""

    def __init__(self, weights: dict):
        self.bias: float = weights["bias"]
        self.weights: dict[str, float] = weights["weights"]
        self.threshold: float = weights["threshold"]
        self.meta: dict = {k: v for k, v in weights.items() if k != "weights"}

    @classmethod
    def load(cls, path: str | Path | None = None) -> "Scorer":
        """The shipped weights (or those at `path`)."""
        with open(path or WEIGHTS_PATH, encoding="utf-8") as fh:
            return cls(json.load(fh))

    def probability(self, feats: dict[str, float]) -> float:
        """P(lasting fact) for one unit's features."""
        z = self.bias + sum(self.weights.get(k, 0.0) * v for k, v in feats.items())
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def score_units(self, units: Sequence[Unit]) -> list[Score]:
        """One Score per unit of one record (all units of one assistant text, in order)."""
        return [Score(round(self.probability(f), 6), namespace_of(f)) for f in record_features(units)]

    def score_text(self, text: str) -> list[tuple[Unit, Score]]:
        """Split one assistant text and score its units."""
        units = split_units(text)
        return list(zip(units, self.score_units(units)))
