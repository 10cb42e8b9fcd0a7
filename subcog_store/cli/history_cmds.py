"""`import-history`: the sessions Claude Code kept on disk, captured as the hooks capture them (see
`capture.history`)."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from subcog_store.cli.app import db_path, emit
from subcog_store.errors import InvalidInput


def register(sub, add) -> None:
    p = add("import-history", "capture every past Claude Code session on disk through the hooks' extraction and "
                              "deduplication, each into its project (resumable: a second run reads only what is new)",
            cmd_import_history)
    p.add_argument("dir", nargs="?", metavar="DIR",
                   help="a folder of transcripts, or one transcript (default: the client's projects folder, "
                        "$CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects)")
    p.add_argument("--dry-run", action="store_true", help="count per project what would be captured; write nothing")


def cmd_import_history(args: argparse.Namespace) -> int:
    from subcog_store.capture.history import Importer, projects_dir
    from subcog_store.progress import bar

    root = Path(args.dir) if args.dir else projects_dir()
    if not root.exists():
        if args.dir:
            raise InvalidInput(f"{root}: no such folder or file")
        emit(args, {"root": str(root), "sessions": 0}, f"import-history: {root} does not exist (no Claude Code "
                                                       "sessions under CLAUDE_CONFIG_DIR here): nothing to import")
        return 0
    importer = Importer(db_path(args), root, dry_run=args.dry_run)
    capture_log = logging.getLogger("subcog_store.hook.capture")
    level = capture_log.level
    capture_log.setLevel(logging.ERROR)   # a session's problems are counted in the report, not printed midway
    try:
        with bar(importer.total_bytes(), "import-history", unit="MB", scale=1 << 20, quiet=args.quiet) as p:
            importer.progress = lambda done, detail: p.set(done, detail)
            report = importer.run()
    finally:
        capture_log.setLevel(level)
    emit(args, report.to_dict(), describe(report))
    return 0


def describe(report) -> str:
    """The report for a person: one line in all, one per project, then what was not read and why."""
    verb = "would capture" if report.dry_run else "captured"
    data = report.to_dict()
    lines = [f"import-history{' (dry run)' if report.dry_run else ''}: {report.root}: {report.sessions} sessions of "
             f"{len(report.projects)} projects read; {verb} {data['captured']} memories, "
             f"{data['skipped_duplicates']} duplicates skipped"]
    if report.projects:
        width = max(len(p.domain) for p in report.projects.values())
        lines.append(f"  {'project':<{width}}  sessions  {verb:>13}  duplicates  folder")
        for p in sorted(report.projects.values(), key=lambda p: (-p.sessions, p.domain)):
            gone = "" if p.folder_exists else " (no longer exists)"
            errors = f"  {p.errors} errors" if p.errors else ""
            lines.append(f"  {p.domain:<{width}}  {p.sessions:>8}  {p.captured:>13}  {p.skipped:>10}  "
                         f"{p.cwd}{gone}{errors}")
    if report.up_to_date:
        lines.append(f"  up to date (read before, by an import or the hooks): {report.up_to_date} transcripts")
    for reason, count in report.skipped.most_common():
        lines.append(f"  skipped {count}: {reason} (e.g. {report.examples[reason][0]})")
    if report.subagent_files or report.other_files:
        lines.append(f"  not read: {report.subagent_files} subagent transcripts (sidechains, which the hooks leave "
                     f"out too), {report.other_files} files that are not .jsonl")
    return "\n".join(lines)
