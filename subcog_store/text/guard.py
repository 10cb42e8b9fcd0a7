"""The changed-fact guard: cheap lexical checks that veto a semantic (cosine) duplicate.

Sentence embeddings cannot see a changed fact ("TTL is 5 minutes" vs "TTL is 10 minutes" scores 0.985).
`changed_fact(older, newer)` says whether two texts state different facts: numbers, versions, units, dates,
negation/polarity, swapped participants (symmetric in its arguments). `lexical_support(a, b)` is a positive
signal: how much of the content of each text the other one covers. `is_duplicate` combines both with the cosine.
Pure Python (re + stdlib), deterministic, well under a millisecond per sentence pair. Calibrated on MRPC train
only; see docs/guard.md.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["GuardVerdict", "changed_fact", "lexical_support", "is_duplicate", "SUPPORT_MIN"]

SUPPORT_MIN = 0.6  # recommended lexical_support floor for a semantic duplicate (calibrated on MRPC train)


@dataclass(frozen=True)
class GuardVerdict:
    changed: bool        # True: the texts state different facts; must NOT be treated as duplicates
    reason: str | None   # "number", "version", "unit", "date", "negation", "polarity", "participants"
    detail: str          # human words, e.g. "5 minutes vs 10 minutes"

    def __bool__(self) -> bool:
        return self.changed


SAME = GuardVerdict(False, None, "")

# ---------------------------------------------------------------- vocabulary

STOPWORDS = frozenset("""
a an the and or but if then else so as at by for from in into of on onto to with within via per than that this
these those there here it its it's itself is are was were be been being am do does did done doing has have had
having will would shall should can could may might must i me my we us our ours you your he him his she her they
them their theirs what which who whom whose when where why how all any both each either few more most other some
such only own same too very just also s t also again further once about above after against below between during
before through under until up down out off over while because since though although whether not no nor never
""".split())

NEGATORS = frozenset("""
not no never none nobody nothing nowhere neither nor cannot without n't unless unable
dont doesnt didnt isnt arent wasnt werent cant couldnt wouldnt shouldnt wont hasnt havent hadnt mustnt
""".split())
# Verbs that negate what follows: "drop Python 3.8 support" = "Python 3.8 is no longer supported",
# "declined to comment" = "would not comment". Counted like a negator.
PRIVATIVE = frozenset("""
fail fails failed failing refuse refuses refused refusing decline declines declined declining deny denies denied
lack lacks lacked lacking disable disables disabled disabling deprecate deprecates deprecated drop drops dropped
dropping remove removes removed removing stop stops stopped stopping avoid avoids avoided avoiding unsupported
discontinue discontinued forbid forbids forbidden prohibit prohibited ban banned
""".split())

NUMBER_WORDS = {
    "zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "dozen": 12, "half": 0.5, "once": 1, "twice": 2, "thrice": 3, "single": 1, "double": 2, "triple": 3,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10,
}
# "one", "first", "second", "single", "once" are too often not numbers ("one of", "at first", "5 seconds");
# they only count when the other text writes the same quantity.
SOFT_NUMBER_WORDS = frozenset({"one", "first", "second", "single", "once", "double", "half"})

UNITS = {  # surface form -> canonical unit
    **dict.fromkeys(["ns", "nanosecond", "nanoseconds"], "ns"),
    **dict.fromkeys(["us", "µs", "microsecond", "microseconds"], "us"),
    **dict.fromkeys(["ms", "msec", "msecs", "millisecond", "milliseconds"], "ms"),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], "second"),
    **dict.fromkeys(["m", "min", "mins", "minute", "minutes"], "minute"),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], "hour"),
    **dict.fromkeys(["d", "day", "days"], "day"),
    **dict.fromkeys(["wk", "week", "weeks"], "week"),
    **dict.fromkeys(["mo", "month", "months"], "month"),
    **dict.fromkeys(["y", "yr", "yrs", "year", "years"], "year"),
    **dict.fromkeys(["b", "byte", "bytes"], "byte"),
    **dict.fromkeys(["kb", "kib", "kilobyte", "kilobytes", "k"], "kb"),
    **dict.fromkeys(["mb", "mib", "megabyte", "megabytes"], "mb"),
    **dict.fromkeys(["gb", "gib", "gigabyte", "gigabytes"], "gb"),
    **dict.fromkeys(["tb", "tib", "terabyte", "terabytes"], "tb"),
    **dict.fromkeys(["%", "percent", "pct", "per-cent"], "percent"),
    **dict.fromkeys(["million", "mln", "mn"], "million"),
    **dict.fromkeys(["billion", "bn", "bln"], "billion"),
    **dict.fromkeys(["trillion", "tn"], "trillion"),
    **dict.fromkeys(["cent", "cents"], "cent"),
    **dict.fromkeys(["$", "dollar", "dollars", "usd"], "dollar"),
    **dict.fromkeys(["€", "euro", "euros", "eur"], "euro"),
    **dict.fromkeys(["£", "pound", "pounds", "gbp"], "pound"),
    **dict.fromkeys(["x", "times"], "times"),
    **dict.fromkeys(["px", "pixel", "pixels"], "px"),
    **dict.fromkeys(["row", "rows"], "row"),
    **dict.fromkeys(["thread", "threads"], "thread"),
    **dict.fromkeys(["worker", "workers"], "worker"),
    **dict.fromkeys(["retry", "retries", "attempt", "attempts"], "retry"),
    **dict.fromkeys(["connection", "connections"], "connection"),
    **dict.fromkeys(["request", "requests", "req"], "request"),
    **dict.fromkeys(["mile", "miles", "mi"], "mile"),
    **dict.fromkeys(["km", "kilometer", "kilometers", "kilometre", "kilometres"], "km"),
    **dict.fromkeys(["point", "points", "pt", "pts"], "point"),
    **dict.fromkeys(["share", "shares"], "share"),
}

MONTHS = {m: i for i, ms in enumerate([
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")], start=1) for m in ms}
WEEKDAYS = {d: i for i, ds in enumerate([
    ("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thur", "thurs"),
    ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")]) for d in ds}

# Opposite pairs: one side in a text and only the other side in the other text is a polarity change.
OPPOSITES = [
    ("always", "never"), ("enable", "disable"), ("enabled", "disabled"), ("allow", "deny"), ("allow", "forbid"),
    ("allow", "block"), ("allowed", "forbidden"), ("accept", "reject"), ("include", "exclude"),
    ("add", "remove"), ("added", "removed"), ("true", "false"), ("on", "off"), ("before", "after"),
    ("increase", "decrease"), ("increased", "decreased"), ("raise", "lower"), ("rose", "fell"),
    ("up", "down"), ("gain", "loss"), ("gained", "lost"), ("higher", "lower"), ("more", "less"),
    ("more", "fewer"), ("above", "below"), ("minimum", "maximum"), ("min", "max"), ("sync", "async"),
    ("synchronous", "asynchronous"), ("public", "private"), ("required", "optional"), ("mandatory", "optional"),
    ("success", "failure"), ("succeeded", "failed"), ("pass", "fail"), ("passed", "failed"),
    ("valid", "invalid"), ("supported", "unsupported"), ("safe", "unsafe"), ("start", "stop"),
    ("lock", "unlock"), ("encrypted", "unencrypted"), ("blocking", "non-blocking"), ("inside", "outside"),
    ("first", "last"), ("earliest", "latest"), ("oldest", "newest"), ("ascending", "descending"),
    ("asc", "desc"), ("read", "write"), ("input", "output"), ("server", "client"), ("upstream", "downstream"),
    ("import", "export"), ("upload", "download"), ("push", "pull"), ("open", "close"), ("opened", "closed"),
    ("win", "lose"), ("won", "lost"), ("buy", "sell"), ("bought", "sold"), ("positive", "negative"),
    ("strict", "lenient"), ("deprecated", "recommended"), ("prefer", "avoid"), ("keep", "drop"),
    ("left", "right"), ("north", "south"), ("east", "west"),
]
_OPPOSITE = {}
for _x, _y in OPPOSITES:
    _OPPOSITE.setdefault(_x, set()).add(_y)
    _OPPOSITE.setdefault(_y, set()).add(_x)

# ---------------------------------------------------------------- normalisation and tokens

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "`": "'",
                         "\u2013": "-", "\u2014": " - ", "\u00a0": " "})
_WORD = re.compile(r"[$€£%]|[^\W_][\w.'/+#-]*[\w%]|[^\W_]", re.UNICODE)
_NUM = re.compile(r"^(?P<v>v)?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)(?P<u>[a-zµ%]+)?$")


_USA = re.compile(r"\b(?:U\.S\.A\.|U\.S\.|US|USA)(?![\w.])|\bU\.S(?=\W|$)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_TENS = re.compile(r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](one|two|three|four|five|six|seven|"
                   r"eight|nine)\b")
_ONES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}


def normalize(text: str) -> str:
    """Case-folded, NFKC, straight quotes, single spaces, 1,000 -> 1000, sixty-one -> 61: the compared form."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _USA.sub("usa", text)
    text = " ".join(text.split()).casefold()
    text = _THOUSANDS.sub("", text)
    return _TENS.sub(lambda m: str(NUMBER_WORDS[m.group(1)] + _ONES[m.group(2)]), text)


def _split_token(tok: str) -> list[str]:
    """Split n't, possessives and hyphen/slash compounds that are not numbers or identifiers."""
    out: list[str] = []
    tok = tok.strip(".'-/+")
    if not tok:
        return out
    if tok.endswith("n't"):
        stem = tok[:-3]
        if stem in ("ca", "wo", "sha"):
            stem = {"ca": "can", "wo": "will", "sha": "shall"}[stem]
        if stem:
            out.append(stem)
        out.append("n't")
        return out
    if tok.endswith("'s") or tok.endswith("s'"):
        tok = tok[:-2] if tok.endswith("'s") else tok[:-1]
    for cont, full in (("'re", "are"), ("'ve", "have"), ("'ll", "will"), ("'d", "would"), ("'m", "am")):
        if tok.endswith(cont):
            return [tok[:-len(cont)], full]
    if any(c.isdigit() for c in tok) or "_" in tok or "." in tok.rstrip("."):
        return [tok]
    for part in re.split(r"[-/]", tok):
        if part:
            out.append(part.strip("'"))
    return [p for p in out if p]


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[str, ...]:
    """Normalised word tokens; numbers keep their dots and commas, n't is its own token."""
    out: list[str] = []
    for raw in _WORD.findall(normalize(text)):
        out.extend(_split_token(raw))
    return tuple(out)


def _stem(word: str) -> str:
    """A light suffix stripper: enough to match plurals and simple verb forms."""
    if len(word) <= 3 or any(c.isdigit() for c in word):
        return word
    for suffix, repl, min_len in (("ies", "y", 4), ("ied", "y", 4), ("sses", "ss", 4), ("ness", "", 5),
                                  ("ing", "", 5), ("edly", "", 5), ("ed", "", 4), ("ly", "", 5),
                                  ("es", "", 5), ("s", "", 4)):
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= min_len - 1:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            return word[: len(word) - len(suffix)] + repl
    return word


# ---------------------------------------------------------------- facts: numbers, units, dates

@dataclass(frozen=True)
class _Quantity:
    value: str          # canonical number text ("5", "3.8", "1.2.0")
    unit: str | None    # canonical unit after (or attached to) the number
    kind: str           # "number", "version", "date", "word" (two), "soft" (one, first)
    surface: str        # how the text wrote the number
    unit_word: str = ""  # how the text wrote the unit


def _canon_number(n: str) -> str:
    n = n.replace(",", "")
    if n.count(".") == 1:
        whole, frac = n.split(".")
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        return f"{whole}.{frac}" if frac else whole
    if n.count(".") == 0:
        return n.lstrip("0") or "0"
    return n


_ISO_DATE = re.compile(r"(19|20)\d\d-\d\d(-\d\d)?$")


def _quantities(toks: tuple[str, ...]) -> list[_Quantity]:
    out: list[_Quantity] = []
    for i, tok in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        prev = toks[i - 1] if i else ""
        m = _NUM.match(tok)
        if m:
            n, unit = m.group("n"), m.group("u")
            if unit is None and nxt in UNITS:
                unit = nxt
            if unit is None and prev in ("$", "€", "£"):
                unit = prev
            if unit in ("st", "nd", "rd", "th"):
                unit = None
            if m.group("v") or n.count(".") >= 2 or (n.count(".") == 1 and unit is None and prev.isalpha()
                                                        and prev not in UNITS and prev not in STOPWORDS):
                kind = "version"   # v1.2.0, 1.2.0, Python 3.8
            elif (re.fullmatch(r"(19|20)\d\d", n) and unit is None) or prev in MONTHS or nxt in MONTHS:
                kind = "date"      # 2024, August 24, 24 August
            else:
                kind = "number"
            out.append(_Quantity(_canon_number(n), UNITS.get(unit) if unit else None, kind, tok, unit or ""))
        elif tok in NUMBER_WORDS or tok == "one":
            if tok == "second" and prev and (_NUM.match(prev) or prev in NUMBER_WORDS):
                continue  # "5 second timeout": a unit, not a number
            value = 1 if tok == "one" else NUMBER_WORDS[tok]
            unit = nxt if nxt in UNITS else None
            kind = "soft" if tok in SOFT_NUMBER_WORDS or tok == "one" else "word"
            out.append(_Quantity(_canon_number(str(value)), UNITS.get(unit) if unit else None, kind, tok,
                                 unit or ""))
        elif "-" in tok or "/" in tok:
            # "30-year", "22/32", "2004-2005", "2024-03-01": numbers inside compounds
            kind = "date" if _ISO_DATE.match(tok) else "number"
            for part in re.split(r"[-/]", tok):
                pm = _NUM.match(part)
                if pm:
                    out.append(_Quantity(_canon_number(pm.group("n")), None, kind, tok))
    return out


def _say(q: _Quantity) -> str:
    if not q.unit_word or q.surface.endswith(q.unit_word):
        return q.surface
    return f"{q.unit_word}{q.surface}" if q.unit_word in "$€£" else f"{q.surface} {q.unit_word}"


def _number_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    qa, qb = _quantities(ta), _quantities(tb)
    hard_a = {q.value for q in qa if q.kind != "soft"}
    hard_b = {q.value for q in qb if q.kind != "soft"}
    all_a = {q.value for q in qa}
    all_b = {q.value for q in qb}
    only_a = sorted(hard_a - all_b)
    only_b = sorted(hard_b - all_a)
    if only_a or only_b:
        kinds = {q.kind for q in qa + qb if q.value in only_a or q.value in only_b}
        reason = "version" if "version" in kinds else "date" if kinds == {"date"} else "number"
        sa = ", ".join(_say(q) for q in qa if q.value in only_a) or "no number"
        sb = ", ".join(_say(q) for q in qb if q.value in only_b) or "no number"
        return GuardVerdict(True, reason, f"{sa} vs {sb}")
    # same numbers: do they carry the same units?
    units_a = {}
    for q in qa:
        if q.unit:
            units_a.setdefault(q.value, set()).add(q.unit)
    for q in qb:
        ua = units_a.get(q.value)
        if q.unit and ua and q.unit not in ua:
            wa = next(_say(x) for x in qa if x.value == q.value and x.unit)
            return GuardVerdict(True, "unit", f"{wa} vs {_say(q)}")
    return SAME


def _date_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    for table, name in ((MONTHS, "month"), (WEEKDAYS, "weekday")):
        da = {table[t] for t in ta if t in table and not (t == "may" and name == "month" and not _near_num(ta, t))}
        db = {table[t] for t in tb if t in table and not (t == "may" and name == "month" and not _near_num(tb, t))}
        if da and db and da != db:
            wa = " ".join(t for t in ta if t in table)
            wb = " ".join(t for t in tb if t in table)
            return GuardVerdict(True, "date", f"{wa} vs {wb}")
    return SAME


def _near_num(toks: tuple[str, ...], word: str) -> bool:
    i = toks.index(word)
    near = toks[max(0, i - 1): i + 2]
    return any(_NUM.match(t) for t in near)


# ---------------------------------------------------------------- polarity

def _negations(toks: tuple[str, ...]) -> int:
    n = 0
    for i, t in enumerate(toks):
        if t in NEGATORS or t in PRIVATIVE:
            # "no longer" / "not only" / "no doubt" are not simple negations of the main claim
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if t == "not" and nxt == "only":
                continue
            n += 1
    return n


def _polarity_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    na, nb = _negations(ta), _negations(tb)
    if na % 2 != nb % 2:
        wa = " ".join(t for t in ta if t in NEGATORS or t in PRIVATIVE) or "no negation"
        wb = " ".join(t for t in tb if t in NEGATORS or t in PRIVATIVE) or "no negation"
        return GuardVerdict(True, "negation", f"{wa} vs {wb}")
    sa, sb = set(ta), set(tb)
    for w in sorted(sa - sb):
        for opp in _OPPOSITE.get(w, ()):
            if opp in sb and opp not in sa:
                return GuardVerdict(True, "polarity", f"{w} vs {opp}")
    return SAME


# ---------------------------------------------------------------- participants

_ARTICLES = frozenset({"the", "a", "an"})
_REPORTING = frozenset({"said", "says", "say", "told", "tells", "added", "according", "reported", "stated", "wrote"})
_SYMMETRIC = frozenset({"and", "or", "nor", "&", "with", "vs", "versus", "plus", "as", "well", "both"})


def _participants_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    """Two named things that trade places around the same words: "A calls B" / "B calls A"."""
    ca = [t for t in ta if t not in STOPWORDS and not _NUM.match(t)]
    cb = [t for t in tb if t not in STOPWORDS and not _NUM.match(t)]
    shared = [w for w in dict.fromkeys(ca) if ca.count(w) == 1 and cb.count(w) == 1]
    if len(shared) < 2:
        return SAME
    ia = {w: ta.index(w) for w in shared}
    ib = {w: tb.index(w) for w in shared}
    for x in shared:
        if x in _REPORTING:
            continue
        for y in shared:
            if ia[x] < ia[y] and ib[y] < ib[x] and ia[y] - ia[x] <= 6:
                seg_a = [t for t in ta[ia[x] + 1: ia[y]] if t not in _ARTICLES]
                seg_b = [t for t in tb[ib[y] + 1: ib[x]] if t not in _ARTICLES]
                if (seg_a and seg_a == seg_b and y not in _REPORTING
                        and not _SYMMETRIC.intersection(seg_a) and not _REPORTING.intersection(seg_a)):
                    link = " ".join(seg_a)
                    return GuardVerdict(True, "participants", f"{x} {link} {y} vs {y} {link} {x}")
    return SAME


# ---------------------------------------------------------------- content

# Words that carry no fact of their own for coverage: attribution and filler.
_TRANSPARENT = frozenset("""
said says say saying told tell tells added adding according stated reported mr mrs ms dr also even well now
later still already just really yet however meanwhile
decide decided decides deciding decision choose chose chosen chooses picked opt opted use used uses using
""".split())
CLAUSE_RUN = 3  # this many consecutive content words the other text lacks = an added clause


def _content(toks: tuple[str, ...]) -> list[str]:
    out = []
    for tok in toks:
        # "85-mph", "49-year-old": the words of a compound with numbers (the numbers are the number check's job)
        parts = re.split(r"[-/]", tok) if "-" in tok or "/" in tok else (tok,)
        out.extend(t for t in parts if t not in STOPWORDS and t not in NEGATORS and t not in _TRANSPARENT
                   and len(t) > 1 and not _NUM.match(t))
    return out


def _covered(word: str, other: set[str], other_stems: set[str]) -> bool:
    if word in other or _stem(word) in other_stems:
        return True
    if len(word) >= 4:
        for o in other:
            if len(o) >= 4 and (o.startswith(word) or word.startswith(o)):
                return True
    return False


@dataclass(frozen=True)
class _Coverage:
    share: float          # length-weighted share of the content words found in the other text
    missing: list[str]    # content words the other text lacks
    run: list[str]        # the longest run of consecutive missing content words


def _coverage(ta: tuple[str, ...], tb: tuple[str, ...]) -> _Coverage:
    ca = _content(ta)
    cb = set(_content(tb))
    stems = {_stem(w) for w in cb}
    missing: list[str] = []
    run: list[str] = []
    best: list[str] = []
    covered_len = 0
    for w in ca:
        if _covered(w, cb, stems):
            covered_len += len(w)
            run = []
        else:
            missing.append(w)
            run = run + [w]
            if len(run) > len(best):
                best = run
    total = sum(map(len, ca))
    return _Coverage(covered_len / total if total else 1.0, missing, best)


def lexical_support(a: str, b: str) -> float:
    """0..1, symmetric: how much of each text's content the other one covers.

    The smaller of the two length-weighted shares of content words (stop words, attribution such as "said",
    and numbers left out; plurals, verb forms and prefixes like postgres/postgresql match). A run of
    CLAUSE_RUN or more consecutive content words missing from the other text (an added clause: "... and was
    also filmed by Fox") caps the support at 0.5. Recommended floor for a duplicate: SUPPORT_MIN.
    """
    ta, tb = tokens(a), tokens(b)
    ca, cb = _coverage(ta, tb), _coverage(tb, ta)
    support = min(ca.share, cb.share)
    if max(len(ca.run), len(cb.run)) >= CLAUSE_RUN:
        support = min(support, 0.5)
    return support


# ---------------------------------------------------------------- substitution

SLOT_MAX = 3       # at most this many words swapped for a slot
SLOT_CONTEXT = 4   # and at least this many words the same around it


def _substitution_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    """The same sentence with one slot filled differently: "pool for DuckDB in sync" / "... in auth",
    "as CSV" / "as Protobuf", "flag sync_v3" / "flag sync_v5". Another name in the same place is another fact;
    a reworded sentence differs in more places than one."""
    from difflib import SequenceMatcher

    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return SAME
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > SLOT_MAX or j2 - j1 > SLOT_MAX or len(ta) - (i2 - i1) < SLOT_CONTEXT:
        return SAME
    words_a, words_b = _content(ta[i1:i2]), _content(tb[j1:j2])
    if not words_a or not words_b:
        return SAME
    set_a, set_b = set(words_a), set(words_b)
    stems_a, stems_b = {_stem(w) for w in set_a}, {_stem(w) for w in set_b}
    if any(_covered(w, set_b, stems_b) for w in words_a) or any(_covered(w, set_a, stems_a) for w in words_b):
        return SAME
    return GuardVerdict(True, "substitution", f"{' '.join(ta[i1:i2])} vs {' '.join(tb[j1:j2])}")


# ---------------------------------------------------------------- the guard



def changed_fact(older: str, newer: str) -> GuardVerdict:
    """Whether `newer` states a different fact than `older` (a veto on treating them as duplicates)."""
    if normalize(older) == normalize(newer):
        return SAME
    ta, tb = tokens(older), tokens(newer)
    if ta == tb:
        return SAME
    for check in (_number_check, _date_check, _polarity_check, _participants_check, _substitution_check):
        verdict = check(ta, tb)
        if verdict.changed:
            return verdict
    return SAME


def is_duplicate(older: str, newer: str, cosine: float, threshold: float = 0.90,
                 support_min: float = SUPPORT_MIN) -> bool:
    """The full semantic-tier rule: cosine high enough, no changed fact, enough shared content."""
    return (cosine >= threshold and not changed_fact(older, newer).changed
            and lexical_support(older, newer) >= support_min)
