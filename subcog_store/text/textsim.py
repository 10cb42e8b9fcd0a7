"""Word-level text similarity: the stand-in for embeddings when there is no model."""
from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
SEARCH_STOPWORDS = frozenset("""
a an the and or but if then than so of to in on at by for with from into onto as is are was were be been being
it its this that these those we our us you your i me my he she they them their there here do does did done
has have had will would should can could may might must shall also just very too not no nor only own same
""".split())


def tokens(text: str) -> list[str]:
    """Lower-case word tokens."""
    return _WORD.findall(text.lower())


def significant_tokens(text: str) -> set[str]:
    """Tokens that carry content: no stop words, no single letters."""
    return {t for t in tokens(text) if len(t) > 1 and t not in SEARCH_STOPWORDS}


def word_overlap(a: str, b: str) -> float:
    """Shared significant words over the larger set (1.0 = the same words, order aside)."""
    x, y = significant_tokens(a), significant_tokens(b)
    if not x or not y:
        return 1.0 if normalize_words(a) == normalize_words(b) else 0.0
    return len(x & y) / max(len(x), len(y))


def normalize_words(text: str) -> str:
    return " ".join(tokens(text))


def fts_query(text: str, limit: int = 32) -> str | None:
    """An FTS5 query matching any significant word of `text` (quoted, so no FTS syntax leaks in)."""
    words = sorted(significant_tokens(text), key=len, reverse=True)[:limit]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or None
