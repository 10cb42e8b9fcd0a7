"""Reading stored vectors: a memory's own (searchable or parked), a scope's, and the ones that need work (no vector,
stale sign bits). The writes are `db/memories.py`'s; the nearest-neighbour searches `db/knn.py`'s and
`db/search.py`'s.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterator

from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw
    import numpy


def searchable(con: "apsw.Connection", seq: int) -> bytes | None:
    """The searchable vector of a memory (by seq), or None."""
    row = con.execute(q("select_vector"), {"seq": seq}).fetchone()
    return bytes(row[0]) if row else None


def of_memory(con: "apsw.Connection", memory_id: str) -> bytes | None:
    """A memory's stored vector by id: the searchable one, else the one parked when it was retired."""
    row = con.execute(q("vector_of"), {"id": memory_id}).fetchone()
    return bytes(row[0]) if row and row[0] else None


def similarity(blob: bytes, vector: "numpy.ndarray") -> float:
    """A stored vector's dot product with a query vector (the cosine: both are unit vectors). numpy is imported on
    the first call, not with this module: a search without a query vector (a hook in process, text side only) never
    pays its import (~100 ms of CPU)."""
    import numpy as np

    return float(np.frombuffer(blob, dtype=np.float32) @ vector)


def of_memories(con: "apsw.Connection", memory_ids: list[str]) -> dict[str, bytes]:
    """Several memories' stored vectors by id (as `of_memory`, one query); a memory without one is absent."""
    if not memory_ids:
        return {}
    return {mid: bytes(blob) for mid, blob in con.execute(q("vectors_of"), {"ids": json.dumps(memory_ids)}) if blob}


def in_scope(con: "apsw.Connection", namespace: str, domain: str) -> Iterator[tuple[int, bytes]]:
    """(seq, vector) of every searchable vector of a scope."""
    for seq, blob in con.execute(q("scope_vectors"), {"namespace": namespace, "domain": domain}):
        yield seq, blob


def missing(con: "apsw.Connection") -> list[str]:
    """Active memories without a searchable vector (`reembed` embeds them; `doctor` reports them)."""
    return [str(r[0]) for r in con.execute(q("active_without_vector"))]


def stale_bits(con: "apsw.Connection") -> list[int]:
    """Seqs whose sign bits are missing, stale or left over (`reembed` derives them again)."""
    return [r[0] for r in con.execute(q("bits_mismatch"))]


def written_since(con: "apsw.Connection", seq: int, namespace: str, domain: str, embedding: bytes
                  ) -> list[tuple[str, str, float]]:
    """(id, content, cosine to `embedding`) of the active memories of a scope written after row `seq` (a few
    rows: the re-check of the semantic tier under the write lock)."""
    rows = con.execute(q("new_semantic_neighbours"), {"after": seq, "namespace": namespace, "domain": domain,
                                                      "embedding": embedding})
    return [(i, c, float(sim)) for i, c, sim in rows]
