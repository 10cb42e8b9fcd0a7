"""`copy SOURCE DEST`: the current memories of one store into another, through the destination's deduplication
(see `copying`)."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse

from subcog_store.cli.app import emit


def register(sub, add) -> None:
    p = add("copy", "copy the current memories of one store into another (a SQLite file, a PostgreSQL connection "
                    "string), each through the destination's deduplication; a second copy stores nothing",
            cmd_copy)
    p.add_argument("source", metavar="SOURCE", help="the store to copy from (read only)")
    p.add_argument("dest", metavar="DEST", help="the store to copy into (created when it is a new file)")
    p.add_argument("--domain", "-d", help="one project's memories (default: every project's)")


def cmd_copy(args: argparse.Namespace) -> int:
    from pathlib import Path

    from subcog_store import copying
    from subcog_store.config import db_target
    from subcog_store.core import Core
    from subcog_store.errors import InvalidInput, NotFound
    from subcog_store.inputs import validate_domain
    from subcog_store.model import provider
    from subcog_store.progress import bar

    source, dest = db_target(args.source, "SOURCE"), db_target(args.dest, "DEST")
    if isinstance(source, Path) and not source.exists():
        raise NotFound(f"{source} does not exist")
    if str(source) == str(dest):
        raise InvalidInput("SOURCE and DEST are the same store")
    domain = validate_domain(args.domain) if args.domain else None
    src = Core(source, readonly=True, fetch_model=False)
    try:
        dst = Core(dest, embedders=provider.VIA_WORKER, fetch_model=False)
        try:
            with bar(copying.count(src, domain), "copy", unit="memories", quiet=args.quiet) as p:
                report = copying.copy_memories(src, dst, domain, progress=p.set)
        finally:
            dst.close()
    finally:
        src.close()
    skipped = report.memories - report.copied - len(report.errors)
    text = [f"copy: {report.memories} memories: {report.copied} copied, {skipped} already there or duplicates"
            + (f" ({', '.join(f'{d} {n}' for d, n in report.decisions.most_common())})" if report.decisions else "")
            + (f"; {report.linked} outdated-by links made" if report.linked else "")
            + (f"; {report.retired_left_out} retired memories left out" if report.retired_left_out else "")
            + (f"; {len(report.errors)} refused" if report.errors else "")]
    text += [f"  {e['id']}: {e['error']}" for e in report.errors[:20]]
    emit(args, report.to_dict(), "\n".join(text))
    return 2 if report.errors else 0
