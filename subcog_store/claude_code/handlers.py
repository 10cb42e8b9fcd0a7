"""Claude Code hooks: the hook input, the log, and dispatch by event to `capture.session` (pre-compact,
session-end, post-compact) and `claude_code.recall_hooks` (session-start, user-prompt-submit).

Every hook never harms the session: whatever happens it exits 0 and prints output the client accepts, within its
budget, nothing on stderr; details (content fingerprints only, never content) go to the hook log.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger("subcog_store.hook")
EVENTS = ("pre-compact", "session-end", "post-compact", "session-start", "user-prompt-submit")


def log_path() -> Path:
    """`SUBCOG_HOOK_LOG`, else `$XDG_STATE_HOME/subcog-store/hook.log` (default ~/.local/state)."""
    from subcog_store.config import hook_log_path

    try:
        return hook_log_path()
    except Exception:  # noqa: BLE001 - a bad value is reported by the setting's own check
        return Path(os.devnull)


def setup_log() -> str:
    """Send this package's log records to the hook log file; returns its path (or '' when not writable).

    Nothing ever reaches stderr: a log that cannot be written is dropped silently."""
    root = logging.getLogger("subcog_store")
    root.propagate = False  # the log file only: stderr stays quiet during the user's session
    root.setLevel(logging.INFO)
    logging.raiseExceptions = False  # a failing log write (full disk, /dev/full) must not print a traceback
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except (OSError, ValueError):
        root.addHandler(logging.NullHandler())
        return ""
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)
    return str(path)


def default_db() -> Path:
    """The database the hooks use (SUBCOG_DB, else the XDG data directory, created when missing)."""
    from subcog_store.config import db_path, process_setting

    path = db_path()
    if not process_setting("db"):
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


def parse_payload(raw: bytes) -> dict:
    """The hook input object; raises ValueError with a short reason."""
    if not raw.strip():
        raise ValueError("empty hook input")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # also: nesting too deep, a 5,000-digit number
        raise ValueError("hook input is not JSON (or nested too deep)") from None
    if not isinstance(payload, dict):
        raise ValueError("hook input is not a JSON object")
    session = payload.get("session_id")
    if isinstance(session, str):   # a lone surrogate cannot be stored: the id in valid UTF-8
        payload["session_id"] = session.encode("utf-8", "replace").decode("utf-8")
    return payload


def domain_of(payload: dict) -> str:
    """The project domain of the hook input's `cwd` (SUBCOG_HOOK_DOMAIN overrides; see `scope`)."""
    from subcog_store.scope import domain_for

    cwd = payload.get("cwd")
    return domain_for(cwd if isinstance(cwd, str) else None)


def dispatch(event: str | None, raw: bytes, db: Path, *, dry_run: bool = False, fmt: str = "default",
             use_model: bool = False, on_recorded=None, on_answer=None) -> str:
    """Run one hook; returns what to print (may be empty). Raises only on our own bugs (the entry catches).
    `use_model`: the prompt hook may load the model (the warm worker), else it uses it only when loaded.
    `on_recorded`: a transcript capture records itself as pending, then calls this (the worker may answer);
    `on_answer(output)`: a recall hook calls it with its output before it writes `recall_log`."""
    from subcog_store.errors import ConfigError

    if event in ("pre-compact", "session-end", "post-compact"):
        from subcog_store.capture.session import HookOptions, post_compact, pre_compact
        from subcog_store.claude_code.report import capture_output

        try:
            options = HookOptions.from_env(db, dry_run=dry_run, event=event)
            options.on_recorded = on_recorded
        except ConfigError as e:
            log.warning("%s: bad setting: %s", event, e)
            return capture_output(None, event, fmt, problem=str(e))
        run = post_compact(raw, options) if event == "post-compact" else pre_compact(raw, options)
        return capture_output(run, event, fmt)
    if event in ("session-start", "user-prompt-submit"):
        from subcog_store.claude_code import recall_hooks

        try:
            payload = parse_payload(raw)
        except ValueError as e:
            log.warning("%s: %s", event, e)
            return ""
        try:
            if event == "session-start":
                return recall_hooks.session_start(payload, db, on_answer=on_answer)
            return recall_hooks.user_prompt_submit(payload, db, use_model=use_model, on_answer=on_answer)
        except Exception as e:  # noqa: BLE001 - fail open: nothing injected, the reason in the log
            log.warning("%s failed: %s: %s", event, type(e).__name__, e)
            return ""
    log.warning("unknown hook event %r", event)
    return ""
