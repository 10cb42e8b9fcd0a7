"""What a text states in figures, for the changed-fact guard: numbers, versions, dates and units ("TTL is 5 minutes"
/ "10 minutes", "Node 18.17" / "20.5", "10 MB" / "10 GB", "per minute" / "per hour", "on Friday" / "on Monday")."""
from __future__ import annotations

import re
from dataclasses import dataclass

from subcog_store.text.guard_tokens import NUM, SAME, GuardVerdict
from subcog_store.text.guard_words import (
    MONTHS, NUMBER_WORDS, SCALE_UNITS, SOFT_NUMBER_WORDS, STOPWORDS, UNITS, WEEKDAYS)

__all__ = ["number_check", "date_check", "unit_check"]


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
_YEAR = re.compile(r"(19|20)\d\d")
_COMPOUND = re.compile(r"[-/]")


def _quantities(toks: tuple[str, ...]) -> list[_Quantity]:
    out: list[_Quantity] = []
    for i, tok in enumerate(toks):
        if not (tok[:1].isdigit() or tok[:1] == "v" or tok in NUMBER_WORDS or tok == "one" or "-" in tok
                or "/" in tok):
            continue   # no number in it (most words): NUM starts with a digit or "v"
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        prev = toks[i - 1] if i else ""
        m = NUM.match(tok)
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
            elif (_YEAR.fullmatch(n) and unit is None) or prev in MONTHS or nxt in MONTHS:
                kind = "date"      # 2024, August 24, 24 August
            else:
                kind = "number"
            out.append(_Quantity(_canon_number(n), UNITS.get(unit) if unit else None, kind, tok, unit or ""))
        elif tok in NUMBER_WORDS or tok == "one":
            if tok == "second" and prev and (NUM.match(prev) or prev in NUMBER_WORDS):
                continue  # "5 second timeout": a unit, not a number
            value = 1 if tok == "one" else NUMBER_WORDS[tok]
            unit = nxt if nxt in UNITS else None
            kind = "soft" if tok in SOFT_NUMBER_WORDS or tok == "one" else "word"
            out.append(_Quantity(_canon_number(str(value)), UNITS.get(unit) if unit else None, kind, tok,
                                 unit or ""))
        elif "-" in tok or "/" in tok:
            # "30-year", "22/32", "2004-2005", "2024-03-01": numbers inside compounds
            kind = "date" if _ISO_DATE.match(tok) else "number"
            for part in _COMPOUND.split(tok):
                pm = NUM.match(part)
                if pm:
                    out.append(_Quantity(_canon_number(pm.group("n")), None, kind, tok))
    return out


def _say(q: _Quantity) -> str:
    if not q.unit_word or q.surface.endswith(q.unit_word):
        return q.surface
    return f"{q.unit_word}{q.surface}" if q.unit_word in "$€£" else f"{q.surface} {q.unit_word}"


def number_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
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
    # same numbers: do they carry the same units? (neither text's units of a value contain the other's)
    units_a: dict[str, set[str]] = {}
    units_b: dict[str, set[str]] = {}
    for qs, units in ((qa, units_a), (qb, units_b)):
        for q in qs:
            if q.unit:
                units.setdefault(q.value, set()).add(q.unit)
    for value in sorted(units_a.keys() & units_b.keys()):
        ua, ub = units_a[value], units_b[value]
        if not ua <= ub and not ub <= ua:
            wa = next(_say(x) for x in qa if x.value == value and x.unit and x.unit not in ub)
            wb = next(_say(x) for x in qb if x.value == value and x.unit and x.unit not in ua)
            return GuardVerdict(True, "unit", f"{wa} vs {wb}")
    return SAME


def date_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
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
    return any(NUM.match(t) for t in near)


def unit_check(ta: tuple[str, ...], tb: tuple[str, ...]) -> GuardVerdict:
    """Another time or size unit, with or without a number: "per minute" / "per hour" ("hourly" is not read)."""
    units_a = {UNITS[t] for t in ta if len(t) >= 3 and UNITS.get(t) in SCALE_UNITS}
    units_b = {UNITS[t] for t in tb if len(t) >= 3 and UNITS.get(t) in SCALE_UNITS}
    if units_a - units_b and units_b - units_a:
        return GuardVerdict(True, "unit", f"{', '.join(sorted(units_a - units_b))} vs "
                                          f"{', '.join(sorted(units_b - units_a))}")
    return SAME
