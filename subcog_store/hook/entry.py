"""`subcog-store hook EVENT [--dry-run] [--format default|subcog] [--db PATH]`: the hooks' thin entry.

No argparse and no command modules: a hook is a fresh process each time, so it imports only what its path
needs. Whatever happens it exits 0, prints output the client accepts and writes nothing on stderr; details go
to the hook log.
"""
from __future__ import annotations

import json
import sys

EVENTS = ("pre-compact", "session-start")
MAX_INPUT = 16 << 20   # the hook input is a small JSON object; more than this is not read


def _parse(argv: list[str]) -> dict:
    opts: dict = {"event": None, "dry_run": False, "format": "default", "db": None}
    it = iter(argv)
    for arg in it:
        if arg == "--dry-run":
            opts["dry_run"] = True
        elif arg in ("--format", "--db"):
            opts[arg[2:]] = next(it, None)
        elif arg.startswith(("--format=", "--db=")):
            key, _, value = arg[2:].partition("=")
            opts[key] = value
        elif opts["event"] is None and not arg.startswith("-"):
            opts["event"] = arg
    return opts


def read_input() -> bytes:
    try:
        return sys.stdin.buffer.read(MAX_INPUT)
    except (OSError, ValueError, AttributeError):
        return b""


def fallback(event: str | None, error: BaseException) -> str:
    """What a hook prints when our own code failed: valid, harmless output."""
    if event == "pre-compact":
        return json.dumps({"systemMessage": f"subcog: capture skipped ({type(error).__name__}; see the hook log)"})
    return ""


def main(argv: list[str], db: str | None = None) -> int:
    opts = _parse(argv)
    event = opts["event"]
    try:
        from pathlib import Path

        from subcog_store.hook import handlers

        handlers.setup_log()
        raw = read_input()
        db_path = Path(opts["db"] or db) if (opts["db"] or db) else handlers.default_db()
        out = handlers.dispatch(event, raw, db_path, dry_run=opts["dry_run"], fmt=opts["format"] or "default")
        if out:
            print(out)
    except BaseException as e:  # noqa: BLE001 - the user's session must go on
        try:
            import logging

            logging.getLogger("subcog_store.hook").warning("hook %s failed: %s: %s", event, type(e).__name__, e)
        except BaseException:  # noqa: BLE001
            pass
        out = fallback(event, e)
        if out:
            print(out)
    return 0
