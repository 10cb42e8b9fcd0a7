"""The hooks that bring memories back: `session-start` and `user-prompt-submit`.

- session-start, source startup / resume / clear: the project's index (most important current memories), after
  the check of what their cited code says now (`code.verify`: a memory it no longer bears out is left out).
- session-start, source compact: the capture report of the compaction (once), the compaction recorded (what
  the session captured before it becomes recallable), and the index of what the new context most needs, all
  within the start budget (the summary's lasting facts are captured by the post-compact hook, which the client
  runs after this one).
- user-prompt-submit: the memories relevant to the prompt, or nothing.
Both compute their answer in one read snapshot (WAL: another process's write lock never holds it up), answer
with `hookSpecificOutput.additionalContext` (or print nothing), and only then record what they gave (recall_log,
the compaction, the report delivered), waiting for a lock briefly, else deferring it (`db/deferred.py`). The
prompt hook uses the model only when it is already loaded in this process (the warm worker); otherwise the text
side answers alone and `recall_log` says so.
"""
# Lazy imports: the store and recall load when a recall hook runs (never for a capture hook).
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from subcog_store.claude_code.events import HookEvent
from subcog_store.config import is_postgres
from subcog_store.clock import iso
from subcog_store.worker.protocol import HOOK_BUDGET_SECS
from subcog_store.db import deferred, hook_state
from subcog_store.db.connection import read_snapshot
from subcog_store.model import provider
from subcog_store.claude_code.report import markdown

log = logging.getLogger("subcog_store.hook.recall")
REPORT_HEADER = "subcog memory report from before this compaction:"
SOURCES = ("startup", "resume", "clear", "compact", "fork")
MAX_PROMPT_CHARS = 4000
BOOKKEEPING_WAIT_SECS = 0.25   # how long the writes after the answer wait for another process's lock


def _output(event: str, text: str) -> str:
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=False)


def _open(db: Path, environ: Mapping[str, str] | None = None, embedders: str = provider.LOCAL,
          deadline: float | None = None):
    """The store's core, or None when there is none yet (a hook never creates one just to read it). The core, not
    the `Store` facade: recall needs no capture path (the facade imports the write service, policies, plugins).
    `deadline` (`time.monotonic()`): a PostgreSQL server is not waited for past it (postgres/deadline.py)."""
    from subcog_store.core import Core

    if not is_postgres(db) and not Path(db).exists():
        return None
    return Core(db, fetch_model=False, environ=environ, embedders=embedders, deadline=deadline)


def _event(name: str, payload: HookEvent | Mapping) -> HookEvent:
    """The hook's event (a decoded input object is accepted too: tests and benchmarks pass one)."""
    return payload if isinstance(payload, HookEvent) else HookEvent.from_payload(name, payload)


def _begin(event: HookEvent, db: Path, store_factory, environ: Mapping[str, str] | None, embedders: str,
           budget_secs: float) -> tuple[str | None, str, float, object]:
    """What both recall hooks start from: the session id, the project's domain, the start time, the store (which
    stops waiting for a PostgreSQL server at the end of the hook's budget)."""
    deadline = time.monotonic() + budget_secs
    store = store_factory(db) if store_factory else _open(db, environ, embedders, deadline)
    return event.session_id, event.domain(environ), time.perf_counter(), store


def session_start(payload: HookEvent | Mapping, db: Path, store_factory=None, on_answer=None,
                  environ: Mapping[str, str] | None = None, embedders: str = provider.LOCAL,
                  budget_secs: float = HOOK_BUDGET_SECS) -> str:
    """The additionalContext for a new context window (see the module docstring); "" for nothing.
    `on_answer(output)`: called with the output before the bookkeeping is written (see `_answer`);
    `budget_secs`: what is left of the hook's budget (the bookkeeping never waits past it)."""
    from subcog_store.recall import inject

    event = _event("session-start", payload)
    source = event.source
    if source not in SOURCES:
        return ""
    session_id, domain, started, store = _begin(event, db, store_factory, environ, embedders, budget_secs)
    if store is None:
        return ""
    with store:
        if not store.settings.recall_enabled and source != "compact":
            return ""
        parts, budget, writes = [], int(store.settings.recall_start_tokens), []
        _check_code(store, event, domain)
        with read_snapshot(store.con):   # one snapshot: another process's write lock never holds the answer up
            if source == "compact" and session_id:
                report, writes = _report(store, session_id), [inject.compaction(store, session_id)]
                if report:
                    parts.append(report.text)
                    budget -= inject.tokens(report.text)
                    writes.append(report.delivered)
            recall = inject.Recall(method="index", reason="recall disabled")
            if store.settings.recall_enabled:
                header = ("Other memories of this project (subcog; `subcog-store show <URN>` for more):" if parts
                          else None)
                recall = inject.start_index(store, domain, session_id, budget_tokens=max(0, budget), header=header,
                                            pending=writes)
                if recall.text:
                    parts.append(recall.text)
        recall.text = "\n\n".join(parts)
        out = _answer(on_answer, "SessionStart", recall.text)
        writes.append(inject.log_row(store, recall, hook=f"session-start:{source}", domain=domain,
                                     session_id=session_id, query=None, started=started))
        _bookkeeping(store, writes, started, budget_secs)
    return out


def _check_code(store, event: HookEvent, domain: str) -> None:
    """The memories whose cited code changed are marked before the index is built (bounded, fail open)."""
    from subcog_store.code.verify import check_at_start

    check_at_start(store, event.cwd, domain)


def _answer(on_answer, event: str, text: str) -> str:
    """The hook's output, handed to `on_answer` first when there is one (in process it is printed then, in the
    worker sent: the answer goes out before any write that may wait for another process's lock)."""
    out = _output(event, text)
    if on_answer is not None:
        on_answer(out)
    return out


def _bookkeeping(store, writes: list, started: float, budget_secs: float) -> None:
    """Write what the hook gave (recall_log, the compaction, the report delivered): waiting for another process's
    lock at most BOOKKEEPING_WAIT_SECS and never past the hook's budget, else deferred to the next hook."""
    left = budget_secs - (time.perf_counter() - started)
    deferred.write_or_defer(store.con, store.path, writes, min(BOOKKEEPING_WAIT_SECS, left))


@dataclass
class _Report:
    text: str
    delivered: deferred.Write   # the write that marks it delivered


def _report(store, session_id: str) -> _Report | None:
    """The last undelivered capture report of the session (not given while the store was locked either), and the
    write that marks it delivered: it is given once."""
    found = hook_state.undelivered_report(store.con, session_id)
    if found is None or any(w.name == "mark_hook_run_delivered" and w.params.get("upto", -1) >= found[0]
                            for w in deferred.spooled(store.path, session_id)):
        return None
    run_id, report = found
    return _Report(REPORT_HEADER + "\n" + markdown(report),
                   deferred.report_delivered(session_id, run_id, iso(store.clock())))


def user_prompt_submit(payload: HookEvent | Mapping, db: Path, use_model: bool = False, store_factory=None,
                       on_answer=None, environ: Mapping[str, str] | None = None,
                       embedders: str = provider.LOCAL, budget_secs: float = HOOK_BUDGET_SECS) -> str:
    """The additionalContext for a prompt: relevant memories past the abstain gate, or "" (most prompts);
    `on_answer`, `budget_secs` as for `session_start`."""
    from subcog_store.errors import InvalidInput
    from subcog_store.recall import inject

    event = _event("user-prompt-submit", payload)
    prompt = event.prompt
    session_id, domain, started, store = _begin(event, db, store_factory, environ, embedders, budget_secs)
    if store is None:
        return ""
    with store:
        if not store.settings.recall_enabled:
            return ""
        if not isinstance(prompt, str) or not prompt.strip():
            recall = inject.Recall(reason="empty prompt")
        else:
            try:
                with read_snapshot(store.con):   # another process's write lock never holds the answer up
                    recall = inject.prompt_context(store, prompt[:MAX_PROMPT_CHARS], domain, session_id,
                                                   use_model=use_model or store.vectors.loaded)
            except InvalidInput as e:   # all stopwords, punctuation, a lone surrogate
                recall = inject.Recall(reason=f"nothing to search: {e}")
        out = _answer(on_answer, "UserPromptSubmit", recall.text)
        _bookkeeping(store, [inject.log_row(store, recall, hook="user-prompt-submit", domain=domain,
                                            session_id=session_id, query=prompt if isinstance(prompt, str) else None,
                                            started=started)], started, budget_secs)
    return out
