"""`export` and `import`: memories out as JSONL or the project's Markdown document, and a JSONL export back in
through deduplication (see `transfer`)."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from subcog_store.cli.app import emit, open_store
from subcog_store.errors import InvalidInput


def register(sub, add) -> None:
    p = add("export", "write memories out: JSONL (every field: a backup, a move) or Markdown (the project's memory "
                      "document: by namespace, current facts only, outdated ones listed under their successor)",
            cmd_export)
    p.add_argument("--domain", "-d", help="one project's memories (default: every project's)")
    p.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    p.add_argument("--all", action="store_true", help="jsonl: also retired memories (superseded, merged, deleted)")
    p.add_argument("--output", "-o", metavar="FILE", help="write FILE (replaced whole, or left as it was on an "
                                                          "error) instead of stdout")
    p = add("import", "capture the current memories of a JSONL export through deduplication (a second import of the "
                      "same file stores nothing)", cmd_import)
    p.add_argument("file", metavar="FILE", help="a file written by `export --format jsonl` (- for stdin)")
    p.add_argument("--domain", "-d", help="import every memory into this project instead of the one it names "
                                          "(a project's domain differs from one machine to another)")


@contextmanager
def _output(path: str | None) -> Iterator[IO[str]]:
    """stdout, or a temporary file beside `path` renamed over it once complete."""
    if path is None:
        yield sys.stdout
        return
    target = Path(path)
    if not target.parent.is_dir():
        raise InvalidInput(f"{target.parent}: no such folder")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cmd_export(args: argparse.Namespace) -> int:
    import time

    from subcog_store import __version__, transfer
    from subcog_store.inputs import validate_domain
    from subcog_store.progress import bar

    domain = validate_domain(args.domain) if args.domain else None
    with open_store(args, readonly=True) as store:
        total = transfer.count(store, domain, args.all and args.format == "jsonl")
        with _output(args.output) as out, bar(total, "export", unit="memories", quiet=args.quiet) as p:
            if args.format == "jsonl":
                n = transfer.export_jsonl(store, out, domain, args.all, progress=p.set)
            else:
                n = transfer.export_markdown(store, out, domain, __version__, time.strftime("%Y-%m-%d"),
                                             progress=p.set)
    if args.output:
        emit(args, {"file": args.output, "format": args.format, "memories": n},
             f"export: {n} memories written to {args.output} ({args.format})")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from subcog_store import transfer
    from subcog_store.inputs import validate_domain
    from subcog_store.progress import bar

    domain = validate_domain(args.domain) if args.domain else None
    try:
        stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")
    except OSError as e:
        raise InvalidInput(f"{args.file}: cannot read: {e.strerror}") from None
    with stream, open_store(args) as store:
        total = os.fstat(stream.fileno()).st_size if args.file != "-" else 0
        with bar(total, "import", unit="MB", scale=1 << 20, quiet=args.quiet) as p:
            report = transfer.import_lines(store, transfer.bounded_lines(stream), domain, progress=p.set)
    data = report.to_dict()
    text = [f"import: {report.lines} lines: {report.stored} memories stored, {report.skipped} duplicates skipped"
            + (f" ({', '.join(f'{d} {n}' for d, n in report.decisions.most_common())})" if report.decisions else "")
            + (f"; {report.not_current} retired memories left out" if report.not_current else "")
            + (f"; {report.errors} bad lines" if report.errors else "")]
    text += [f"  line {e['line']}: {e['error']}" for e in report.error_lines]
    emit(args, data, "\n".join(text))
    return 2 if report.errors else 0
