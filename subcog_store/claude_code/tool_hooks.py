"""The tool hooks of Claude Code: `post-tool-use` (a file was read or edited) and `post-tool-use-failure` (a
command failed). Each answers `hookSpecificOutput.additionalContext` (PostToolUse / PostToolUseFailure; the
client appends it after the tool's result, so the next request carries it) with the memories of `code.touch`,
or prints nothing; what it gave is recorded in `recall_log` (hook `post-tool-use:Read`, ...; the query
fingerprint is the path's or the error's, never its text).

Input (Claude Code 2.1.328): `tool_name`, `tool_input` (`file_path`, or `notebook_path`), `cwd`, `session_id`;
a failure adds `error` (text) and `is_interrupt` (`events.HookEvent` keeps them).
"""
# Lazy imports: the store and recall load when a tool hook runs.
from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

from subcog_store.claude_code.events import HookEvent
from subcog_store.claude_code.recall_hooks import _answer, _begin, _bookkeeping, _event
from subcog_store.model import provider
from subcog_store.worker.protocol import HOOK_BUDGET_SECS

log = logging.getLogger("subcog_store.hook.tools")
READ_TOOLS = frozenset({"Read"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
COMMAND_TOOLS = frozenset({"Bash"})
MAX_ERROR_CHARS = 64 * 1024


def code_recall_on(settings) -> bool:
    """Recall on touching a file and on a failed command: only with recall and the code features both on."""
    return bool(settings.recall_enabled and settings.code_enabled)


def post_tool_use(payload: HookEvent | Mapping, db: Path, store_factory=None, on_answer=None,
                  environ: Mapping[str, str] | None = None, embedders: str = provider.LOCAL,
                  budget_secs: float = HOOK_BUDGET_SECS) -> str:
    """The memories citing the file a Read or an edit touched, or ""; the arguments as `recall_hooks`'."""
    from subcog_store.code import touch
    from subcog_store.recall import inject
    from subcog_store.code.tree import code_root

    event = _event("post-tool-use", payload)
    tool = event.tool_name
    if tool not in READ_TOOLS | EDIT_TOOLS or event.file_path is None:
        return ""
    root = code_root(event.cwd)
    if root is None:
        log.info("post-tool-use: no project directory in the hook input")
        return ""
    rel = touch.relative_to(root, event.file_path)
    session_id, domain, started, store = _begin(event, db, store_factory, environ, embedders, budget_secs)
    if store is None:
        return ""
    with store:
        if not code_recall_on(store.settings):
            return ""
        if rel is None:
            recall = inject.Recall(method="touch", reason="the file is outside the project")
        else:
            recall = touch.file_context(store, root, domain, session_id, rel, edited=tool in EDIT_TOOLS)
        out = _answer(on_answer, "PostToolUse", recall.text)
        _bookkeeping(store, [inject.log_row(store, recall, hook=f"post-tool-use:{tool}", domain=domain,
                                            session_id=session_id, query=rel, started=started)], started, budget_secs)
    return out


def post_tool_use_failure(payload: HookEvent | Mapping, db: Path, use_model: bool = False, store_factory=None,
                          on_answer=None, environ: Mapping[str, str] | None = None,
                          embedders: str = provider.LOCAL, budget_secs: float = HOOK_BUDGET_SECS) -> str:
    """The memories that explain a failed command's error, or ""; the arguments as `recall_hooks`'."""
    from subcog_store.code import touch
    from subcog_store.errors import InvalidInput
    from subcog_store.recall import inject

    event = _event("post-tool-use-failure", payload)
    if event.tool_name not in COMMAND_TOOLS or event.is_interrupt or not event.error or not event.error.strip():
        return ""
    error = event.error[-MAX_ERROR_CHARS:]
    session_id, domain, started, store = _begin(event, db, store_factory, environ, embedders, budget_secs)
    if store is None:
        return ""
    with store:
        if not code_recall_on(store.settings):
            return ""
        try:
            recall = touch.error_context(store, domain, session_id, error, use_model=use_model or store.vectors.loaded)
        except InvalidInput as e:   # nothing searchable in it
            recall = inject.Recall(method="error", reason=f"nothing to search: {e}")
        out = _answer(on_answer, "PostToolUseFailure", recall.text)
        _bookkeeping(store, [inject.log_row(store, recall, hook=f"post-tool-use-failure:{event.tool_name}",
                                            domain=domain, session_id=session_id, query=touch.error_query(error),
                                            started=started)], started, budget_secs)
    return out
