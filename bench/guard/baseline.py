"""The duplicate rule of an earlier commit, loaded from git beside the working tree's, for the same-run baseline.

The rule before issue 23 (commit BASE): a pair is a duplicate iff cosine >= threshold, `changed_fact` finds
nothing and `lexical_support` >= SUPPORT_MIN, with the model's phrase similarity. Its guard and word lists are
read from git into modules of their own, so the working tree's lists never leak into it.
"""
from __future__ import annotations

import subprocess
import sys
import types
from typing import Callable

from bench.guard.data import ROOT

BASE = "f205264"   # main before issue 23's rule
PhraseSimilarity = Callable[[str, str], float]
# (older, newer, cosine, phrase similarity or None) -> (duplicate at any threshold <= cosine, why not)
Verdict = Callable[[str, str, float, "PhraseSimilarity | None"], tuple[bool, str | None]]


def _module(commit: str, path: str, name: str, replace: dict[str, str]) -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout
    for old, new in replace.items():
        source = source.replace(old, new)
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    return module


def guard_of(commit: str = BASE) -> types.ModuleType:
    """The guard module of `commit`, with that commit's word lists."""
    words = f"guard_words_{commit}"
    _module(commit, "subcog_store/text/guard_words.py", words, {})
    return _module(commit, "subcog_store/text/guard.py", f"guard_{commit}",
                   {"subcog_store.text.guard_words": words})


def baseline_verdict(commit: str = BASE) -> tuple[Verdict, types.ModuleType]:
    """The rule of `commit` as a verdict function, and its guard module (for clearing its caches)."""
    guard = guard_of(commit)

    def verdict(a: str, b: str, cosine: float, ps: PhraseSimilarity | None) -> tuple[bool, str | None]:
        changed = guard.changed_fact(a, b, ps)
        if changed.changed:
            return False, str(changed.reason)
        support = guard.lexical_support(a, b, ps)
        return (True, None) if support >= guard.SUPPORT_MIN else (False, "support")
    return verdict, guard


def new_verdict() -> Verdict:
    """The working tree's rule (`dedup.rule.judge`) as a verdict function."""
    from subcog_store.dedup.rule import judge

    def verdict(a: str, b: str, cosine: float, ps: PhraseSimilarity | None) -> tuple[bool, str | None]:
        v = judge(a, b, cosine, ps)
        return v.agrees, None if v.agrees else (v.changed_fact or "not the same").split(":")[0]
    return verdict
