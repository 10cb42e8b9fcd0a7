"""Search the sessions' own text (migration 015) and rank it below the curated memories.

Nothing a session said is out of reach: a question extraction missed still finds its answer in the turn that
holds it. The session texts are searched as the memories are (the vec0 KNN of the query's embedding and FTS5 over
its rarest content words, `recall.search.rarest`; each candidate scored by recall.fusion: cosine plus the
IDF-weighted coverage of all the query's content words, the IDF from the session texts' own index), then merged
after the memories: a session text comes before a memory only when it scores higher (`below_memories`), so at
equal evidence the curated memory wins; no constant of its own. The prompt hook offers one only when it clears the
memories' gate and also holds the prompt's words (recall/inject.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from subcog_store.db import session_text, vectors
from subcog_store.db.connection import read_snapshot
from subcog_store.recall.scopes import search_with_user_scope
from subcog_store.recall import fusion
from subcog_store.recall.query import content_of, terms
from subcog_store.recall.search import CANDIDATES, clean_query, held_words, rarest
from subcog_store.text.textsim import significant_tokens

if TYPE_CHECKING:
    from subcog_store.recall.search import Hit
    from subcog_store.core import Core

__all__ = ["SessionHit", "Found", "AllResults", "search_session_text", "below_memories", "search_all", "excerpt"]

EXCERPT_CHARS = 300  # what the prompt hook shows of a session text: the passage that matches the prompt


@dataclass
class SessionHit:
    """One session text found."""

    id: int
    domain: str
    content: str
    session_id: str | None
    role: str
    said_at: str | None
    similarity: float | None = None   # cosine of query and text (vector side)
    text_match: float = 0.0           # share of the query's significant words the text holds
    coverage: float = 0.0             # IDF-weighted share of the query's content words the text holds
    vector_rank: int | None = None
    text_rank: int | None = None
    score: float = 0.0

    @property
    def ref(self) -> str:
        """Where it comes from, as shown: `session:<id>#<text id>`."""
        return f"session:{self.session_id or '?'}#{self.id}"


@dataclass
class Found:
    """One result of `search_all`: a memory hit or a session text, with its text."""

    kind: str                       # memory | session
    text: str
    ref: str                        # the memory's URN, or the session text's reference
    similarity: float | None
    hit: "Hit | SessionHit"


@dataclass
class AllResults:
    """What `search_all` found, in order, and how (as `SearchResult.method` / `note` of the memory search)."""

    items: list[Found]
    method: str
    note: str | None


def search_session_text(store: "Core", query: str, *, domain: str, limit: int = 8, use_model: bool = True,
                        exclude_session: str | None = None) -> list[SessionHit]:
    """The `limit` session texts of `domain` that best match `query` (scored as recall.fusion scores memories)."""
    text = clean_query(query)
    vector = None
    if use_model and store.settings.dedup_semantic_enabled:
        try:
            vector = store.vectors.embed(text)
        except Exception:  # noqa: BLE001 - the text side still answers
            vector = None
    words = list(dict.fromkeys(terms(content_of(text))))
    with read_snapshot(store.con):
        vector_ids = session_text.knn(store.con, vector, domain, CANDIDATES) if vector is not None else []
        counts = session_text.term_counts(store.con, words) if words else []
        rare = rarest(counts)   # as the memories' search: the rarest words held by some text
        fts = " OR ".join('"' + w.replace('"', '""') + '"' for w in rare)
        text_ids = session_text.bm25(store.con, fts, domain, CANDIDATES) if rare else []
        rows = session_text.by_ids(store.con, list(dict.fromkeys([i for i, _ in vector_ids] + text_ids)))
        weights = {t: fusion.idf(d, n) for t, d, n in counts}
        hits: dict[int, SessionHit] = {}
        for rank, (i, sim) in enumerate(vector_ids, start=1):
            if i in rows:
                hits[i] = _hit(rows[i], similarity=sim, vector_rank=rank)
        for rank, i in enumerate(text_ids, start=1):
            if i in rows:
                h = hits.setdefault(i, _hit(rows[i]))
                h.text_rank = h.text_rank or rank
                blob = session_text.vector_of(store.con, i) if h.similarity is None and vector is not None else None
                if blob:
                    h.similarity = vectors.similarity(blob, vector)
    significant = significant_tokens(text)
    kept = [h for h in hits.values() if not (exclude_session and h.session_id == exclude_session)]
    for h in kept:
        h.coverage = fusion.coverage(weights, held_words(h.content))   # = set(terms(content)) for the prompt's terms
        h.score = fusion.score(h.similarity, h.coverage)
    kept.sort(key=lambda h: -h.score)
    for h in kept[:limit]:   # shown and gated, never ranked: only the texts returned need it
        h.text_match = len(significant & significant_tokens(h.content)) / len(significant) if significant else 0.0
    return kept[:limit]


def _hit(row: dict, **kw) -> SessionHit:
    return SessionHit(row["id"], row["domain"], row["content"], row["session_id"], row["role"], row["said_at"], **kw)


def below_memories(memories: Sequence["Hit"], sessions: Sequence[SessionHit], limit: int) -> list[Found]:
    """Memories in their order; each session text placed before the first memory that scores lower than it (the
    same fused score), so at equal evidence the memory comes first; `limit` results."""
    pending = sorted(sessions, key=lambda s: -s.score)
    out: list[Found] = []
    for m in memories:
        while pending and pending[0].score > m.score:
            out.append(_session(pending.pop(0)))
        out.append(Found("memory", m.memory.content, m.memory.urn, m.similarity, m))
    out += [_session(s) for s in pending]
    return out[:limit]


def _session(s: SessionHit) -> Found:
    return Found("session", s.content, s.ref, s.similarity, s)


def search_all(store: "Core", query: str, *, domain: str, limit: int = 8, use_model: bool = True,
               namespace: str | None = None) -> AllResults:
    """The memories of `domain` (and the user scope) and, below them, the sessions' text (see the module
    docstring); a namespace filter leaves the session texts out (they have no namespace)."""
    memories = search_with_user_scope(store, query, domain=domain, limit=limit, use_model=use_model,
                                      namespace=namespace)
    sessions = [] if namespace or not store.settings.session_text_enabled else search_session_text(
        store, query, domain=domain, limit=limit, use_model=use_model and memories.method == "hybrid")
    return AllResults(below_memories(memories.hits, sessions, limit), memories.method, memories.note)


_SENTENCE = re.compile(r"(?<=[.!?。])\s+|\n+")


def excerpt(content: str, query: str, width: int = EXCERPT_CHARS) -> str:
    """The passage of a session text that holds most of the query's significant words, about `width` long."""
    parts = [p.strip() for p in _SENTENCE.split(content) if p.strip()]
    if not parts:
        return ""
    words = significant_tokens(query)
    scores = [len(words & significant_tokens(p)) for p in parts]
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    lo = hi = best
    text = parts[best]
    while len(text) < width and (lo > 0 or hi < len(parts) - 1):
        if hi < len(parts) - 1:
            hi += 1
        elif lo > 0:
            lo -= 1
        text = " ".join(parts[lo:hi + 1])
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
