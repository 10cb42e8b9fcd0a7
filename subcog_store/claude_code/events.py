"""A Claude Code hook input, parsed and normalised once into one typed event.

The hook input is a JSON object on stdin; each field we use is kept only when it is a string (a lone surrogate
in the session id is replaced: the id is stored). Everything downstream (capture, recall) reads this object,
never the raw JSON.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Mapping

from subcog_store.scope import domain_for

EVENTS = ("pre-compact", "session-end", "post-compact", "session-start", "user-prompt-submit", "post-tool-use",
          "post-tool-use-failure")


@dataclass(frozen=True)
class HookEvent:
    """One hook input: which hook ran, and the fields of its input we use (None when absent or not text)."""

    name: str | None
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    trigger: str | None = None
    hook_event_name: str | None = None
    source: str | None = None             # session-start: startup | resume | clear | compact | fork
    prompt: str | None = None             # user-prompt-submit
    compact_summary: str | None = None    # post-compact
    tool_name: str | None = None          # post-tool-use(-failure): Read, Edit, Bash, ...
    error: str | None = None              # post-tool-use-failure: what the tool said
    file_path: str | None = None          # post-tool-use: `tool_input.file_path` (or `notebook_path`)
    is_interrupt: bool = False            # post-tool-use-failure: the user stopped the tool

    @classmethod
    def from_payload(cls, name: str | None, payload: Mapping) -> "HookEvent":
        """The event of an input object already decoded (its non-text fields dropped)."""
        derived = ("name", "file_path", "is_interrupt")
        values = {f.name: payload.get(f.name) for f in fields(cls) if f.name not in derived}
        values = {k: v if isinstance(v, str) else None for k, v in values.items()}
        tool_input = payload.get("tool_input")
        path = (tool_input.get("file_path") or tool_input.get("notebook_path")) if isinstance(tool_input, dict) \
            else None
        values["file_path"] = path if isinstance(path, str) and path.strip() and "\0" not in path else None
        values["is_interrupt"] = payload.get("is_interrupt") is True
        if values["session_id"] is not None:   # a lone surrogate cannot be stored: the id in valid UTF-8
            values["session_id"] = values["session_id"].encode("utf-8", "replace").decode("utf-8")
        return cls(name, **values)

    @classmethod
    def parse(cls, name: str | None, raw: bytes) -> "HookEvent":
        """The event of a raw hook input; raises ValueError with a short reason."""
        if not raw.strip():
            raise ValueError("empty hook input")
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):  # also: nesting too deep, a 5,000-digit number
            raise ValueError("hook input is not JSON (or nested too deep)") from None
        if not isinstance(payload, dict):
            raise ValueError("hook input is not a JSON object")
        return cls.from_payload(name, payload)

    def domain(self, environ: Mapping[str, str] | None = None) -> str:
        """The project domain of the input's `cwd` (SUBCOG_HOOK_DOMAIN of `environ` overrides; see `scope`)."""
        return domain_for(self.cwd, environ)
