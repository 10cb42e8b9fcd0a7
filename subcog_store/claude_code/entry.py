"""`subcog-store hook EVENT [--dry-run] [--format default|json|subcog] [--db PATH]`: the hooks' thin entry.

No argparse and no command modules: a hook is a fresh process each time. It hands the whole hook to the warm
worker (`worker.client`: the standard library's socket, json and struct only), which runs `run` below with this
process's environment, directory and umask, and prints its answer. When the worker is absent, starting, busy,
wedged, of another version or fails, it runs `run` here, with what is left of its budget, says why in the hook
log, and (absent or stale) starts a worker for the next hook after its output is written. Whatever happens it
exits 0, prints output the client accepts and writes nothing on stderr; details go to the hook log.
"""
# Lazy imports: the hook command's warm path imports the standard library and the worker client only;
# the rest loads when the hook runs in this process.
from __future__ import annotations

import os
import sys
import time

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


def fallback(event: str | None, error: BaseException, fmt: str | None = "default") -> str:
    """What a hook prints when our own code failed: valid, harmless output."""
    if event != "pre-compact":
        return ""
    message = f"subcog: capture skipped ({type(error).__name__}; see the hook log)"
    if fmt in ("json", "subcog"):
        import json

        return json.dumps({"systemMessage": message})
    return message


def run(event: str | None, opts: dict, raw: bytes, db: str | None = None, *, note: str | None = None,
        use_model: bool = False, on_recorded=None, on_answer=None) -> str:
    """The hook's work in this process (the worker runs it too); returns what to print. Never raises.
    `note`: why the worker did not run it (logged); `use_model`: the prompt hook may load the model;
    `on_recorded`, `on_answer`: see `handlers.dispatch` (the worker's answer before the hook has finished)."""
    try:
        from pathlib import Path

        from subcog_store.claude_code import handlers
        from subcog_store.config import default_db_path

        handlers.setup_log()
        if note:
            handlers.log.info("worker: %s; running %s in process", note, event)
        path = opts.get("db") or db
        db_path = Path(path) if path else default_db_path()
        return handlers.dispatch(event, raw, db_path, dry_run=bool(opts.get("dry_run")),
                                 fmt=opts.get("format") or "default", use_model=use_model, on_recorded=on_recorded,
                                 on_answer=on_answer)
    except BaseException as e:  # noqa: BLE001 - the user's session must go on
        try:
            import logging

            logging.getLogger("subcog_store.hook").warning("hook %s failed: %s: %s", event, type(e).__name__, e)
        except BaseException:  # noqa: BLE001
            pass
        return fallback(event, e, opts.get("format"))


def with_site() -> None:
    """Started without `site` (the hook command's -S): set it up, so the installed packages can be imported."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


def _remaining_budget(started: float) -> None:
    """After time spent on a worker that did not answer, the in-process run gets what is left of the budget."""
    from subcog_store.worker.client import hook_budget

    budget, parsed = hook_budget()
    spent = time.monotonic() - started
    if parsed and spent > 0.05:
        os.environ["SUBCOG_HOOK_BUDGET_SECS"] = f"{max(budget - spent, 0.1):.3f}"


def _print(out: str) -> None:
    try:
        if out:
            print(out, flush=True)
    except BaseException:  # noqa: BLE001 - a closed stdout: nothing more to say
        pass


def main(argv: list[str], db: str | None = None) -> int:
    started = time.monotonic()
    opts = _parse(argv)
    event = opts["event"]
    raw = read_input()
    db = opts["db"] or db
    out, note, spawn, stale = None, None, False, False
    try:
        from subcog_store.worker import client

        try:
            out = client.run_hook(event, opts, raw, db, started)
        except client.Unavailable as e:
            note, spawn, stale = (None if e.quiet else e.reason), e.spawn, e.stale
    except BaseException as e:  # noqa: BLE001 - the worker is an optimisation: never a reason to fail
        note = f"worker client failed: {type(e).__name__}: {e}"
    printed = False
    if out is None:
        try:
            with_site()
            from subcog_store.model import provider

            provider.use_local()
            if note:
                _remaining_budget(started)
        except BaseException:  # noqa: BLE001
            pass

        def emit(text: str) -> None:   # a recall hook's answer, printed before its bookkeeping is written
            nonlocal printed
            printed = True
            _print(text)
        out = run(event, opts, raw, db, note=note, on_answer=emit)
    if not printed:
        _print(out)
    if spawn:
        try:
            with_site()
            from subcog_store.worker.lifecycle import start_detached

            start_detached(wait=0.5 if stale else 0.0)
        except BaseException:  # noqa: BLE001
            pass
    return 0
