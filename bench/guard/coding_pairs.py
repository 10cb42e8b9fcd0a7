"""The coding-memory pairs of bench/guard/pairs/ (how they were written: bench/guard/pairs/README.md).

Each block of a project file is one labelled fact of `bench/capture/labels` (named by transcript file, record uuid
and sentence sha, never its text), restated in our words as `A`, with rewordings that keep the fact (`=`) and
changes of the fact (`!`), each tagged with the kind of edit. The pairs of a block:

- A with each rewording, and the rewordings with each other: the same fact (label 1);
- A with each change, and the first rewording with each change: a changed fact (label 0; the second kind is a
  change made together with a rewording, tagged `reworded+<kind>`).

Whole projects are held out for test (TEST_PROJECTS); the rest is training data.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "pairs"
PROJECTS = ("cctrace", "cipherbox", "mclaude", "ohmyposh", "ctxeval")
TEST_PROJECTS = frozenset({"ohmyposh", "ctxeval"})
_LINE = re.compile(r"^(?P<mark>[=!]) (?P<kind>[a-z+-]+) \| (?P<text>.+)$")


@dataclass(frozen=True)
class CodingPair:
    a: str
    b: str
    label: bool          # True: the same fact (a duplicate)
    kind: str            # the edit: "passive", "number", "reworded+role", ...
    project: str
    source: str          # "file uuid sentence_sha" of the labelled fact it restates

    @property
    def split(self) -> str:
        return "test" if self.project in TEST_PROJECTS else "train"


@dataclass
class _Block:
    source: str
    base: str = ""
    same: list[tuple[str, str]] | None = None
    changed: list[tuple[str, str]] | None = None


def _blocks(path: Path) -> list[_Block]:
    blocks: list[_Block] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("@ "):
            blocks.append(_Block(line[2:].strip(), same=[], changed=[]))
            continue
        if not blocks:
            raise ValueError(f"{path.name}:{number}: a line before the first @")
        block = blocks[-1]
        if line.startswith("A "):
            block.base = line[2:].strip()
            continue
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"{path.name}:{number}: not 'A text', '= kind | text' or '! kind | text'")
        (block.same if m["mark"] == "=" else block.changed).append((m["kind"], m["text"].strip()))  # type: ignore
    return blocks


def load(projects: tuple[str, ...] = PROJECTS) -> list[CodingPair]:
    """Every pair of the given projects, in file order."""
    out: list[CodingPair] = []
    for project in projects:
        for block in _blocks(HERE / f"{project}.txt"):
            same, changed = block.same or [], block.changed or []
            if not block.base or not same:
                raise ValueError(f"{project}: block {block.source} needs an A line and a rewording")
            pair = lambda a, b, label, kind: CodingPair(a, b, label, kind, project, block.source)  # noqa: E731
            out += [pair(block.base, text, True, kind) for kind, text in same]
            out += [pair(x, y, True, f"{kx}+{ky}") for (kx, x), (ky, y) in itertools.combinations(same, 2)]
            out += [pair(block.base, text, False, kind) for kind, text in changed]
            out += [pair(same[0][1], text, False, f"reworded+{kind}") for kind, text in changed]
    return out


def split(pairs: list[CodingPair], which: str) -> list[CodingPair]:
    return [p for p in pairs if p.split == which]
