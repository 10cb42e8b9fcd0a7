"""The command-line app: the parser, the database path, output, and errors mapped to exit codes.

It imports no command module: each `cli/*_cmds.py` module has `register(sub, add)` and its command functions;
`cli/main.py` imports them all. Exit codes: 0 ok · 1 unexpected error · 2 invalid input · 3 bad
configuration · 4 database unusable (missing directory, read-only, locked, full, I/O error, corrupt) · 5 not a
subcog-store database · 6 doctor found a broken invariant · 7 no such memory or decision.
"""
# Lazy imports: a command loads settings and the store (apsw) when it runs, never for `--help`.
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Iterable

from subcog_store.errors import InvalidInput, SubcogError

Handler = Callable[[argparse.Namespace], int]
MAX_STDIN = 64 << 20     # a text or JSONL read from stdin is bounded before it is read


def db_path(args: argparse.Namespace) -> Path | str:
    """--db, else SUBCOG_DB, else the XDG data directory (created when it is the default); a PostgreSQL
    connection string as given (one holding a password is refused: config.db_target)."""
    from subcog_store.config import db_target, default_db_path

    return db_target(args.db) if args.db else default_db_path()


def open_store(args: argparse.Namespace, readonly: bool = False):
    """The store; a batch run left 'running' by a killed `dedup` is marked interrupted on the way."""
    from subcog_store.batch.runlock import reap_stale_runs
    from subcog_store.model import provider
    from subcog_store.store import Store

    store = Store(db_path(args), readonly=readonly, embedders=provider.VIA_WORKER)   # the warm worker embeds
    if not readonly:
        reap_stale_runs(store)
    return store


def emit(args: argparse.Namespace, data: object, text: str | None = None) -> None:
    if getattr(args, "json", False) or text is None:
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        print(text)


def read_stdin_bytes(limit: int = MAX_STDIN) -> bytes:
    """stdin, refusing more than `limit` bytes (read no further than that)."""
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise InvalidInput(f"stdin is larger than {limit >> 20} MiB")
    return data


def read_text_arg(text: str) -> str:
    """The text argument, or stdin when it is `-`; invalid UTF-8 is an InvalidInput."""
    if text != "-":
        return text
    data = read_stdin_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(f"stdin is not valid UTF-8 (byte {e.start})") from None


def positive_int(text: str) -> int:
    """An argparse type: a whole number from 1 to 10^9 (larger limits are refused before use)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:30]!r} is not a whole number") from None
    if not 1 <= value <= 1_000_000_000:
        raise argparse.ArgumentTypeError(f"{text[:30]} is out of range (1 to 1000000000)")
    return value


PATH_ARGS = frozenset({"db", "file", "project", "query"})   # file names may be any bytes; the rest is text


def check_text_args(args: argparse.Namespace) -> None:
    """Arguments that are stored or looked up as text must be valid UTF-8 (argv bytes that are not decode to lone
    surrogates, which SQLite cannot take)."""
    for name, value in vars(args).items():
        if name in PATH_ARGS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    raise InvalidInput(f"{name.replace('_', '-')} {item[:40]!r} is not valid UTF-8") from None


def build_parser(modules: Iterable[ModuleType]) -> argparse.ArgumentParser:
    """The parser with every command of `modules` (each has `register(sub, add)`)."""
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(prog="subcog-store", description="A memory store for AI coding assistants "
                                     "that never stores the same thing twice.",
                                     epilog="Exit codes: " + doc.split("Exit codes: ")[1])
    from subcog_store import __version__

    parser.add_argument("--version", action="version", version=f"subcog-store {__version__}")
    parser.add_argument("--db", help="database file (default: $SUBCOG_DB, else the XDG data directory)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no warnings on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help: str, handler: Handler) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="no progress bar and no warnings on stderr")
        p.set_defaults(handler=handler)
        return p

    for module in modules:
        module.register(sub, add)
    return parser


def _once() -> Callable[[logging.LogRecord], bool]:
    """A log filter that lets each distinct message through once (a batch of 3,000 lines on a full disk warns once,
    not 3,000 times)."""
    seen: set[str] = set()

    def allow(record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in seen:
            return False
        seen.add(message)
        return True
    return allow


def check_db_arg(args: argparse.Namespace) -> None:
    """Every command refuses a `--db` or SUBCOG_DB holding a password (config.db_target), whether it opens the
    store or not (install-hooks, worker, mcp alike)."""
    from subcog_store.config import db_target, process_setting

    if getattr(args, "db", None):
        db_target(args.db)
    else:
        value = process_setting("db")
        if value:
            db_target(str(value), "SUBCOG_DB")


def run(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    """Parse, run the command, and turn the library's errors into a message on stderr and an exit code."""
    args = parser.parse_args(argv)
    from subcog_store.config import log_to_stderr, tell_user

    log_to_stderr(logging.ERROR if args.quiet else logging.WARNING)
    once, handlers = _once(), list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(once)
    try:
        check_text_args(args)
        check_db_arg(args)
        return args.handler(args)
    except SubcogError as e:
        tell_user(str(e))
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except UnicodeEncodeError as e:  # text from the environment or a file that SQLite cannot take
        tell_user(f"invalid input: text that is not valid UTF-8 ({e.reason})")
        return InvalidInput.exit_code
    except Exception as e:  # noqa: BLE001 - a SQLite error that reached here still gets a documented code
        from subcog_store.db import files   # lazy: only when a command failed on SQLite
        from subcog_store.db.connection import database_error

        mapped = files.note_damage(db_path(args), e) or database_error(e)
        if mapped is None:
            raise
        tell_user(str(mapped))
        return mapped.exit_code
    finally:
        for handler in handlers:
            handler.removeFilter(once)
