"""Keeping a session's text searchable during a capture: its turns stored (redacted, each text once per project,
linked to the session), then embedded while the hook's budget lasts. A text left without its vector is embedded
by a later capture (any session), and found by its words meanwhile.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable, Sequence

from subcog_store.clock import iso
from subcog_store.db import session_text
from subcog_store.db.connection import Error as DbError
from subcog_store.extraction.session_chunks import turn_chunks

if TYPE_CHECKING:
    from subcog_store.extraction.transcript import AssistantText
    from subcog_store.core import Core

__all__ = ["keep_session_text", "keep_text_of_run", "EMBED_BATCH"]

log = logging.getLogger("subcog_store.hook.session_text")
EMBED_BATCH = 32


def keep_session_text(core: "Core", domain: str, session_id: str | None, texts: Sequence["AssistantText"],
                      deadline: float, clock: Callable[[], float] = time.monotonic) -> dict:
    """Store the turns of `texts` and embed what waits for a vector until `deadline` (on `clock`); returns what it
    did. Never raises for the model (no model: the words alone find the text)."""
    added = session_text.store_chunks(core.con, domain, session_id, turn_chunks(texts), iso(core.clock()))
    embedded = 0
    while clock() < deadline:
        rows = session_text.to_embed(core.con, EMBED_BATCH)
        if not rows:
            break
        embedder = core.vectors.embedder
        if embedder is None:
            break
        try:
            vectors = embedder.embed_batch([content for _, _, content in rows])
        except Exception as e:  # noqa: BLE001 - text search still works; a later run tries again
            log.warning("session text not embedded: %s: %s", type(e).__name__, e)
            break
        session_text.store_vectors(core.con, [(i, d, v) for (i, d, _), v in zip(rows, vectors)])
        embedded += len(rows)
    return {"added": added, "embedded": embedded}


def keep_text_of_run(core: "Core", domain: str, session_id: str | None, texts: Sequence["AssistantText"],
                     deadline: float, clock: Callable[[], float] = time.monotonic) -> None:
    """`keep_session_text` for a capture hook: a failure (locked, full) costs only the search of this text."""
    if not core.settings.session_text_enabled:
        return
    try:
        done = keep_session_text(core, domain, session_id, texts, deadline, clock)
        log.info("session text: %d new, %d embedded", done["added"], done["embedded"])
    except (DbError, OSError) as e:
        log.warning("session text not kept: %s: %s", type(e).__name__, e)
