"""Claude Code hooks: the hook input parsed once (`events.HookEvent`), the log, and dispatch by event to
`capture.session` (pre-compact, session-end, post-compact), `claude_code.recall_hooks` (session-start,
user-prompt-submit) and `claude_code.tool_hooks` (post-tool-use, post-tool-use-failure).

Every hook never harms the session: whatever happens it exits 0 and prints output the client accepts, within its
budget, nothing on stderr; details (content fingerprints only, never content) go to the hook log.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from subcog_store.claude_code.events import EVENTS, HookEvent

if TYPE_CHECKING:
    from typing import Mapping

    from subcog_store.capture.session import HookOptions, Run, Source
    from subcog_store.claude_code.request import HookRequest

# Lazy imports: a hook is a fresh process, and the warm worker path never gets here; each event imports only
# what it runs (the store, the model and the extraction pipeline are heavy).
log = logging.getLogger("subcog_store.hook")
__all__ = ["EVENTS", "HookEvent", "dispatch", "pre_compact", "post_compact", "setup_log", "log_path"]


def log_path(environ: "Mapping[str, str] | None" = None) -> Path:
    """`SUBCOG_HOOK_LOG`, else `$XDG_STATE_HOME/subcog-store/hook.log` (default ~/.local/state); a value that
    does not parse is reported by the setting's own check, and nothing is logged meanwhile."""
    from subcog_store.config import hook_log_path

    return hook_log_path(environ, fallback=True)


def setup_log(environ: "Mapping[str, str] | None" = None) -> str:
    """Send this package's log records to the hook log file; returns its path (or '' when not writable).

    Nothing ever reaches stderr: a log that cannot be written is dropped silently."""
    from subcog_store.config import send_to_hook_log

    path = log_path(environ)
    if not send_to_hook_log(logging.getLogger("subcog_store"), path):
        return ""
    return str(path)


def source_of(event: HookEvent) -> "Source":
    """What a capture reads, from the hook's event."""
    from subcog_store.capture.session import Source

    return Source(event.session_id, event.transcript_path, event.cwd, event.trigger, event.hook_event_name)


def pre_compact(raw: bytes, options: "HookOptions") -> "Run":
    """pre-compact and session-end: capture the unread part of the transcript the hook input names. Never
    raises: problems land in `run.errors`."""
    from subcog_store.capture.session import capture_transcript, new_run

    started = options.clock()
    try:
        event = HookEvent.parse(options.event, raw)
    except ValueError as e:
        run = new_run(options)
        run.fail(str(e), e)
        return run
    return capture_transcript(source_of(event), options, started=started)


def post_compact(raw: bytes, options: "HookOptions") -> "Run":
    """post-compact: capture the lasting facts of the compaction summary in the hook input. Never raises."""
    from subcog_store.capture.session import capture_summary, new_run

    started = options.clock()
    try:
        event = HookEvent.parse("post-compact", raw)
    except ValueError as e:
        run = new_run(options, trigger="post-compact")
        run.fail(str(e), e)
        return run
    return capture_summary(source_of(event), event.compact_summary, options, started=started)


def dispatch(request: "HookRequest", *, on_recorded=None, on_answer=None) -> str:
    """Run one hook; returns what to print (may be empty). Raises only on our own bugs (the entry catches).
    `request.use_model`: the prompt hook may load the model (the warm worker), else it uses it only when loaded.
    `on_recorded`: a transcript capture records itself as pending, then calls this (the worker may answer);
    `on_answer(output)`: a recall hook calls it with its output before it writes `recall_log`."""
    from subcog_store.errors import ConfigError

    event, fmt = request.event, request.format
    if event in ("pre-compact", "session-end", "post-compact"):
        from subcog_store.capture.session import HookOptions
        from subcog_store.claude_code.report import capture_output

        try:
            options = HookOptions.from_env(request.db_path, dry_run=request.dry_run, event=event,
                                           environ=request.environ, budget_secs=request.budget(),
                                           embedders=request.embedders)
            options.on_recorded, options.timeout_secs = on_recorded, request.timeout_left()
            options.store_deadline = options.waits_until(time.monotonic())
        except ConfigError as e:
            log.warning("%s: bad setting: %s", event, e)
            return capture_output(None, event, fmt, problem=str(e))
        run = post_compact(request.raw, options) if event == "post-compact" else pre_compact(request.raw, options)
        return capture_output(run, event, fmt)
    if event in ("session-start", "user-prompt-submit", "post-tool-use", "post-tool-use-failure"):
        from subcog_store.claude_code import recall_hooks, tool_hooks

        try:
            parsed = HookEvent.parse(event, request.raw)
        except ValueError as e:
            log.warning("%s: %s", event, e)
            return ""
        given = {"environ": request.environ, "embedders": request.embedders, "on_answer": on_answer,
                 "budget_secs": request.budget(log.warning)}
        try:
            if event == "session-start":
                return recall_hooks.session_start(parsed, request.db_path, **given)
            if event == "post-tool-use":
                return tool_hooks.post_tool_use(parsed, request.db_path, **given)
            if event == "post-tool-use-failure":
                return tool_hooks.post_tool_use_failure(parsed, request.db_path, use_model=request.use_model, **given)
            return recall_hooks.user_prompt_submit(parsed, request.db_path, use_model=request.use_model, **given)
        except Exception as e:  # noqa: BLE001 - fail open: nothing injected, the reason in the log
            from subcog_store.db import files   # lazy: only when a recall hook failed

            files.note_damage(request.db_path, e)
            log.warning("%s failed: %s: %s", event, type(e).__name__, e)
            return ""
    log.warning("unknown hook event %r", event)
    return ""
