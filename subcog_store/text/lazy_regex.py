"""Regular expressions compiled on their first use, not at import.

Python compiles a pattern in Python code: the extraction's and redaction's ~200 patterns cost a hook process tens
of milliseconds of CPU at import, most of it for patterns a given capture never runs (a summary's sections, the
user's words, Japanese, a secret's value, the texts a store already knows: `capture/known_empty.py`). A
`LazyPattern` is the same pattern, compiled the first time one of its methods is called; the compiled pattern's
bound methods then sit on the instance, so a call costs what a call on the compiled pattern costs.
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["LazyPattern"]

_METHODS = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer")


class LazyPattern:
    """`re.compile(pattern, flags)`, done on the first call of one of its methods (`match`, `search`, `sub`, ...);
    `pattern` and `flags` are what was given."""

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern, self.flags = pattern, flags

    def __getattr__(self, name: str) -> Any:   # only for a name the instance does not hold yet
        if name not in _METHODS:
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self.flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags!r})"
