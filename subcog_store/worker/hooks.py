"""A hook request in the warm worker: the caller's environment, working directory and umask applied for its
duration (config reads os.environ; requests never overlap, so that is safe), the log records of the run sent to
the caller's hook log, and the answer: for a recall hook as soon as its output is known (its recall_log row
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
from subcog_store.config import process_setting_or_default
from subcog_store.worker import protocol as wire

log = logging.getLogger("subcog_store.worker")
hook_log = logging.getLogger("subcog_store.hook")
BACKGROUND_EVENTS = ("pre-compact", "session-end")   # transcript captures: pending first, so none is lost
RECALL_EVENTS = ("session-start", "user-prompt-submit")   # answered before their recall_log row is written


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


def answer_secs() -> float:
    """SUBCOG_HOOK_ANSWER_SECS of the caller's environment (the default when it does not parse, logged)."""
    return float(process_setting_or_default("hook_answer_secs", hook_log.warning))   # type: ignore[arg-type]


def run(header: dict, raw: bytes, budget: object, answer: "Answer") -> None:
    """Run one hook request with the caller's environment, directory and umask; `answer` sends its output."""
    env = header.get("env")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        answer({"ok": False, "error": "no environment"})
        return
    env = dict(env)
    if isinstance(budget, (int, float)) and not isinstance(budget, bool):
        env["SUBCOG_HOOK_BUDGET_SECS"] = repr(float(budget))
    opts = {"event": header.get("event"), "dry_run": bool(header.get("dry_run")),
            "format": header.get("format") or "default", "db": header.get("db")}
    try:
        with applied(env, str(header.get("cwd")), int(header.get("umask", 0o022))):
            _run(opts, raw, answer)
    except (OSError, ValueError) as e:   # its directory is gone, its environment unusable: it runs the hook
        if not answer.sent:
            answer({"ok": False, "error": f"cannot take on the caller's directory or environment: {e}"})


def _run(opts: dict, raw: bytes, answer: "Answer") -> None:
    """Run the hook. A transcript capture answers once it is done or after SUBCOG_HOOK_ANSWER_SECS, once it has
    recorded itself as pending; a recall hook once its output is known (its recall_log row follows). The rest
    finishes before the request lets go of the run lock."""
    started, event = time.perf_counter(), opts["event"]
    capture = event in BACKGROUND_EVENTS and not opts["dry_run"]
    if not capture and event not in RECALL_EVENTS:
        out = entry.run(event, opts, raw, use_model=True)
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
            result["out"] = entry.run(event, opts, raw, use_model=True, **hand)
        finally:
            ready.set()

    job = threading.Thread(target=work, name=f"subcog-{event}", daemon=True)
    job.start()
    if capture:
        job.join(answer_secs())
    ready.wait()   # recorded as pending, the output known, or done: an answer now loses nothing
    done = "out" in result
    if done:
        out = result["out"]
    elif "out" in early:
        out = early["out"]
    else:
        out = capture_output(None, event, opts["format"])
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
    """The caller's environment, working directory and umask, and a clean log set-up, for one request."""
    root = logging.getLogger("subcog_store")
    handlers = list(root.handlers)
    home_cwd, home_env = os.getcwd(), dict(os.environ)
    tz_changed = home_env.get("TZ") != env.get("TZ")
    os.chdir(cwd)   # may raise: nothing is changed yet
    old_mask = os.umask(umask & 0o777)
    try:
        os.environ.clear()
        os.environ.update(env)
        if tz_changed:
            time.tzset()
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            try:
                handler.close()   # the flush may fail (a log on /dev/full): the answer still goes out
            except OSError:
                pass
        os.environ.clear()
        os.environ.update(home_env)
        if tz_changed:
            time.tzset()
        os.umask(old_mask)
        os.chdir(home_cwd)
