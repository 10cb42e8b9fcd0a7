"""Keeping a session's text searchable: a capture hook stores its turns (redacted, each text once per project,
linked to the session; found by their words at once) and embeds nothing, so a capture costs what it did before
the sessions' text was kept. Their vectors come later, off the hook's path, from `embed_waiting`: the warm worker
between requests (worker/backlog.py) and `subcog-store reembed`. A text waiting for its vector is never lost.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Sequence

from subcog_store.clock import iso
from subcog_store.db import session_text
from subcog_store.db.connection import Error as DbError
from subcog_store.extraction.session_chunks import turn_chunks

if TYPE_CHECKING:
    from subcog_store.extraction.transcript import AssistantText
    from subcog_store.core import Core

__all__ = ["keep_session_text", "keep_text_of_run", "embed_waiting", "waiting", "EMBED_BATCH"]

log = logging.getLogger("subcog_store.hook.session_text")
EMBED_BATCH = 16   # texts embedded at once (about 300 word pieces each): a request waits at most one batch


def keep_session_text(core: "Core", domain: str, session_id: str | None, texts: Sequence["AssistantText"]) -> int:
    """Store the turns of `texts` (a text the domain already holds is left alone); returns how many were new."""
    return session_text.store_chunks(core.con, domain, session_id, turn_chunks(texts), iso(core.clock()))


def embed_waiting(core: "Core", go_on: Callable[[], bool], batch: int = EMBED_BATCH) -> int:
    """Embed the texts still waiting for a vector, oldest first, one batch at a time while `go_on()` says so
    (asked before each batch); returns how many were embedded. No model: none (the words still find them)."""
    embedder = core.vectors.embedder
    embedded = 0
    while embedder is not None and go_on():
        rows = session_text.to_embed(core.con, batch)
        if not rows:
            break
        vectors = embedder.embed_batch([content for _, _, content in rows])
        session_text.store_vectors(core.con, [(i, d, v) for (i, d, _), v in zip(rows, vectors)])
        embedded += len(rows)
    return embedded


def waiting(core: "Core") -> int:
    """How many texts of the store wait for their vector."""
    return session_text.waiting(core.con)


def keep_text_of_run(core: "Core", domain: str, session_id: str | None, texts: Sequence["AssistantText"]) -> None:
    """`keep_session_text` for a capture hook: a failure (locked, full) costs only the search of this text."""
    if not core.settings.session_text_enabled:
        return
    try:
        log.info("session text: %d new (embedded later)", keep_session_text(core, domain, session_id, texts))
    except (DbError, OSError) as e:
        log.warning("session text not kept: %s: %s", type(e).__name__, e)

