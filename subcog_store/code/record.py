"""Giving memories their citations: at capture (the project as it is, the commit checked out), and with the
`cite` command for memories stored before (each against the commit its project was at when it was written, so a
file deleted since is still found, and then reported gone).

A memory looked at gets a `memory_code` row even when it cites nothing (so `cite` does not look again); its new
citations are checked against the working tree at once (a value that already differs is marked now).
"""
from __future__ import annotations

import bisect
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from subcog_store.clock import iso, parse_iso
from subcog_store.code import git, verify
from subcog_store.code.resolve import resolve_many
from subcog_store.code.tree import CommitTree, Tree, WorkingTree, code_root
from subcog_store.db import citations
from subcog_store.db import memories as writer
from subcog_store.db.connection import immediate

if TYPE_CHECKING:
    from subcog_store.core import Core

log = logging.getLogger("subcog_store.code")
CITE_BATCH = 200              # memories resolved and written together by `cite`
CITE_AT_CAPTURE_SECS = 1.0    # what citing may take of a capture hook's budget (`cite` finishes what it left)


@dataclass
class CiteReport:
    """What citing did."""

    memories: int = 0                    # looked at
    cited: int = 0                       # of them, citing something in the code
    citations: int = 0
    commits: list[str] = field(default_factory=list)
    marked: list[str] = field(default_factory=list)      # found outdated at once
    complete: bool = True
    ms: float = 0.0

    def to_dict(self) -> dict:
        return {"memories": self.memories, "cited": self.cited, "citations": self.citations,
                "commits": self.commits, "marked": self.marked, "complete": self.complete, "ms": round(self.ms, 1)}


def cite_captured(store: "Core", memory_ids: list[str], root: Path, domain: str, deadline: float) -> CiteReport:
    """Cite freshly captured memories against the project as it is now. Never raises: a failure is logged and
    the memories stay uncited (`cite` gives them theirs later)."""
    started = time.perf_counter()
    report = CiteReport()
    try:
        found = [writer.get(store.con, mid) for mid in dict.fromkeys(memory_ids)]
        memories = [(m.id, m.content) for m in found if m is not None]
        tree = WorkingTree(root, deadline)
        _cite(store, memories, tree, git.head(tree.root) if tree.is_git else None, domain, "capture", report)
        _check(store, tree, domain, memories, report)
    except Exception as e:  # noqa: BLE001 - citations are an addition: the capture stands without them
        report.complete = False
        log.warning("citations not recorded: %s: %s", type(e).__name__, e)
    report.ms = (time.perf_counter() - started) * 1000
    return report


def cite_new(store: "Core", memory_ids: list[str], cwd: str | None, domain: str, seconds: float
             ) -> CiteReport | None:
    """What memories a capture just stored cite in the code of the project `cwd` belongs to, within `seconds`
    and CITE_AT_CAPTURE_SECS (None: nothing to do: no memory, no project, or SUBCOG_CODE_ENABLED=false). Never
    raises."""
    root = code_root(cwd) if memory_ids and store.settings.code_enabled and seconds > 0 else None
    if root is None:
        return None
    deadline = time.monotonic() + min(seconds, CITE_AT_CAPTURE_SECS)
    report = cite_captured(store, memory_ids, root, domain, deadline)
    log.info("citations: %d of %d new memories cite the code (%d citations, %d marked) in %.0f ms",
             report.cited, report.memories, report.citations, len(report.marked), report.ms)
    return report


def cite_existing(store: "Core", root: Path, domain: str, deadline: float, *, everything: bool = False,
                  limit: int = 1_000_000) -> CiteReport:
    """The `cite` command: the active memories of `domain` without citations (`everything`: all of them), each
    resolved against the commit its project was at when it was created (the working tree when that is HEAD, or
    outside git), then checked against the working tree."""
    started = time.perf_counter()
    report = CiteReport()
    working = WorkingTree(root, deadline)
    rows = citations.to_cite(store.con, domain, everything, limit)
    head = git.head(working.root) if working.is_git else None
    history = (git.history(working.root) or []) if head else []
    groups: dict[str | None, list[tuple[str, str]]] = {}
    for row in rows:
        groups.setdefault(_commit_at(history, row["created_at"]) or head, []).append((row["id"], row["content"]))
    done: list[tuple[str, str]] = []
    for commit, members in groups.items():
        tree: Tree = working if commit == head else CommitTree(working.root, commit, deadline)
        for start in range(0, len(members), CITE_BATCH):
            if time.monotonic() > deadline:
                report.complete = False
                break
            batch = members[start:start + CITE_BATCH]
            _cite(store, batch, tree, commit, domain, "cite", report)
            done += batch
    _check(store, working, domain, done, report)
    report.ms = (time.perf_counter() - started) * 1000
    return report


def _commit_at(history: list[tuple[str, float]], created_at: str) -> str | None:
    """The commit HEAD's history was at when a memory was created (None: before the history we have)."""
    if not history:
        return None
    times = [-t for _, t in history]             # newest first: negate for an ascending search
    i = bisect.bisect_left(times, -parse_iso(created_at))
    return history[i][0] if i < len(history) else None


def _cite(store: "Core", memories: list[tuple[str, str]], tree: Tree, commit: str | None, domain: str,
          cited_by: str, report: CiteReport) -> None:
    found = resolve_many(dict(memories), tree)
    now = iso(store.clock())
    with immediate(store.con):
        for memory_id, cited in found.items():
            if writer.get(store.con, memory_id) is None:   # gone meanwhile (forgotten, hard-deleted)
                continue
            citations.replace(store.con, memory_id, domain, cited, root=str(tree.root), commit=commit, now=now,
                              cited_by=cited_by)
            report.memories += 1
            report.cited += bool(cited)
            report.citations += len(cited)
    if commit and commit not in report.commits:
        report.commits.append(commit)


def _check(store: "Core", tree: WorkingTree, domain: str, memories: list[tuple[str, str]],
           report: CiteReport) -> None:
    """The new citations against the working tree, now."""
    ids = [mid for mid, _ in memories]
    paths = sorted({c["path"] for mid in ids for c in (citations.of_memory(store.con, mid) or {}).get(
        "citations", [])})
    if paths and tree.left() > 0:
        checked = verify.check_paths(store, tree, domain, paths)
        report.marked += [m for m in checked.marked if m in set(ids)]
