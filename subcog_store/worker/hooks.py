"""A hook request in the warm worker: the same `HookRequest` the caller builds to run in process (its environment,
input and what is left of its budget), run in the caller's working directory and umask, the log records of the
run sent to the caller's hook log, and the answer: for a recall hook as soon as its output is known (its recall_log row
written after), for a transcript capture when it is done or after SUBCOG_HOOK_ANSWER_SECS once it has recorded
itself as pending (capture/session.py); what is left finishes before the request lets go of the worker's run lock.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from subcog_store.claude_code import entry
from subcog_store.claude_code.report import capture_output
from subcog_store.claude_code.request import HookRequest
from subcog_store.config import process_setting_or_default
from subcog_store.model import provider
from subcog_store.worker import protocol as wire

log = logging.getLogger("subcog_store.worker")
hook_log = logging.getLogger("subcog_store.hook")
BACKGROUND_EVENTS = ("pre-compact", "session-end")   # transcript captures: pending first, so none is lost
# answered before their recall_log row is written
RECALL_EVENTS = ("session-start", "user-prompt-submit", "post-tool-use", "post-tool-use-failure")


class Answer:
    """Sends the one answer of a hook request (a caller that has gone away is not an error: the work goes on)."""

    def __init__(self, conn: socket.socket):
        self.conn, self.sent = conn, False

    def __call__(self, frame: dict) -> None:
        if self.sent:
            return
        self.sent = True
        try:
            wire.send(self.conn, frame, timeout=10.0)
        except OSError as e:
            log.info("worker %d: the caller went away before the answer: %s", os.getpid(), e)


def answer_secs(environ: dict[str, str]) -> float:
    """SUBCOG_HOOK_ANSWER_SECS of the caller's environment (the default when it does not parse, logged)."""
    return float(process_setting_or_default("hook_answer_secs", hook_log.warning, environ))   # type: ignore[arg-type]


def run(header: dict, raw: bytes, budget: object, answer: "Answer") -> None:
    """Run one hook request: the same `HookRequest` the caller would have run in process (its environment, its
    input, what is left of its budget), with the model warm here, in the caller's directory and umask; `answer`
    sends its output."""
    env = header.get("env")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        answer({"ok": False, "error": "no environment"})
        return
    left = float(budget) if isinstance(budget, (int, float)) and not isinstance(budget, bool) else None
    if header.get("event") in BACKGROUND_EVENTS and left is not None and answer_secs(env) < left:
        left = None   # it answers long before the caller's share matters: the whole budget, as in process
    request = HookRequest.of(header.get("event"), {"dry_run": header.get("dry_run"), "format": header.get("format"),
                                                   "db": header.get("db")},
                             raw, env, budget_secs=left, embedders=provider.SHARED, use_model=True)
    try:
        with applied(env, str(header.get("cwd")), int(header.get("umask", 0o022))):
            _run(request, answer)
    except (OSError, ValueError) as e:   # its directory is gone, its environment unusable: it runs the hook
        if not answer.sent:
            answer({"ok": False, "error": f"cannot take on the caller's directory or environment: {e}"})


def _run(request: HookRequest, answer: "Answer") -> None:
    """Run the hook. A transcript capture answers once it is done or after SUBCOG_HOOK_ANSWER_SECS, once it has
    recorded itself as pending; a recall hook once its output is known (its recall_log row follows). The rest
    finishes before the request lets go of the run lock."""
    started, event = time.perf_counter(), request.event
    capture = event in BACKGROUND_EVENTS and not request.dry_run
    if not capture and event not in RECALL_EVENTS:
        out = entry.run(request)
        hook_log.info("worker %d: %s answered in %.0f ms", os.getpid(), event, (time.perf_counter() - started) * 1000)
        answer({"ok": True, "out": out})
        return
    ready, result, early = threading.Event(), {}, {}

    def given(out: str) -> None:
        early["out"] = out
        ready.set()

    def work() -> None:
        try:
            hand = {"on_recorded": ready.set} if capture else {"on_answer": given}
            result["out"] = entry.run(request, **hand)
        finally:
            ready.set()

    job = threading.Thread(target=work, name=f"subcog-{event}", daemon=True)
    job.start()
    if capture:
        job.join(answer_secs(request.environ))
    ready.wait()   # recorded as pending, the output known, or done: an answer now loses nothing
    done = "out" in result
    if done:
        out = result["out"]
    elif "out" in early:
        out = early["out"]
    else:
        out = capture_output(None, event, request.format)
    hook_log.info("worker %d: %s answered in %.0f ms%s", os.getpid(), event, (time.perf_counter() - started) * 1000,
                  " (finishing in the background)" if capture and not done else "")
    answer({"ok": True, "out": out})
    if not done:
        job.join()
        if capture:
            hook_log.info("worker %d: %s finished in the background %.0f ms after the request", os.getpid(), event,
                          (time.perf_counter() - started) * 1000)


@contextmanager
def applied(env: dict[str, str], cwd: str, umask: int) -> Iterator[None]:
    """For one request: the caller's working directory and umask (relative paths and new files), its time zone
    (the log's timestamps), and a clean log set-up. Its settings are read from the request itself; this
    process's environment is not touched (only TZ, which the C library reads)."""
    root = logging.getLogger("subcog_store")
    handlers = list(root.handlers)
    home_cwd, home_tz = os.getcwd(), os.environ.get("TZ")
    tz_changed = home_tz != env.get("TZ")
    os.chdir(cwd)   # may raise: nothing is changed yet
    old_mask = os.umask(umask & 0o777)
    try:
        if tz_changed:
            _set_tz(env.get("TZ"))
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            try:
                handler.close()   # the flush may fail (a log on /dev/full): the answer still goes out
            except OSError:
                pass
        if tz_changed:
            _set_tz(home_tz)
        os.umask(old_mask)
        os.chdir(home_cwd)


def _set_tz(value: str | None) -> None:
    if value is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = value
    time.tzset()
