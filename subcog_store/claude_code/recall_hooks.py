"""The hooks that bring memories back: `session-start` and `user-prompt-submit`.

- session-start, source startup / resume / clear: the project's index (most important current memories).
- session-start, source compact: the capture report of the compaction (once), the compaction recorded (what
  the session captured before it becomes recallable), and the index of what the new context most needs, all
  within the start budget (the summary's lasting facts are captured by the post-compact hook, which the client
  runs after this one).
- user-prompt-submit: the memories relevant to the prompt, or nothing.
Both answer with `hookSpecificOutput.additionalContext` (or print nothing) and record what they gave in
`recall_log` (in the warm worker after the answer has gone out: `on_answer`). The prompt hook uses the model
only when it is already loaded in this process (the warm worker); otherwise the text side answers alone and
`recall_log` says so.
"""
# Lazy imports: the store and recall load when a recall hook runs (never for a capture hook).
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Mapping

from subcog_store.claude_code.events import HookEvent
from subcog_store.clock import iso
from subcog_store.db import hook_state
from subcog_store.claude_code.report import markdown

log = logging.getLogger("subcog_store.hook.recall")
REPORT_HEADER = "subcog memory report from before this compaction:"
SOURCES = ("startup", "resume", "clear", "compact", "fork")
MAX_PROMPT_CHARS = 4000


def _output(event: str, text: str) -> str:
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=False)


def _open(db: Path):
    """The store, or None when there is none yet (a hook never creates one just to read it)."""
    from subcog_store.store import Store

    if not Path(db).exists():
        return None
    return Store(db, fetch_model=False)


def _event(name: str, payload: HookEvent | Mapping) -> HookEvent:
    """The hook's event (a decoded input object is accepted too: tests and benchmarks pass one)."""
    return payload if isinstance(payload, HookEvent) else HookEvent.from_payload(name, payload)


def _begin(event: HookEvent, db: Path, store_factory) -> tuple[str | None, str, float, object]:
    """What both recall hooks start from: the session id, the project's domain, the start time, the store."""
    return event.session_id, event.domain, time.perf_counter(), (store_factory or _open)(db)


def session_start(payload: HookEvent | Mapping, db: Path, store_factory=None, on_answer=None) -> str:
    """The additionalContext for a new context window (see the module docstring); "" for nothing.
    `on_answer(output)`: called with the output before `recall_log` is written (the worker answers then)."""
    from subcog_store.recall import inject

    event = _event("session-start", payload)
    source = event.source
    if source not in SOURCES:
        return ""
    session_id, domain, started, store = _begin(event, db, store_factory)
    if store is None:
        return ""
    with store:
        if not store.settings.recall_enabled and source != "compact":
            return ""
        parts, budget = [], int(store.settings.recall_start_tokens)
        if source == "compact" and session_id:
            report = _take_report(store, session_id)
            if report:
                parts.append(report)
                budget -= inject.tokens(report)
            inject.record_compaction(store, session_id)
        recall = inject.Recall(method="index", reason="recall disabled")
        if store.settings.recall_enabled:
            header = ("Other memories of this project (subcog; `subcog-store show <URN>` for more):" if parts
                      else None)
            recall = inject.start_index(store, domain, session_id, budget_tokens=max(0, budget), header=header)
            if recall.text:
                parts.append(recall.text)
        recall.text = "\n\n".join(parts)
        out = _answer(on_answer, "SessionStart", recall.text)
        inject.log(store, recall, hook=f"session-start:{source}", domain=domain, session_id=session_id, query=None,
                   started=started)
    return out


def _answer(on_answer, event: str, text: str) -> str:
    """The hook's output, handed to `on_answer` first when there is one."""
    out = _output(event, text)
    if on_answer is not None:
        on_answer(out)
    return out


def _take_report(store, session_id: str) -> str:
    """The last undelivered capture report of the session, marked delivered (it is given once)."""
    report = hook_state.take_report(store.con, session_id, iso(store.clock()))
    return REPORT_HEADER + "\n" + markdown(report) if report is not None else ""


def user_prompt_submit(payload: HookEvent | Mapping, db: Path, use_model: bool = False, store_factory=None,
                       on_answer=None) -> str:
    """The additionalContext for a prompt: relevant memories past the abstain gate, or "" (most prompts);
    `on_answer` as for `session_start`."""
    from subcog_store.errors import InvalidInput
    from subcog_store.recall import inject

    event = _event("user-prompt-submit", payload)
    prompt = event.prompt
    session_id, domain, started, store = _begin(event, db, store_factory)
    if store is None:
        return ""
    with store:
        if not store.settings.recall_enabled:
            return ""
        if not isinstance(prompt, str) or not prompt.strip():
            recall = inject.Recall(reason="empty prompt")
        else:
            try:
                recall = inject.prompt_context(store, prompt[:MAX_PROMPT_CHARS], domain, session_id,
                                               use_model=use_model or store.model_loaded)
            except InvalidInput as e:   # all stopwords, punctuation, a lone surrogate
                recall = inject.Recall(reason=f"nothing to search: {e}")
        out = _answer(on_answer, "UserPromptSubmit", recall.text)
        inject.log(store, recall, hook="user-prompt-submit", domain=domain, session_id=session_id,
                   query=prompt if isinstance(prompt, str) else None, started=started)
    return out
