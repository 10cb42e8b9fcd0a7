"""Maintenance: give active memories that lack a vector their embedding."""
from __future__ import annotations

from typing import TYPE_CHECKING

from subcog_store.db import memories as writer
from subcog_store.db.connection import immediate
from subcog_store.db.sqlfiles import q
from subcog_store.errors import SubcogError

if TYPE_CHECKING:
    from subcog_store.store import Store


def reembed(store: "Store", batch: int = 256) -> int:
    """Embed every active memory without a vector; returns how many were embedded."""
    if store.embedder is None:
        raise SubcogError(f"the model is not available: {store.embedder_error or 'semantic tier disabled'}")
    missing = [r[0] for r in store.con.execute(q("active_without_vector"))]
    done = 0
    for start in range(0, len(missing), batch):
        memories = [store.get(mid) for mid in missing[start:start + batch]]
        vectors = store.embedder.embed_batch([m.content for m in memories])
        with immediate(store.con):
            for memory, vector in zip(memories, vectors):
                if store.get(memory.id).status == "active":
                    writer.set_vector(store.con, memory.seq, memory.namespace, memory.domain, vector.tobytes())
                    done += 1
    return done
