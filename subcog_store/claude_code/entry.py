"""`subcog-store hook EVENT [--dry-run] [--format default|json|subcog] [--db PATH]`: the hooks' thin entry.

No argparse and no command modules: a hook is a fresh process each time. It hands the whole hook to the warm
worker (`worker.client`: the standard library's socket, json and struct only), which builds a `HookRequest`
(`request.py`) of this process's environment, input and options, runs `run` below with it in this process's
directory and umask, and prints its answer. When the worker is absent, starting, busy,
wedged, of another version or fails, it runs `run` here, with what is left of its budget, says why in the hook
log, and (absent or stale) starts a worker for the next hook after its output is written; a transcript capture
it ran while a worker was running is handed over (the worker goes on with what the run deferred, while idle).
Whatever happens it
exits 0, prints output the client accepts and writes nothing on stderr; details go to the hook log.
"""
# Lazy imports: the hook command's warm path imports the standard library and the worker client only;
# the rest loads when the hook runs in this process.
from __future__ import annotations

import os
import sys
import time

MAX_INPUT = 16 << 20   # the hook input is a small JSON object; more than this is not read
CAPTURE_EVENTS = ("pre-compact", "session-end")   # transcript captures: one deferred here, the worker goes on with


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


def run(request: "HookRequest", *, note: str | None = None, on_recorded=None, on_answer=None) -> str:
    """The hook's work in this process (the worker runs it too, from the same kind of request); returns what to
    print. Never raises. `note`: why the worker did not run it (logged); `on_recorded`, `on_answer`: see
    `handlers.dispatch` (the worker's answer before the hook has finished)."""
    try:
        from subcog_store.claude_code import handlers

        handlers.setup_log(request.environ)
        if note:
            handlers.log.info("worker: %s; running %s in process", note, request.event)
        return handlers.dispatch(request, on_recorded=on_recorded, on_answer=on_answer)
    except BaseException as e:  # noqa: BLE001 - the user's session must go on
        try:
            import logging

            logging.getLogger("subcog_store.hook").warning("hook %s failed: %s: %s", request.event,
                                                           type(e).__name__, e)
        except BaseException:  # noqa: BLE001
            pass
        return fallback(request.event, e, request.format)


def with_site() -> None:
    """Started without `site` (the hook command's -S): set it up, so the installed packages can be imported."""
    if sys.flags.no_site and "site" not in sys.modules:
        import site

        site.main()


def _in_process(event: str | None, opts: dict, raw: bytes, db: str | None, started: float, note: str | None,
                on_answer=None) -> str:
    """The hook run here: the same request the worker builds, the model in this process, the budget counted from
    the process's start (`started`: its start-up and a worker that did not answer count); `on_answer`: see
    `run`."""
    try:
        with_site()
        from subcog_store.claude_code.request import HookRequest
        from subcog_store.model import provider

        request = HookRequest.of(event, opts, raw, os.environ, db, embedders=provider.LOCAL,
                                 started=started)
    except BaseException as e:  # noqa: BLE001 - the user's session must go on
        return fallback(event, e, opts.get("format"))
    return run(request, note=note, on_answer=on_answer)


def _print(out: str) -> None:
    try:
        if out:
            print(out, flush=True)
    except BaseException:  # noqa: BLE001 - a closed stdout: nothing more to say
        pass


def _hand_over(event: str, db: str | None) -> None:
    """A transcript capture ran here while a worker was running (busy, say): tell it the store, so it goes on with
    what this run deferred while it is idle (capture/deferred.py) rather than waiting for the next capture hook."""
    try:
        from subcog_store.worker import client

        client.note_capture(event, db)
    except BaseException:  # noqa: BLE001 - the next capture hook goes on with it anyway
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

        def emit(text: str) -> None:   # a recall hook's answer, printed before its bookkeeping is written
            nonlocal printed
            printed = True
            _print(text)
        out = _in_process(event, opts, raw, db, started, note, on_answer=emit)
        hand_over = bool(note) and not spawn and event in CAPTURE_EVENTS and not opts["dry_run"]
    else:
        hand_over = False
    if not printed:
        _print(out)
    if hand_over:
        _hand_over(event, db)
    if spawn:
        try:
            with_site()
            from subcog_store.worker.lifecycle import start_detached

            start_detached(wait=0.5 if stale else 0.0)
        except BaseException:  # noqa: BLE001
            pass
    return 0
