"""The `session_text` table group (migration 017): every session's text, searchable beside the memories.

One writer for its rows, their full-text index (triggers) and their vectors; the readers search.py needs.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable, Sequence

from subcog_store.db.connection import dict_rows, immediate
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw
    import numpy as np

    from subcog_store.extraction.session_chunks import Chunk

__all__ = ["store_chunks", "to_embed", "waiting", "store_vectors", "knn", "bm25", "by_ids", "counts", "vector_of",
           "term_counts"]


def _postgres(con: object) -> bool:
    """A PostgreSQL store (postgres/adapter.py): its schema has the tables (sql/postgresql/schema/008), but the
    queries here are SQLite's (FTS5, vec0), so the sessions' text is neither kept nor searched there yet."""
    return getattr(con, "dialect", "sqlite") != "sqlite"


def store_chunks(con: "apsw.Connection", domain: str, session_id: str | None, chunks: Iterable["Chunk"],
                 now: str) -> int:
    """Store the chunks of a session (a text the domain already holds is left alone); returns how many were new."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return 0
    added = 0
    with immediate(con):
        for c in chunks:
            con.execute(q("insert_session_text"), {
                "domain": domain, "session_id": session_id, "record_uuid": c.record_uuid, "role": c.role,
                "piece": c.piece, "content": c.content, "said_at": c.said_at, "now": now})
            added += con.changes()
    return added


def to_embed(con: "apsw.Connection", limit: int) -> list[tuple[int, str, str]]:
    """(id, domain, content) of texts still without a vector, oldest first."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return []
    return [tuple(r) for r in con.execute(q("session_text_to_embed"), {"limit": limit})]


def waiting(con: "apsw.Connection") -> int:
    """How many texts of the store still wait for their vector."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return 0
    return int(con.execute(q("session_text_waiting")).fetchone()[0])


def store_vectors(con: "apsw.Connection", rows: Sequence[tuple[int, str, "np.ndarray"]]) -> None:
    """The vectors of texts `to_embed` returned, in one transaction; a text another process embedded since
    (a worker and the in-process fallback on the same capture) keeps its vector."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return
    with immediate(con):
        for text_id, domain, vector in rows:
            con.execute(q("mark_session_text_embedded"), {"id": text_id})
            if con.changes():
                con.execute(q("insert_session_text_vector"), {"id": text_id, "domain": domain,
                                                               "embedding": vector.astype("float32").tobytes()})


def knn(con: "apsw.Connection", vector: "np.ndarray", domain: str, k: int) -> list[tuple[int, float]]:
    """(id, cosine) of the k texts of `domain` nearest to `vector`."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return []
    return [(int(i), float(s)) for i, s in con.execute(q("search_session_text_knn"), {
        "embedding": vector.astype("float32").tobytes(), "k": k, "domain": domain})]


def bm25(con: "apsw.Connection", fts_query: str, domain: str, k: int) -> list[int]:
    """Ids of the texts of `domain` best matching an FTS5 query, best first."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return []
    return [int(r[0]) for r in con.execute(q("search_session_text_fts"), {"query": fts_query, "domain": domain,
                                                                          "k": k})]


def by_ids(con: "apsw.Connection", ids: Sequence[int]) -> dict[int, dict]:
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return {}
    if not ids:
        return {}
    return {r["id"]: r for r in dict_rows(con.execute(q("session_text_by_ids"), {"ids": json.dumps(list(ids))}))}


def counts(con: "apsw.Connection", domain: str) -> dict:
    """How many texts the domain holds, and how many still wait for their vector."""
    return dict_rows(con.execute(q("count_session_text"), {"domain": domain}))[0]


def vector_of(con: "apsw.Connection", text_id: int) -> bytes | None:
    """The stored vector of a session text (float32 bytes), or None."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return
    row = con.execute(q("session_text_vector_of"), {"id": text_id}).fetchone()
    return row[0] if row and row[0] else None


def term_counts(con: "apsw.Connection", terms: Sequence[str]) -> list[tuple[str, int, int]]:
    """(term, session texts holding it, session texts in all) for each term."""
    if _postgres(con):   # the sessions' text is kept in SQLite stores only (see _postgres)
        return []
    return [(r[0], int(r[1]), int(r[2])) for r in con.execute(q("session_term_document_counts"),
                                                              {"terms": json.dumps(list(terms))})]
