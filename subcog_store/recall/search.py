"""Search a domain's memories: hybrid retrieval, current facts first.

The vec0 KNN of the query's embedding and FTS5 BM25 over its significant words are fused by reciprocal rank
(`W_VECTOR / (RRF_K + vector rank) + 1 / (RRF_K + text rank)`), then weighted by importance decayed with age
(`importance * 0.95 ** (age_days / 30)`, the original design's) and by recency. A memory outdated by a newer
one (a changed fact) never ranks above its successor. Without the model the text side answers alone (`method`
says so).
"""
# Lazy imports: the secret patterns compile only when a hit is shown.
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from subcog_store.clock import parse_iso
from subcog_store.db.connection import dict_rows, read_snapshot
from subcog_store.db.memories import Memory
from subcog_store.db.sqlfiles import q
from subcog_store.errors import InvalidInput
from subcog_store.text.namespaces import canonical_namespace
from subcog_store.text.textsim import fts_query, significant_tokens

if TYPE_CHECKING:
    from subcog_store.store import Store

RRF_K = 1                    # rank fusion: chosen with W_VECTOR on the train split of bench/recall/dataset
W_VECTOR = 5.0               # the vector side counts five times the text side (a shared stray word is weak evidence)
CANDIDATES = 50              # taken from each side before fusion
DECAY_BASE, DECAY_DAYS = 0.95, 30.0
RECENCY_HALF_LIFE_DAYS = 180.0
W_IMPORTANCE = 0.5           # score x (1 + W_IMPORTANCE * (decayed importance - 0.5))
W_RECENCY = 0.1              # score x (1 + W_RECENCY * recency)
MAX_QUERY_CHARS = 4000       # a longer query is cut (the model reads 256 tokens anyway)


@dataclass
class Hit:
    """One memory found, with every component of its score."""

    memory: Memory
    score: float = 0.0
    similarity: float | None = None      # cosine of query and memory (vector side)
    text_match: float | None = None      # share of the query's significant words the memory holds
    vector_rank: int | None = None
    text_rank: int | None = None
    rrf: float = 0.0
    importance: float = 0.0              # decayed with age
    recency: float = 0.0
    outdated_by: str | None = None       # the newer memory that changed this fact

    def to_dict(self, explain: bool = False) -> dict:
        from subcog_store.text.redact import shown

        m = self.memory
        data = {"id": m.id, "urn": m.urn, "namespace": m.namespace, "content": shown(m.content),
                "score": round(self.score, 6), "created_at": m.created_at, "status": m.status}
        if self.outdated_by or m.successor_id:
            data["successor_id"] = m.successor_id
        if explain:
            data["components"] = {
                "similarity": None if self.similarity is None else round(self.similarity, 4),
                "vector_rank": self.vector_rank, "text_rank": self.text_rank,
                "text_match": None if self.text_match is None else round(self.text_match, 3),
                "rrf": round(self.rrf, 6), "importance": round(m.importance, 3),
                "decayed_importance": round(self.importance, 4), "recency": round(self.recency, 4),
                "outdated_by": self.outdated_by}
        return data


@dataclass
class SearchResult:
    hits: list[Hit]
    method: str                          # hybrid | text
    note: str | None = None              # e.g. why the vector side did not run
    duration_ms: float = 0.0
    candidates: dict = field(default_factory=dict)


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
           now: float | None = None) -> SearchResult:
    """The `limit` best memories of `domain` for `query` (see the module docstring). `exclude(memory)` True
    leaves a memory out (the current session's, those already injected); `use_model` False (or no model)
    searches the text side alone; `include_all` adds superseded, merged and deleted memories."""
    started = time.perf_counter()
    text = clean_query(query)
    ns = canonical_namespace(namespace) if namespace else None
    now = store.clock() if now is None else now
    vector_ids, text_ids, note = [], [], None
    vector = None
    if use_model and store.settings.dedup_semantic_enabled:
        try:
            vector = store.embed(text)
        except Exception as e:  # noqa: BLE001 - the text side still answers
            note = f"no vector side ({type(e).__name__})"
        if vector is None and note is None:
            note = f"no model ({store.embedder_error or 'not loaded'}): text side only"
    elif use_model:
        note = "semantic tier disabled: text side only"
    else:
        note = "model not loaded in this process: text side only"
    with read_snapshot(store.con):
        if vector is not None:
            params = {"embedding": vector.astype("float32").tobytes(), "k": CANDIDATES, "domain": domain}
            if ns:   # one namespace: the semantic tier's exact scan of that partition
                rows = [(r[0], r[2]) for r in store.con.execute(q("find_semantic_neighbours"),
                                                                  {**params, "namespace": ns})]
            else:
                rows = store.con.execute(q("search_knn_domain"), params)
            vector_ids = [(mid, float(sim)) for mid, sim in rows]
        fts = fts_query(text)
        if fts:
            text_ids = [mid for mid, _ in store.con.execute(q("search_text"), {
                "query": fts, "domain": domain, "namespace": ns, "all": int(include_all), "k": CANDIDATES})]
        if include_all and vector is not None:
            vector_ids = _with_retired(store, vector, vector_ids, text_ids)
        ids = list(dict.fromkeys([mid for mid, _ in vector_ids] + text_ids))
        memories = {r["id"]: Memory.from_row(r) for r in dict_rows(
            store.con.execute(q("memories_by_ids"), {"ids": json.dumps(ids)}))} if ids else {}
    query_words = significant_tokens(text)
    hits: dict[str, Hit] = {}
    for rank, (mid, sim) in enumerate(vector_ids, start=1):
        if mid in memories:
            hits[mid] = Hit(memories[mid], similarity=sim, vector_rank=rank)
    for rank, mid in enumerate(text_ids, start=1):
        if mid in memories:
            hits.setdefault(mid, Hit(memories[mid])).text_rank = rank
    kept = [h for h in hits.values() if not (exclude and exclude(h.memory))]
    for h in kept:
        _score(h, query_words, now)
    _order_successors(kept)
    kept.sort(key=lambda h: -h.score)
    return SearchResult(kept[:limit], "hybrid" if vector is not None else "text", note,
                        (time.perf_counter() - started) * 1000, {"vector": len(vector_ids), "text": len(text_ids)})


def _with_retired(store: "Store", vector, vector_ids: list[tuple[str, float]], text_ids: list[str]
                  ) -> list[tuple[str, float]]:
    """Retired memories have no searchable vector: their parked one places them on the vector side too."""
    import numpy as np

    known = {mid for mid, _ in vector_ids}
    extra = []
    for mid in text_ids:
        if mid in known:
            continue
        row = store.con.execute(q("vector_of"), {"id": mid}).fetchone()
        if row and row[0]:
            extra.append((mid, float(np.frombuffer(row[0], dtype=np.float32) @ vector)))
    return sorted(vector_ids + extra, key=lambda pair: -pair[1])


def _score(h: Hit, query_words: set[str], now: float) -> None:
    m = h.memory
    h.rrf = (W_VECTOR / (RRF_K + h.vector_rank) if h.vector_rank is not None else 0.0) + \
        (1.0 / (RRF_K + h.text_rank) if h.text_rank is not None else 0.0)
    age_days = max(0.0, now - parse_iso(m.created_at)) / 86400
    h.importance = m.importance * DECAY_BASE ** (age_days / DECAY_DAYS)
    h.recency = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
    words = significant_tokens(m.content)
    h.text_match = len(query_words & words) / len(query_words) if query_words else 0.0
    h.score = h.rrf * (1 + W_IMPORTANCE * (h.importance - 0.5)) * (1 + W_RECENCY * h.recency)


def _order_successors(hits: list[Hit]) -> None:
    """A memory with a successor (outdated, superseded, merged) scores just below that successor when both
    are found; chains are followed."""
    by_id = {h.memory.id: h for h in hits}
    for h in hits:
        if h.memory.successor_id:
            h.outdated_by = h.memory.successor_id
    for _ in range(len(hits)):
        moved = False
        for h in hits:
            succ = by_id.get(h.outdated_by or "")
            if succ is not None and h.score >= succ.score:
                h.score = math.nextafter(succ.score, 0.0) * 0.999
                moved = True
        if not moved:
            break


def memories_ids(hits: Iterable[Hit]) -> list[str]:
    return [h.memory.id for h in hits]
