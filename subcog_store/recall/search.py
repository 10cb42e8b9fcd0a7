"""Search a domain's memories: the prompt's meaning and its rare words, current facts first.

Candidates are the vec0 KNN of the prompt's embedding (the prompt as typed: MiniLM reads a question better than its
keywords; in a long-lived process the same answer from the domain's vectors in memory, db/vectorcache.py) and the
FTS5 matches of the prompt's rarest content words (`recall.query`: no question words, no conversational frame;
`rarest`); each is scored by `recall.fusion` (cosine plus the IDF-weighted share of the
content words it holds). A memory outdated by a newer one (a changed fact) never ranks above its successor; one
whose cited code no longer bears it out (a mark of `code.verify`) ranks below every current one. Without the model
the text side answers alone (`method` says so). `extra_domains` searches more scopes beside the project's with the
same ranking (a user scope of preferences), each only when it holds a memory to return (vec0's KNN reads every chunk
of vectors whatever the domain asked, and the full-text query every match: an empty scope cost as much as a small
one); a lower-ranked source passes its weight to `fusion.score`. The ranking reads each candidate's text, status and
successor; whole memories are loaded for the hits returned.
"""
# Lazy imports: the secret patterns compile only when a hit is shown.
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from subcog_store.db import citations, memories as db_memories, search as db_search, vectors
from subcog_store.db.connection import read_snapshot
from subcog_store.db.memories import Memory
from subcog_store.errors import InvalidInput
from subcog_store.recall import fusion
from subcog_store.recall.query import WORD, content_of, terms
from subcog_store.text.namespaces import canonical_namespace
from subcog_store.text.textsim import significant_tokens

if TYPE_CHECKING:
    from subcog_store.core import Core as Store   # a Store has the same attributes

CANDIDATES = 50              # taken from each side
MAX_QUERY_CHARS = 4000       # a longer query is cut (the model reads 256 tokens anyway)
TEXT_TERMS = 4               # the full-text query asks for the rarest 4 content words (`rarest`; store_lab.py, TRAIN)


@dataclass
class Hit:
    """One memory found, with every component of its score."""

    memory: Memory                       # while ranking, its `db.search.Candidate` (text, status, successor)
    score: float = 0.0
    similarity: float | None = None      # cosine of query and memory (vector side)
    text_match: float | None = None      # share of the query's significant words the memory holds
    vector_rank: int | None = None
    text_rank: int | None = None
    coverage: float = 0.0                # IDF-weighted share of the prompt's content words the memory holds
    outdated_by: str | None = None       # the newer memory that changed this fact
    code_mark: str | None = None         # why the code it cites may no longer bear it out (ranked below current)
    source_weight: float = 1.0           # below 1 for a lower-ranked source

    @property
    def key(self) -> str:
        return self.memory.id

    def to_dict(self, explain: bool = False) -> dict:
        from subcog_store.text.redact import shown

        m = self.memory
        data = {"id": m.id, "urn": m.urn, "namespace": m.namespace, "content": shown(m.content),
                "score": round(self.score, 6), "created_at": m.created_at, "status": m.status}
        if self.outdated_by or m.successor_id:
            data["successor_id"] = m.successor_id
        if self.code_mark:
            data["possibly_outdated"] = self.code_mark
        if explain:
            data["components"] = {
                "similarity": None if self.similarity is None else round(self.similarity, 4),
                "vector_rank": self.vector_rank, "text_rank": self.text_rank,
                "text_match": None if self.text_match is None else round(self.text_match, 3),
                "coverage": round(self.coverage, 4), "importance": round(m.importance, 3),
                "outdated_by": self.outdated_by, "code_mark": self.code_mark}
        return data


@dataclass
class SearchResult:
    hits: list[Hit]
    method: str                          # hybrid | text
    note: str | None = None              # e.g. why the vector side did not run
    duration_ms: float = 0.0
    candidates: dict = field(default_factory=dict)
    vector_scores: list[float] = field(default_factory=list)   # the vector side's cosines, best first (the gate)


def clean_query(query: object) -> str:
    """The query as searched: text, valid UTF-8, whitespace folded, cut at MAX_QUERY_CHARS."""
    if not isinstance(query, str):
        raise InvalidInput("the query must be text")
    text = " ".join(query[: MAX_QUERY_CHARS * 2].split())[:MAX_QUERY_CHARS]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("the query is not valid UTF-8 (lone surrogate)") from None
    if not text:
        raise InvalidInput("the query is empty")
    return text


def search(store: "Store", query: str, *, domain: str, namespace: str | None = None, limit: int = 5,
           include_all: bool = False, exclude: Callable[[Memory], bool] | None = None, use_model: bool = True,
           now: float | None = None, extra_domains: Sequence[str] = ()) -> SearchResult:
    """The `limit` best memories of `domain` (and `extra_domains`) for `query` (see the module docstring).
    `exclude(memory)` True leaves a memory out (the current session's, those already injected); `use_model` False
    (or no model) searches the text side alone; `include_all` adds superseded, merged and deleted memories."""
    started = time.perf_counter()
    text = clean_query(query)
    ns = canonical_namespace(namespace) if namespace else None
    vector, note = _embed(store, text, use_model)
    words = list(dict.fromkeys(terms(content_of(text))))
    vector_ids: list[tuple[str, float]] = []
    text_ids: list[str] = []
    with read_snapshot(store.con):
        counts = db_search.term_counts(store.con, words) if words else []
        weights = {term: fusion.idf(docs, total) for term, docs, total in counts}
        rare = rarest(counts)
        for dom in dict.fromkeys([domain, *extra_domains]):
            if dom != domain and not db_search.searchable(store.con, dom, include_all):
                continue   # nothing to find, and each side would scan the whole index for it
            if vector is not None:
                vector_ids += _nearest(store, vector.astype("float32").tobytes(), dom, ns)
            if rare:
                fts = " OR ".join('"' + w.replace('"', '""') + '"' for w in rare)
                text_ids += db_search.text_matches(store.con, fts, dom, ns, include_all, CANDIDATES)
        vector_ids.sort(key=lambda pair: -pair[1])
        if include_all and vector is not None:
            vector_ids = _with_retired(store, vector, vector_ids, text_ids)
        ids = list(dict.fromkeys([mid for mid, _ in vector_ids] + text_ids))
        # the ranking reads a candidate's text, status and successor; `exclude` judges whole memories
        rows = db_memories.by_ids(store.con, ids) if exclude else db_search.candidates(store.con, ids)
        marks = citations.marks(store.con, ids)
        hits = _hits(store, vector, vector_ids, text_ids, rows)
        kept = [h for h in hits.values() if not (exclude and exclude(h.memory))]
        current = {mid for mid, m in rows.items() if m.status == "active"}
        for h in kept:
            h.coverage = fusion.coverage(weights, held_words(h.memory.content)) if weights else 0.0
            if h.memory.successor_id and (h.memory.successor_id in current or include_all):
                h.outdated_by = h.memory.successor_id
            h.code_mark = marks.get(h.memory.id)
        ranked = fusion.rank(kept)
        ranked.sort(key=lambda h: h.code_mark is not None)   # stable: a memory the code contradicts, below current
        found = _whole_memories(store, ranked[:limit])
    query_words = significant_tokens(text)
    for h in found:   # shown and gated, never ranked: only the hits returned need it
        held = significant_tokens(h.memory.content)
        h.text_match = len(query_words & held) / len(query_words) if query_words else 0.0
    return SearchResult(found, "hybrid" if vector is not None else "text", note,
                        (time.perf_counter() - started) * 1000, {"vector": len(vector_ids), "text": len(text_ids)},
                        [sim for _, sim in vector_ids])


def rarest(counts: Sequence[tuple[str, int, int]]) -> list[str]:
    """The words the text side queries: of the prompt's content words held by some memory, the TEXT_TERMS held
    by the fewest (the rarest, in the prompt's order among equals). A common word adds little evidence and most of
    the full-text query's cost (every memory holding it is scored); coverage still weighs every word."""
    held = [(docs, i, term) for i, (term, docs, _) in enumerate(counts) if docs > 0]
    return [term for _, _, term in sorted(held)[:TEXT_TERMS]]


def held_words(content: str) -> set[str]:
    """A memory's words as `coverage` looks them up: every word token, lower case. The prompt's weighed words are
    `terms` already (no stop or frame words), so a membership test here equals one in `set(terms(content))`
    without filtering each memory's words (most of the ranking's Python time at 10k memories)."""
    return {w.lower() for w in WORD.findall(content)}


def _embed(store: "Store", text: str, use_model: bool):
    """The prompt's vector, or None and why the text side answers alone."""
    if not use_model:
        return None, "model not loaded in this process: text side only"
    if not store.settings.dedup_semantic_enabled:
        return None, "semantic tier disabled: text side only"
    try:
        vector = store.vectors.embed(text)
    except Exception as e:  # noqa: BLE001 - the text side still answers
        return None, f"no vector side ({type(e).__name__})"
    if vector is None:
        return None, f"no model ({store.vectors.error or 'not loaded'}): text side only"
    return vector, None


def _nearest(store: "Store", embedding: bytes, domain: str, namespace: str | None) -> list[tuple[str, float]]:
    """The vector side's candidates: vec0's KNN, or the same answer from the domain's vectors held in memory by a
    long-lived process (db/vectorcache.py). Only a process that turned the caches on has imported db.bitcache
    (and numpy): a hook run in process imports neither for this."""
    bits = sys.modules.get("subcog_store.db.bitcache")
    if namespace is None and bits is not None and bits.enabled():
        from subcog_store.db import vectorcache

        found = vectorcache.nearest_cached(store.con, embedding, domain, CANDIDATES)
        if found is not None:
            return found
    return db_search.nearest(store.con, embedding, domain, CANDIDATES, namespace)


def _whole_memories(store: "Store", hits: list[Hit]) -> list[Hit]:
    """The hits with their whole memories in place of their candidate rows: one query for the hits returned, not
    for the ~80 candidates ranked (building whole memories nobody was shown was most of reading the rows). A hit
    whose memory was hard-deleted in between (PostgreSQL reads each statement's own snapshot) is dropped."""
    whole = db_memories.by_ids(store.con, [h.memory.id for h in hits if not isinstance(h.memory, Memory)])
    out = []
    for h in hits:
        if not isinstance(h.memory, Memory):
            if h.memory.id not in whole:
                continue
            h.memory = whole[h.memory.id]
        out.append(h)
    return out


def _hits(store: "Store", vector, vector_ids: list[tuple[str, float]], text_ids: list[str],
          memories: dict[str, "Memory | db_search.Candidate"]) -> dict[str, Hit]:
    """One Hit per candidate, with each side's rank; a text-side candidate gets its cosine from its vector."""
    hits: dict[str, Hit] = {}
    for rank, (mid, sim) in enumerate(vector_ids, start=1):
        if mid in memories and mid not in hits:
            hits[mid] = Hit(memories[mid], similarity=sim, vector_rank=rank)
    text_only = [mid for mid in dict.fromkeys(text_ids) if mid in memories and mid not in hits]
    blobs = vectors.of_memories(store.con, text_only) if vector is not None else {}
    for rank, mid in enumerate(text_ids, start=1):
        if mid not in memories:
            continue
        hit = hits.setdefault(mid, Hit(memories[mid]))
        hit.text_rank = hit.text_rank or rank
        if hit.similarity is None and mid in blobs:
            hit.similarity = vectors.similarity(blobs[mid], vector)
    return hits


def _with_retired(store: "Store", vector, vector_ids: list[tuple[str, float]], text_ids: list[str]
                  ) -> list[tuple[str, float]]:
    """Retired memories have no searchable vector: their parked one places them on the vector side too."""
    known = {mid for mid, _ in vector_ids}
    blobs = vectors.of_memories(store.con, [mid for mid in dict.fromkeys(text_ids) if mid not in known])
    extra = [(mid, vectors.similarity(blobs[mid], vector)) for mid in text_ids if mid not in known and mid in blobs]
    return sorted(vector_ids + extra, key=lambda pair: -pair[1])


def memories_ids(hits: Iterable[Hit]) -> list[str]:
    return [h.memory.id for h in hits]
