"""`import-history`: the sessions Claude Code kept on disk, captured as the hooks capture them.

Every `*.jsonl` transcript under the folder (default: the client's projects folder, `$CLAUDE_CONFIG_DIR/projects`,
else `~/.claude/projects`) goes through the hooks' own transcript capture (`capture.session.capture_source`: the
same reader, extraction, deduplication and saved offsets), into the domain of the project the transcript recorded
as its working directory (`scope.domain_for_recorded`, also when that folder no longer exists). The offsets are
the hooks' (`hook_offsets`, per session and transcript path), so a second run, or a hook of a resumed session,
reads only what is new. Memory stays bounded whatever the number and size of the files: the folder is walked as a
stream (twice: once for the total the progress bar needs), and a transcript is read at most READ_BYTES at a time.
A file that is not a regular file, cannot be read, holds no text, no Claude Code records or no working directory
is skipped with its reason; subagent transcripts (their text is sidechain, which the hooks leave out) and files
that are not `.jsonl` are counted, not read.
"""
# Lazy imports: the store, settings and scope load when an import runs (the CLI registers the command at start-up).
from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from subcog_store.capture.run import HookOptions, Run, Source
from subcog_store.capture.session import capture_source
from subcog_store.config import is_postgres
from subcog_store.db import hook_state
from subcog_store.db.hook_state import Resume
from subcog_store.model import provider

log = logging.getLogger("subcog_store.history")
SNIFF_BYTES = 1 << 20          # where a transcript must show a Claude Code record with its working directory
SNIFF_LINE = 256 << 10         # a longer first line is read only this far (a record's start holds its keys)
RUN_SECS = 600.0               # one capture call's budget (a call reads at most the reader's 64 MB)
CLAUDE_KEYS = ("sessionId", "parentUuid", "isSidechain", "userType")
EXAMPLES = 3                   # paths kept per skip reason


def projects_dir(environ: dict[str, str] | None = None) -> Path:
    """The client's projects folder: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects` (where the client
    keeps each session's transcript; `mcp.register` reads the same variable for its settings)."""
    environ = os.environ if environ is None else environ
    if environ.get("CLAUDE_CONFIG_DIR"):
        return Path(environ["CLAUDE_CONFIG_DIR"]).absolute() / "projects"
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude" / "projects"


@dataclass
class Project:
    """What one project (domain) got: sessions read, memories captured (or that would be), duplicates skipped."""

    domain: str
    cwd: str
    folder_exists: bool
    sessions: int = 0
    captured: int = 0
    skipped: int = 0
    errors: int = 0


@dataclass
class Report:
    """The outcome of one import: per project, the files skipped (reason -> count, and a few paths), the rest."""

    root: str
    dry_run: bool
    projects: dict[str, Project] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    up_to_date: int = 0            # transcripts read to their end by an earlier import or hook
    subagent_files: int = 0
    other_files: int = 0

    def skip(self, path: Path, reason: str) -> None:
        self.skipped[reason] += 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < EXAMPLES:
            self.examples[reason].append(str(path))

    @property
    def sessions(self) -> int:
        return sum(p.sessions for p in self.projects.values())

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "dry_run": self.dry_run, "sessions": self.sessions,
                "captured": sum(p.captured for p in self.projects.values()),
                "skipped_duplicates": sum(p.skipped for p in self.projects.values()),
                "up_to_date": self.up_to_date, "subagent_files": self.subagent_files,
                "other_files": self.other_files,
                "projects": [vars(p) for p in sorted(self.projects.values(), key=lambda p: p.domain)],
                "skipped_files": [{"reason": r, "count": n, "examples": self.examples[r]}
                                  for r, n in self.skipped.most_common()]}


@dataclass
class Transcript:
    """A transcript worth reading: its session and the working directory it recorded first."""

    path: Path
    size: int
    session_id: str
    cwd: str


def walk(root: Path, report: Report | None = None) -> Iterator[Path]:
    """Every `*.jsonl` file under `root` (or `root` itself), in a stable order; symlinked folders are not
    followed (no loop can hold the walk); subagent transcripts and other files are counted in `report`."""
    if not root.is_dir():
        yield root
        return
    for folder, dirs, files in os.walk(root, followlinks=False, onerror=lambda e: report and report.skip(
            Path(e.filename or root), f"cannot list: {e.strerror}")):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".jsonl"):
                if report is not None:
                    report.other_files += 1
            elif Path(folder).name == "subagents":
                if report is not None:
                    report.subagent_files += 1
            else:
                yield Path(folder) / name


def sniff(path: Path) -> Transcript | str:
    """The transcript at `path`, or why it is skipped."""
    try:   # non-blocking: a FIFO must not hang the walk before the regular-file check
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        return f"cannot read: {e.strerror}"
    with os.fdopen(fd, "rb") as f:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return "not a regular file"
            if info.st_size == 0:
                return "empty"
            return _first_records(f, path, info.st_size)
        except OSError as e:
            return f"cannot read: {e.strerror}"


def _first_records(f, path: Path, size: int) -> Transcript | str:
    session_id, cwd, claude, parsed, read = None, None, False, 0, 0
    while read < SNIFF_BYTES:
        line = f.readline(SNIFF_LINE)
        if not line:
            break
        read += len(line)
        if b"\0" in line:
            return "binary (not a JSON Lines transcript)"
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        parsed += 1
        if not isinstance(record, dict):
            continue
        claude = claude or any(k in record for k in CLAUDE_KEYS)
        session_id = session_id or (record.get("sessionId") if isinstance(record.get("sessionId"), str) else None)
        cwd = cwd or (record.get("cwd") if isinstance(record.get("cwd"), str) and record["cwd"].strip() else None)
        if claude and cwd and session_id:
            break
    if not parsed:
        return "no JSON record (not a JSON Lines transcript)"
    if not claude:
        return "not a Claude Code transcript"
    if not cwd:
        return "no working directory recorded"
    return Transcript(path, size, path.stem if _looks_like_id(path.stem) else (session_id or path.stem), cwd)


def _looks_like_id(stem: str) -> bool:
    return len(stem) == 36 and stem.count("-") == 4


class Importer:
    """One import into the store at `db`; `progress(done_bytes, detail)` is told as transcripts are read."""

    def __init__(self, db: Path, root: Path, *, dry_run: bool = False, environ: dict[str, str] | None = None,
                 progress: Callable[[int, str], None] | None = None):
        self.db, self.root, self.dry_run, self.environ = (db if is_postgres(db) else Path(db)), root, dry_run, \
            environ
        self.report = Report(str(root), dry_run)
        self.progress = progress or (lambda done, detail: None)
        self.done = 0

    def total_bytes(self) -> int:
        """The bytes of every transcript the walk will offer (the progress bar's total)."""
        total = 0
        for path in walk(self.root):
            try:
                total += path.stat().st_size
            except OSError:
                pass
        return total

    def run(self) -> Report:
        """Import every transcript; a store that cannot be opened raises (nothing was read)."""
        from subcog_store.store import Store

        store = None if self.dry_run and not is_postgres(self.db) and not self.db.exists() else Store(self.db, readonly=self.dry_run)
        try:
            for path in walk(self.root, self.report):
                found = sniff(path)
                if isinstance(found, str):
                    self.report.skip(path, found)
                    self._finish_file(path)
                else:
                    self._import(store, found)
        finally:
            if store is not None:
                store.close()
        return self.report

    def _finish_file(self, path: Path, size: int | None = None) -> None:
        if size is None:
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
        self.done += size
        self.progress(self.done, path.parent.name)

    def _import(self, store, t: Transcript) -> None:
        from subcog_store.config import process_setting
        from subcog_store.scope import domain_for_recorded

        key = (t.session_id, str(t.path.absolute()))
        offset = _stored_offset(store, *key)
        if offset.offset >= t.size:
            self.report.up_to_date += 1
            self._finish_file(t.path, t.size)
            return
        domain = domain_for_recorded(t.cwd, self.environ)
        project = self.report.projects.setdefault(domain, Project(domain, t.cwd, _exists(t.cwd)))
        project.sessions += 1
        options = HookOptions(db=self.db, dry_run=self.dry_run, budget_secs=RUN_SECS, event="import-history",
                              min_confidence=process_setting("hook_min_confidence", self.environ),  # type: ignore
                              domain_override=domain, environ=self.environ,
                              embedders=provider.SHARED)   # a batch: one model for the whole run, in this process
        source = Source(session_id=key[0], transcript_path=key[1], cwd=t.cwd, trigger="import-history")
        while True:   # a call reads at most the reader's 64 MB; the next one resumes from its saved offset
            run = Run(dry_run=self.dry_run, log=options.log_path)
            started = time.monotonic()
            capture_source(source, options, run, started, started + RUN_SECS)
            project.captured += len(run.captured)
            project.skipped += len(run.skipped)
            project.errors += len(run.errors)
            for error in run.errors:
                log.info("import-history: %s: %s", t.path.name, error["summary"])
            reached = _stored_offset(store, *key)
            self.progress(self.done + min(reached.offset, t.size), domain)
            if self.dry_run or not run.truncated or not reached.after(offset):
                break
            offset = reached
        self._finish_file(t.path, t.size)


def _stored_offset(store, session_id: str, transcript_path: str) -> Resume:
    """Where the hooks (or an earlier import) stopped reading this transcript (the start: never read)."""
    if store is None:
        return Resume()
    return hook_state.offset(store.con, session_id, transcript_path)


def _exists(cwd: str) -> bool:
    try:
        return cwd.startswith("/") and os.path.isdir(cwd)
    except (OSError, ValueError):
        return False
