"""The content hash in PostgreSQL SQL, generated from Python's own lower case so both stores hash alike.

PostgreSQL's lower() folds what the database's locale folds (only ASCII under the C locale; glibc's one-to-one
table under C.UTF-8, without 'İ' -> 'i̇' or the final sigma), and the bundled build has no ICU. So the hash
function of `sql/postgresql/schema/001_content_hash.sql` spells Python's `str.lower()` out: ASCII through
`lower(... collate "C")`, every other one-to-one mapping through `translate()` (only when the text holds such a
letter), 'İ' through `replace()`, and the final sigma ('Σ' at the end of a word becomes 'ς') through a regular
expression with the same cased / case-ignorable context Python uses. Every set is read off Python by probing
it, never typed by hand; `python -m subcog_store.postgres.casefold` prints the function, and
tests/test_postgres_schema.py fails when the migration no longer matches this interpreter's Unicode tables.
"""
from __future__ import annotations

import unicodedata
from functools import lru_cache

from subcog_store.text.normalize import _WHITESPACE

SIGMA, FINAL_SIGMA = "\u03a3", "\u03c2"


def _code_points() -> range:
    return range(0x110000)


def _is_char(cp: int) -> bool:
    return not 0xD800 <= cp < 0xE000


@lru_cache(maxsize=1)
def lower_mappings() -> tuple[dict[str, str], dict[str, str]]:
    """(one-to-one, one-to-many) non-ASCII lower-case mappings of this Python, final sigma aside."""
    single, multi = {}, {}
    for cp in _code_points():
        if cp < 0x80 or not _is_char(cp):
            continue
        char = chr(cp)
        lowered = char.lower()
        if lowered != char:
            (single if len(lowered) == 1 else multi)[char] = lowered
    return single, multi


@lru_cache(maxsize=1)
def sigma_classes() -> tuple[list[int], list[int]]:
    """(cased and not case-ignorable, case-ignorable) code points, probed through Python's final-sigma rule:
    'Σ' lowers to 'ς' when the nearest character before it that is not case-ignorable is cased, and the nearest
    one after it that is not case-ignorable is not cased (or there is none)."""
    cased = [cp for cp in _code_points() if _is_char(cp) and (chr(cp) + SIGMA).lower()[-1] == FINAL_SIGMA]
    known = set(cased)
    ignorable = [cp for cp in _code_points() if _is_char(cp) and cp not in known
                 and ("A" + chr(cp) + SIGMA).lower()[-1] == FINAL_SIGMA]
    return cased, ignorable


def _ranges(cps: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return [(a, b) for a, b in out]


def _escape(cp: int) -> str:
    """A code point as a regular-expression escape (\\uXXXX or \\UXXXXXXXX): the file stays ASCII."""
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def _bracket(cps: list[int]) -> str:
    parts = [_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in _ranges(cps)]
    return "[" + "".join(parts) + "]"


def _unicode_literal(text: str) -> str:
    """A U&'' string literal of `text`, every character escaped."""
    return "U&'" + "".join(f"\\{ord(c):04X}" if ord(c) <= 0xFFFF else f"\\+{ord(c):06X}" for c in text) + "'"


def whitespace_class() -> str:
    """The whitespace of `normalize` as a bracket expression (the same pattern, escaped)."""
    inside = _WHITESPACE.pattern[1:-2]   # "[...]+" -> "..."
    cps: list[int] = []
    i = 0
    while i < len(inside):
        if i + 2 < len(inside) and inside[i + 1] == "-":
            cps.extend(range(ord(inside[i]), ord(inside[i + 2]) + 1))
            i += 3
        else:
            cps.append(ord(inside[i]))
            i += 1
    return _bracket(sorted(set(cps)))


# translate() compares each character of the text with every source character in turn: the one-to-one mappings
# are split by script, and each part runs only on a text that holds one of its letters.
_GROUPS = ((0x80, 0x250), (0x250, 0x530), (0x530, 0x110000))


def function_sql() -> str:
    """The SQL that defines subcog_lower(), subcog_normalize() and subcog_content_hash()."""
    single, multi = lower_mappings()
    cased, ignorable = sigma_classes()
    sigma_pattern = (f"(?<={_bracket(cased)}{_bracket(ignorable)}*){_escape(ord(SIGMA))}"
                     f"(?!{_bracket(ignorable)}*{_bracket(cased)})")
    replaces = "".join(f"  t := replace(t, {_unicode_literal(k)}, {_unicode_literal(v)});\n"
                       for k, v in sorted(multi.items()))
    translates = ""
    for low, high in _GROUPS:
        part = sorted(c for c in single if low <= ord(c) < high)
        translates += (f"  if t ~ $re${_bracket([ord(c) for c in part])}$re$ then\n"
                       f"    t := translate(t,\n      {_unicode_literal(''.join(part))},\n"
                       f"      {_unicode_literal(''.join(single[c] for c in part))});\n  end if;\n")
    return f"""-- name: 001_content_hash
-- Generated by `python -m subcog_store.postgres.casefold` (Unicode {unicodedata.unidata_version}, Python's
-- tables); tests/test_postgres_schema.py checks it against the running interpreter.

-- Python's str.lower(): the final sigma first (its context is read on the original text), then the one-to-many
-- mappings, then ASCII (collation "C" folds only A-Z), then every other one-to-one mapping, script by script
-- (translate() compares each character with every source character: each part runs only where needed).
create function subcog_lower(content text) returns text
language plpgsql immutable parallel safe as $fn$
declare
  t text := content;
begin
  if strpos(t, {_unicode_literal(SIGMA)}) > 0 then
    t := regexp_replace(t, $re${sigma_pattern}$re$, {_unicode_literal(FINAL_SIGMA)}, 'g');
  end if;
{replaces}  t := lower(t collate "C");
{translates}  return t;
end;
$fn$;

-- trim, lower case, every run of Unicode White_Space one space (text/normalize.py's normalize()).
create function subcog_normalize(content text) returns text
language sql immutable parallel safe
return btrim(regexp_replace(subcog_lower(content), $re${whitespace_class()}+$re$, ' ', 'g'), ' ');

-- SHA256 hex of the normalized UTF-8 bytes (the database is UTF8: checked when the store is created).
create function subcog_content_hash(content text) returns text
language sql immutable parallel safe
return encode(sha256(convert_to(subcog_normalize(content), 'UTF8')), 'hex');
"""


def migration_sql() -> str:
    """The whole of `sql/postgresql/schema/001_content_hash.sql`."""
    return function_sql()


if __name__ == "__main__":
    print(migration_sql(), end="")
