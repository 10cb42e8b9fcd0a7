"""Recall on touch: the memories that matter when the assistant opens or edits a file, or a command fails.

- a file read or edited: the current memories of the project that cite it (the file, or a symbol or value in
  it), most citations of it first, at most SUBCOG_RECALL_TOUCH_LIMIT within SUBCOG_RECALL_TOUCH_TOKENS; an edited
  file's citations are checked first (a value the edit changed marks its memory, which then stays out);
- a command that failed: the memories that explain its error, through the prompt hook's search and abstain gate
  (the error's last lines as the query).
A memory is given once per session and within the session's token budget (`recall.inject`); nothing when none
fits. Memories marked by the code, or outdated by a newer memory, are not current: they stay out.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from subcog_store.code.tree import WorkingTree
from subcog_store.code.verify import check_paths
from subcog_store.db import citations
from subcog_store.db import locks
from subcog_store.db.memories import Memory
from subcog_store.recall import inject

if TYPE_CHECKING:
    from subcog_store.core import Core

log = logging.getLogger("subcog_store.code")
FILE_HEADER = "Memories from earlier sessions of this project about {path} (subcog):"
ERROR_HEADER = "Memories from earlier sessions of this project that may explain this error (subcog):"
CANDIDATES = 20
ERROR_LINES, ERROR_CHARS = 20, 1500     # the part of a command's error searched (its end says what failed)
CHECK_SECS = 0.5                        # an edited file's citations are checked within this


def relative_to(root: Path, file_path: str) -> str | None:
    """A touched file's path relative to the project (None: outside it)."""
    try:
        real = os.path.realpath(os.path.join(root, file_path))
        rel = os.path.relpath(real, os.path.realpath(root))
    except (OSError, ValueError):
        return None
    return None if rel == ".." or rel.startswith("../") or rel == "." else rel.replace(os.sep, "/")


def file_context(store: "Core", root: Path, domain: str, session_id: str | None, rel: str,
                 edited: bool = False) -> inject.Recall:
    """The current memories that cite the file `rel` of the project (see the module docstring)."""
    s = store.settings
    if edited:
        _check_edit(store, root, domain, rel)
    state = inject.SessionState(store, session_id)
    budget = state.budget(store, int(s.recall_touch_tokens))
    if budget <= 0 or int(s.recall_touch_limit) <= 0:
        return inject.Recall(method="touch", reason="token budget used up")
    rows = citations.citing_path(store.con, domain, rel, CANDIDATES)
    cited = [(Memory.from_row({k: v for k, v in r.items() if k != "cites"}), r["cites"]) for r in rows]
    recall = inject.Recall(method="touch")
    header = FILE_HEADER.format(path=rel)
    lines: list[str] = []
    for m, cites in [(m, cites) for m, cites in cited if not state.excluded(m)]:
        if len(lines) >= int(s.recall_touch_limit):
            break
        candidate = inject.line(m)
        if inject.tokens("\n".join([header, *lines, candidate])) > budget:
            recall.reason = "token budget"
            break
        lines.append(candidate)
        recall.memory_ids.append(m.id)
        recall.scores.append(float(cites))
    if lines:
        recall.text = "\n".join([header, *lines])
    elif recall.reason is None:
        recall.reason = ("no current memory cites this file" if not cited else
                         "every memory citing this file was given already")
    return recall


def _check_edit(store: "Core", root: Path, domain: str, rel: str) -> None:
    """An edited file's citations against its new text (bounded; a failure only logs)."""
    locks.at_most(store.con, CHECK_SECS)
    try:
        report = check_paths(store, WorkingTree(root, time.monotonic() + CHECK_SECS), domain, [rel])
        if report.marked or report.cleared:
            log.info("edit of a cited file: %d memories marked, %d cleared", len(report.marked),
                     len(report.cleared))
    except Exception as e:  # noqa: BLE001 - recall goes on with the marks as they were
        log.warning("edited file not checked: %s: %s", type(e).__name__, e)
    finally:
        locks.default(store.con)


def error_query(error: str) -> str:
    """The part of a command's error to search with: its last lines (where the cause is said)."""
    lines = [line for line in error.splitlines() if line.strip()]
    return "\n".join(lines[-ERROR_LINES:])[-ERROR_CHARS:]


def error_context(store: "Core", domain: str, session_id: str | None, error: str, use_model: bool
                  ) -> inject.Recall:
    """The memories that explain a failed command's error, past the prompt hook's abstain gate, or nothing."""
    query = error_query(error)
    if not query.strip():
        return inject.Recall(reason="empty error")
    recall = inject.prompt_context(store, query, domain, session_id, use_model=use_model, header=ERROR_HEADER)
    recall.method = f"error-{recall.method}" if recall.method else "error"
    return recall
