"""What a file's text says about a cited symbol or key: does the symbol appear, is it defined here, what literal
is the key set to, and is that the value a memory states.

Lenient where a memory and the code may say the same thing in two ways ("90 s" and `90_000` for a key in
milliseconds, `"info"` and info, yes and true): a value is reported as changed only when no reading makes the two
equal, so a current memory is not flagged.
"""
from __future__ import annotations

import re
from functools import lru_cache

DEFINERS = ("def", "defp", "defmacro", "defmodule", "defstruct", "class", "function", "func", "fn", "struct", "enum",
            "interface", "trait", "type", "module", "const", "let", "var", "val", "protocol", "record", "object",
            "impl", "sub", "macro", "table", "view", "alias")
UNITS = {  # unit -> (dimension, factor to the base unit)
    "ms": ("t", 0.001), "millisecond": ("t", 0.001), "milliseconds": ("t", 0.001),
    "s": ("t", 1), "sec": ("t", 1), "secs": ("t", 1), "second": ("t", 1), "seconds": ("t", 1),
    "m": ("t", 60), "min": ("t", 60), "mins": ("t", 60), "minute": ("t", 60), "minutes": ("t", 60),
    "h": ("t", 3600), "hr": ("t", 3600), "hrs": ("t", 3600), "hour": ("t", 3600), "hours": ("t", 3600),
    "d": ("t", 86400), "day": ("t", 86400), "days": ("t", 86400),
    "b": ("b", 1), "byte": ("b", 1), "bytes": ("b", 1), "kb": ("b", 1e3), "mb": ("b", 1e6), "gb": ("b", 1e9),
    "tb": ("b", 1e12), "kib": ("b", 1024), "mib": ("b", 1024 ** 2), "gib": ("b", 1024 ** 3), "tib": ("b", 1024 ** 4),
    "%": ("%", 1), "x": ("x", 1),
}
TRUE, FALSE = {"true", "yes", "on", "enabled"}, {"false", "no", "off", "disabled"}
_QUANTITY = re.compile(r"^(-?\d[\d_,]*(?:\.\d+)?|-?\.\d+)\s*([A-Za-z%]*)$")
_LITERAL = re.compile(r"""^(?:"[^"]*"|'[^']*'|`[^`]*`|-?[\w.:/@+-]+(?:\s?[A-Za-z%]{1,12})?)$""")


@lru_cache(maxsize=4096)
def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(name)}(?![\w?!])")


@lru_cache(maxsize=4096)
def _definition(name: str) -> re.Pattern[str]:
    keywords = "|".join(DEFINERS)
    return re.compile(rf"(?:\b(?:{keywords})\s+(?:[\w.:]+[.:])?{re.escape(name)}(?![\w?!])"
                      rf"|^\s*(?:export\s+)?{re.escape(name)}\s*(?::[^=\n]*)?=(?!=))", re.MULTILINE)


@lru_cache(maxsize=4096)
def _assignment(key: str) -> re.Pattern[str]:
    k = re.escape(key)
    return re.compile(
        rf"(?:^|(?<=[\s{{(,;\[]))(?:export\s+|@)?[\"']?{k}[\"']?"
        rf"(?:\s*(?::\s*[\w\[\]., |]+?)?\s*(?::=|=>|=(?!=))\s*|\s*:\s+|\s*:(?=[\"'\d])|(?<=@{k})\s+)"
        rf"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s,;#)}}\]]+(?:[ \t]+(?:ms|s|secs?|seconds?|mins?|minutes?"
        rf"|h|hours?|days?)\b)?)(?P<rest>[^\n]*)", re.MULTILINE)


def appears(text: str, name: str) -> bool:
    """`name` occurs in `text` as a whole word."""
    return bool(_word(name).search(text))


def defines(text: str, name: str) -> bool:
    """`text` defines `name` (a def, class, function, module, constant or assignment of that name)."""
    return bool(_definition(name).search(text))


def values_of(text: str, key: str) -> list[str]:
    """The literal values `text` assigns to `key` (YAML, JSON, TOML, INI, env, Python, JS, Go, Elixir forms); a
    computed value (a call, an expression) is left out. For a dotted key the last part is looked up."""
    key = key.rsplit(".", 1)[-1]
    if key not in text:
        return []
    out = []
    for match in _assignment(key).finditer(text):
        value, rest = match.group("value").strip(), match.group("rest").strip()
        if rest and not rest.startswith(("#", "//", "--", ",", ";", "}", ")", "]", "/*")):
            continue   # `ttl = 90 * 60`, `ttl: compute()`: not a literal
        value = value.rstrip(",;")
        if value and _LITERAL.match(value) and "(" not in value:
            out.append(_unquote(value))
    return out


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    return value


def _quantity(text: str) -> tuple[float, str | None] | None:
    match = _QUANTITY.match(text.strip())
    if not match:
        return None
    number, unit = match.group(1).replace("_", "").replace(",", ""), match.group(2).lower() or None
    if unit is not None and unit not in UNITS:
        return None
    try:
        return float(number), unit
    except ValueError:
        return None


def same_value(said: str, found: str) -> bool:
    """Whether the code's `found` may be the value a memory `said`, under any reading (quotes, case, booleans,
    digit separators, units: "90 s" and 90000 in a key counted in milliseconds)."""
    a, b = _unquote(said.strip()).strip().lower(), _unquote(found.strip()).strip().lower()
    if a == b or (a.lstrip("v") == b.lstrip("v") and re.fullmatch(r"v?\d+(?:\.\d+)+", a)):
        return True
    if (a in TRUE and b in TRUE) or (a in FALSE and b in FALSE):
        return True
    qa, qb = _quantity(a), _quantity(b)
    if qa is None or qb is None:
        return False
    (na, ua), (nb, ub) = qa, qb
    if na == nb:
        return True
    if ua and ub:
        return UNITS[ua][0] == UNITS[ub][0] and any(_close(na * fa, nb * fb) for fa in _factors(ua)
                                                    for fb in _factors(ub))
    unit = ua or ub
    if unit is None:
        return False
    with_unit, bare = (na, nb) if ua else (nb, na)
    dimension = UNITS[unit][0]
    # the bare number may be counted in any unit of the same dimension
    return any(_close(with_unit * factor / f, bare) for factor in _factors(unit)
               for d, f in set(UNITS.values()) if d == dimension)


def _factors(unit: str) -> set[float]:
    """A unit's factors to its base: a size in kB, MB, GB may mean powers of 1000 or of 1024."""
    dimension, factor = UNITS[unit]
    if dimension == "b" and unit in ("kb", "mb", "gb", "tb"):
        return {factor, 1024 ** ("kmgt".index(unit[0]) + 1)}
    return {factor}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def value_problem(text: str, key: str, said: str, path: str) -> str | None:
    """Why the file no longer bears out "`key` is `said`" (None: it does, or cannot tell)."""
    found = values_of(text, key)
    if not found:
        return f"`{key}` is no longer set in {path}" if not appears(text, key.rsplit(".", 1)[-1]) else None
    if any(same_value(said, value) for value in found):
        return None
    shown = ", ".join(dict.fromkeys(found[:3]))
    return f"`{key}` is {shown} in {path}, the memory says {said}"
