"""Is what a project's memories cite still in its code? The working tree is the truth.

The cheap signal first: each cited file's size and mtime against those it had when its citations were last
checked (one stat per cited file; a file modified within RACY_NS of that check is read again, as git treats a
racily clean index entry). Only a changed or never-checked file is read, and each of its citations checked:

- the file is gone: renamed or deleted, as git's history since the memory's commit tells ("config/old.yaml was
  renamed to config/new.yaml"), else "... no longer exists";
- a symbol no longer appears in it: looked for in the whole project (one search for all); found elsewhere, the
  citation follows it, else "`render_page` no longer appears in lib/render.py";
- a key's value differs: "`session_ttl` is 120 in config/app.yaml, the memory says 90" (`code.claims`);
- the file is binary, too large, unreadable or points outside the project: nothing is concluded (the cause is
  logged).

A memory with any such problem is marked (`memory_code.outdated`, the reasons); one whose problems are gone is
unmarked. Bounded by a deadline: the files left are checked next time (their citations keep their old state).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from subcog_store.clock import iso
from subcog_store.code import claims, git
from subcog_store.code.resolve import Index, MAX_SYMBOL_FILES
from subcog_store.code.tree import WorkingTree, code_root
from subcog_store.db import citations
from subcog_store.db import locks
from subcog_store.db.connection import immediate, read_snapshot

if TYPE_CHECKING:
    from subcog_store.core import Core

log = logging.getLogger("subcog_store.code")
RACY_NS = 2_000_000_000
wall_clock_ns = time.time_ns   # when a file was checked, compared with its mtime (a test's fake clock replaces it)
BATCH_FILES = 16           # files checked and written together (the deadline is looked at between batches)
MAX_RENAME_LOOKUPS = 8      # distinct commits asked for renames in one check


@dataclass
class Report:
    """What one check did."""

    files: int = 0                       # cited files looked at
    read: int = 0                        # of them, read (changed since their last check, or never checked)
    checked: int = 0                     # citations checked
    marked: list[str] = field(default_factory=list)      # memories newly marked
    cleared: list[str] = field(default_factory=list)     # memories whose mark is gone
    unreadable: list[str] = field(default_factory=list)  # files nothing could be concluded from
    complete: bool = True                # False: the deadline came first (the rest is checked next time)
    ms: float = 0.0

    def to_dict(self) -> dict:
        return {"files": self.files, "read": self.read, "checked": self.checked, "marked": self.marked,
                "cleared": self.cleared, "unreadable": self.unreadable, "complete": self.complete,
                "ms": round(self.ms, 1)}


def check_project(store: "Core", root: Path, domain: str, deadline: float, *, everything: bool = False
                  ) -> Report:
    """Check the citations of a project's memories whose files changed since their last check (`everything`:
    all of them), until `deadline` (time.monotonic)."""
    started = time.perf_counter()
    report = Report()
    tree = WorkingTree(root, deadline)
    with read_snapshot(store.con):
        states = citations.file_states(store.con, domain)
    report.files = len(states)
    stale = []
    for i, (path, seen) in enumerate(states.items()):
        if i % 256 == 255 and time.monotonic() > deadline:
            report.complete = False
            break
        if everything or _changed(tree.fingerprint(path), seen):
            stale.append(path)
    for start in range(0, len(stale), BATCH_FILES):
        if time.monotonic() > deadline:
            report.complete = False
            log.info("code check: %d of %d changed files left for next time", len(stale) - start, len(stale))
            break
        check_paths(store, tree, domain, stale[start:start + BATCH_FILES], report)
    report.ms = (time.perf_counter() - started) * 1000
    return report


def _changed(now: tuple[int, int] | str, seen: list[tuple]) -> bool:
    """Whether a file must be read: any state its citations were checked in differs from `now` (or is racy)."""
    size, mtime = ((citations.MISSING if now == "missing" else citations.UNREADABLE), None) \
        if isinstance(now, str) else now
    for checked_size, checked_mtime, checked_ns in seen:
        if checked_ns is None or checked_size != size or checked_mtime != mtime:
            return True
        if mtime is not None and mtime >= checked_ns - RACY_NS:
            return True
    return False


def check_paths(store: "Core", tree: WorkingTree, domain: str, paths: list[str], report: Report | None = None
                ) -> Report:
    """Check every citation of these files against the working tree and update the marks of their memories."""
    report = report or Report()
    con = store.con
    with read_snapshot(con):
        rows = citations.at_paths(con, domain, paths)
    if not rows:
        return report
    checked_ns = wall_clock_ns()
    gone = _Moves(tree)
    updates: list[tuple] = []            # (citation, problem, size, mtime)
    lost: list[tuple] = []               # (citation, size, mtime, reason): a symbol or key not in its file now
    by_path: dict[str, list[citations.Stored]] = {}
    for row in rows:
        by_path.setdefault(row.path, []).append(row)
    for path, cited in by_path.items():
        report.read += 1
        now = tree.fingerprint(path)
        if now == "missing":
            reason = gone.reason(path, {c.commit_sha for c in cited if c.commit_sha})
            for c in cited:
                report.checked += 1
                if c.kind == "file":
                    updates.append((c, reason, citations.MISSING, None))
                else:
                    lost.append((c, citations.MISSING, None, reason))
            continue
        if isinstance(now, str):
            log.info("code check: a cited file is %s; nothing concluded", now)
            report.unreadable.append(path)
            updates += [(c, c.problem, citations.UNREADABLE, None) for c in cited]
            continue
        size, mtime = now
        content = tree.read(path) if any(c.kind != "file" for c in cited) else None
        if content is not None and content.text is None:
            log.info("code check: %s", content.problem)
            report.unreadable.append(path)
        for c in cited:
            report.checked += 1
            if c.kind == "file":
                updates.append((c, None, size, mtime))
            elif content is None or content.text is None:
                updates.append((c, c.problem, size, mtime))     # cannot tell: as it was
            elif c.kind == "symbol":
                if claims.appears(content.text, c.name):
                    updates.append((c, None, size, mtime))
                else:
                    lost.append((c, size, mtime, f"`{c.name}` no longer appears in {path}"))
            elif not claims.values_of(content.text, c.name or ""):
                lost.append((c, size, mtime, f"`{c.name}` is no longer set in {path}"))
            else:
                updates.append((c, claims.value_problem(content.text, c.name, c.value or "", path), size, mtime))
    moved = _follow(tree, lost, updates)
    _write(store, updates, moved, checked_ns, report)
    return report


def _follow(tree: WorkingTree, lost: list[tuple], updates: list[tuple]) -> list[tuple[int, str]]:
    """Symbols and keys gone from their file: one search of the project. A symbol found elsewhere (defined
    there, or in a few files), or a key set elsewhere, is followed there (a key's value is then compared); else
    the citation keeps the reason it was lost for."""
    if not lost:
        return []
    index = Index(tree, {c.name.rsplit(".", 1)[-1] for c, *_ in lost}) if tree.left() > 0 else Index(tree, [])
    moved = []
    for c, size, mtime, reason in lost:
        found = index.files(c.name.rsplit(".", 1)[-1])
        if c.kind == "symbol":
            defining = sorted(p for p, lines in found.items() if any(claims.defines(x, c.name) for x in lines))
            elsewhere = defining or (sorted(found) if 0 < len(found) <= MAX_SYMBOL_FILES else [])
            problem = None
        else:
            values = {p: [v for x in lines for v in claims.values_of(x, c.name)] for p, lines in found.items()}
            setting = {p: vs for p, vs in values.items() if vs}
            same = sorted(p for p, vs in setting.items() if any(claims.same_value(c.value or "", v) for v in vs))
            elsewhere = same or (sorted(setting) if len(setting) == 1 else [])
            problem = None if same or not elsewhere else claims.value_problem(
                "\n".join(found[elsewhere[0]]), c.name, c.value or "", elsewhere[0])
        if elsewhere and elsewhere[0] != c.path:
            moved.append((c.id, elsewhere[0]))
            now = tree.fingerprint(elsewhere[0])          # checked in its new file just now
            updates.append((c, problem, *(now if isinstance(now, tuple) else (None, None))))
        else:
            updates.append((c, reason, size, mtime))
    return moved


def _write(store: "Core", updates: list[tuple], moved: list[tuple[int, str]], checked_ns: int,
           report: Report) -> None:
    con = store.con
    memory_ids = list(dict.fromkeys(c.memory_id for c, *_ in updates))
    with immediate(con):
        before = citations.marks(con, memory_ids)
        for c, problem, size, mtime in updates:
            citations.set_checked(con, c.id, problem, size, mtime, checked_ns if size is not None else None)
        for citation_id, path in moved:
            citations.move(con, citation_id, path)
        after = citations.refresh_marks(con, memory_ids, iso(store.clock()))
    statuses = {c.memory_id: c.status for c, *_ in updates}
    report.marked += [m for m, mark in after.items() if mark and m not in before and statuses[m] == "active"]
    report.cleared += [m for m, mark in after.items() if not mark and m in before and statuses[m] == "active"]


class _Moves:
    """Why a cited file is gone, from git's history since the commit its memory was cited at (asked once per
    commit, at most MAX_RENAME_LOOKUPS commits a check)."""

    def __init__(self, tree: WorkingTree):
        self.tree, self.known = tree, {}

    def reason(self, path: str, commits: set[str]) -> str:
        for commit in sorted(commits):
            if commit not in self.known:
                if len(self.known) >= MAX_RENAME_LOOKUPS:
                    break
                self.known[commit] = git.moves_since(self.tree.root, commit, timeout=min(2.0, self.tree.left()))
                if self.known[commit] is None:
                    log.info("code check: git cannot say what happened since commit %s (not a repository, a "
                             "shallow clone, or a rewritten history)", commit[:10])
            moves = self.known[commit]
            if moves and path in moves:
                return f"{path} was renamed to {moves[path]}" if moves[path] else f"{path} was deleted"
        return f"{path} no longer exists"


def check_at_start(store: "Core", cwd: str | None, domain: str) -> Report | None:
    """The session-start check of the project `cwd` belongs to, within SUBCOG_CODE_CHECK_SECS; None when there
    is nothing to check or it failed (the cause logged: the session starts all the same)."""
    seconds = float(store.settings.code_check_secs)   # type: ignore[arg-type]
    root = code_root(cwd)
    if root is None or seconds <= 0 or not store.settings.code_enabled:
        return None
    locks.at_most(store.con, seconds)    # another process's write must not hold the session up
    try:
        report = check_project(store, root, domain, time.monotonic() + seconds)
    except Exception as e:  # noqa: BLE001 - fail open: the index comes without a fresh check
        log.warning("code check at session start failed: %s: %s", type(e).__name__, e)
        return None
    finally:
        locks.default(store.con)
    log.info("code check at session start: %d cited files, %d read, %d citations checked, %d marked, %d cleared, "
             "%d unreadable, %s in %.0f ms", report.files, report.read, report.checked, len(report.marked),
             len(report.cleared), len(report.unreadable), "complete" if report.complete else "stopped at the limit",
             report.ms)
    return report
