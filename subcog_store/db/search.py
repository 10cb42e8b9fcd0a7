"""The reads behind search and the text tier: the nearest vectors of a domain (or of one namespace), and BM25 over
the full-text index (`memories_fts`)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from subcog_store.db.connection import Error
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw


def nearest(con: "apsw.Connection", embedding: bytes, domain: str, k: int, namespace: str | None = None
            ) -> list[tuple[str, float]]:
    """(id, cosine) of the k nearest active memories of a domain, or of one namespace of it, nearest first."""
    params = {"embedding": embedding, "k": k, "domain": domain}
    if namespace:   # one partition: the semantic tier's exact scan
        return [(r[0], float(r[2])) for r in con.execute(q("find_semantic_neighbours"),
                                                          {**params, "namespace": namespace})]
    return [(mid, float(sim)) for mid, sim in con.execute(q("search_knn_domain"), params)]


def searchable(con: "apsw.Connection", domain: str, include_all: bool) -> bool:
    """Whether a domain holds a memory search can return (an active one, or any with `include_all`)."""
    return bool(con.execute(q("domain_searchable"), {"domain": domain, "all": int(include_all)}).fetchone()[0])


def text_matches(con: "apsw.Connection", fts_query: str, domain: str, namespace: str | None, include_all: bool,
                 k: int) -> list[str]:
    """Ids of a domain's memories matching an FTS5 query, best BM25 first (active ones, or all with
    `include_all`)."""
    return [mid for mid, _ in con.execute(q("search_text"), {"query": fts_query, "domain": domain,
                                                              "namespace": namespace, "all": int(include_all),
                                                              "k": k})]


def text_neighbours(con: "apsw.Connection", fts_query: str, namespace: str, domain: str, k: int
                    ) -> list[tuple[str, str]]:
    """(id, content) of a scope's active memories matching an FTS5 query, best BM25 first (the text tier)."""
    return [(mid, text) for mid, text, _ in con.execute(q("find_text_neighbours"), {
        "query": fts_query, "namespace": namespace, "domain": domain, "k": k})]


class Candidate(NamedTuple):
    """What the ranking reads of a candidate memory (a `db.memories.Memory` has the same attributes)."""

    id: str
    content: str
    status: str
    successor_id: str | None


def candidates(con: "apsw.Connection", ids: list[str]) -> dict[str, Candidate]:
    """The candidates with these ids (any status), by id: their text, status and successor, without the rest of
    the row (search loads whole memories only for the hits it returns)."""
    if not ids:
        return {}
    return {r[0]: Candidate(*r) for r in con.execute(q("search_candidates"), {"ids": json.dumps(ids)})}


def term_counts(con: "apsw.Connection", terms: list[str]) -> list[tuple[str, int, int]]:
    """(term, memories holding it, memories in all) for each of `terms` (the full-text index's vocabulary)."""
    return con.execute(q("term_document_counts"), {"terms": json.dumps(terms)}).fetchall()


def nearest_current(con: "apsw.Connection", embedding: bytes, domain: str, k: int, candidates: int
                    ) -> list[tuple[str, str, str, str, float]]:
    """(id, namespace, content, created_at, cosine) of the k nearest current memories of a domain, every
    namespace (active, not outdated by a successor): the changed-facts-by-subject detector's candidates. The
    `candidates` nearest by sign bits are re-scored exactly (a top-k heuristic: dedup/outdated.py); a store
    without sign bits (opened before migration 008) gets the exact float scan."""
    params = {"embedding": embedding, "k": k, "domain": domain, "candidates": candidates}
    try:
        return con.execute(q("outdated_candidates"), params).fetchall()
    except Error as e:   # before migration 008 (PostgreSQL: 012), opened read-only
        if "memory_bits" not in str(e) and "subcog_sign_bits" not in str(e):
            raise
    return con.execute(q("outdated_candidates_exact"), params).fetchall()
