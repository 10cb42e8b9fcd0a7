"""Replace secrets in text with `[REDACTED]` before it is stored."""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Callable

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)", re.S
)
# scheme://user:PASSWORD@host
_URL_PASSWORD = re.compile(r"(?<![\w+.-])([a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s:/@]{0,200}:)([^\s@/]{1,300})(@)")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
_AUTH_HEADER = re.compile(
    r"\b(Authorization\s*:\s*(?:Basic|Bearer|Token)\s+|Bearer\s+)([A-Za-z0-9._~+/-]{11,}[A-Za-z0-9_~+/-]=*)"
)
_VENDOR = re.compile(
    r"\b(?:"
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"  # OpenAI / Anthropic
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r")(?![A-Za-z0-9_-])"
)
# key = value, key: value, "key": "value" where the key ends in a secret word (not max_tokens, tokenizer).
_ASSIGN = re.compile(
    r"""(?ix)
    (?<![a-z0-9_.-])((?:[a-z0-9]{1,40}[_.-]){0,6}(?:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|token
        |access[_-]?key|secret[_-]?key|private[_-]?key|credentials?)(?![a-z0-9])["']?)
    (\s*(?::|=|:=)\s*)
    (?:"([^"\n]+)"|'([^'\n]+)'|([^\s"',;)}\]]+))
    """
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[a-z][a-z0-9+.-]*://.*|none|null|nil|true|false|undefined|\[redacted\]|\*+|x+|\.\.\.|<.*|\$.*|%.*|\{.*|"
    r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*[(\[].*|(?:os|self|cls|settings|config|env|process|environ)\..*)$"
)
_NEAR_SECRET_WORD = re.compile(
    r"(?i)\b(?:key|secret|token|password|passwd|credential|signature|api[_ -]?key)s?\b[^\n]{0,40}?"
    r"(?<![A-Za-z0-9+/_-])([A-Fa-f0-9]{32,}|[A-Za-z0-9+/_-]{32,}={0,2})(?![A-Za-z0-9+/_=-])"
)


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _looks_random(s: str) -> bool:
    s = s.rstrip("=")
    if re.fullmatch(r"[A-Fa-f0-9]+", s):
        return _entropy(s) >= 3.0
    kinds = sum(bool(re.search(p, s)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    return kinds >= 2 and _entropy(s) >= 3.5 and not re.fullmatch(r"[A-Za-z]+(?:[_-][A-Za-z]+)*", s)


def _tokenish(s: str) -> bool:
    """A credential rather than a word: has a digit or symbol, or is long."""
    return len(s) >= 24 or bool(re.search(r"[0-9_~+/=-]", s))


def _assign_value(m: re.Match) -> str | None:
    """Replacement for a key=value match, or None to keep it (placeholders, prose after a colon)."""
    value = m.group(3) or m.group(4) or m.group(5) or ""
    quoted = m.group(5) is None
    if _PLACEHOLDER.match(value) and not quoted:
        return None
    if value == REDACTED or (quoted and value.strip() in ("", REDACTED)):
        return None
    if not quoted and ":" in m.group(2) and not (len(value) >= 6 and re.search(r"[0-9\W_]", value)):
        return None  # "password: must be long" is prose
    start, end = m.span(3) if m.group(3) else m.span(4) if m.group(4) else m.span(5)
    s = m.string
    if s.startswith(REDACTED, start):
        return None
    return s[m.start():start] + REDACTED + s[end:m.end()]


def _sub(rx: re.Pattern, repl: Callable[[re.Match], str | None], text: str) -> tuple[str, int]:
    count = 0

    def one(m: re.Match) -> str:
        nonlocal count
        out = repl(m)
        if out is None:
            return m.group(0)
        count += 1
        return out

    return rx.sub(one, text), count


def _keep_group(group: int) -> Callable[[re.Match], str | None]:
    """Replace only `group` of the match (None if it is already redacted)."""

    def repl(m: re.Match) -> str | None:
        if m.group(group) == REDACTED:
            return None
        s, (a, b) = m.string, m.span(group)
        return s[m.start():a] + REDACTED + s[b:m.end()]

    return repl


_RULES: list[tuple[re.Pattern, Callable[[re.Match], str | None]]] = [
    (_PRIVATE_KEY, lambda m: REDACTED),
    (_URL_PASSWORD, _keep_group(2)),
    (_JWT, lambda m: REDACTED),
    (_AUTH_HEADER, lambda m: _keep_group(2)(m) if _tokenish(m.group(2)) else None),
    (_VENDOR, lambda m: REDACTED),
    (_ASSIGN, _assign_value),
    (_NEAR_SECRET_WORD, lambda m: _keep_group(1)(m) if _looks_random(m.group(1)) else None),
]


def redact(text: str) -> tuple[str, int]:
    """Return `text` with secrets replaced by `[REDACTED]`, and how many were replaced."""
    total = 0
    for rx, repl in _RULES:
        text, n = _sub(rx, repl, text)
        total += n
    return text, total
