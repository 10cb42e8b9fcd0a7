"""The Store: the public face of one subcog-store database (check, capture, read, search, forget).

A thin facade: it opens a `Core` (connection, settings, embeddings, clock) and calls the services below with it
(`dedup.write` for one capture, `dedup.in_batch` for many, `recall.search`, `maintenance`); no service calls back.
A `Store` has the same attributes as its `Core` (`con`, `settings`, `vectors`, `clock`, `path`, `readonly`), so
a service may be handed either.
"""
# Lazy imports: each service loads when first used: a hook's run of repeats never imports numpy or the model.
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable, Sequence

from subcog_store.clock import Clock, system_clock
from subcog_store.config import Settings
from subcog_store.core import Core
from subcog_store.db import checks, memories
from subcog_store.db.memories import Memory
from subcog_store.dedup import write
from subcog_store.dedup.check import CheckResult
from subcog_store.dedup.write import CaptureResult
from subcog_store.errors import InvalidInput
from subcog_store.inputs import CaptureRequest, Prepared, prepare, validate_content
from subcog_store.model import provider
from subcog_store.text.namespaces import canonical_domain, canonical_namespace

if TYPE_CHECKING:
    import apsw
    import numpy as np

    from subcog_store.dedup.in_batch import Outcome
    from subcog_store.model.embedder import Embedder
    from subcog_store.model.embeddings import Embeddings
    from subcog_store.recall.search import SearchResult

__all__ = ["Store", "Memory", "CaptureResult", "CaptureRequest", "validate_content"]


class Store:
    """A subcog-store database. `embedder=None`: the packaged MiniLM model, loaded on first need, where
    `embedders` says (`model.provider`: LOCAL in this process, the default; VIA_WORKER the warm worker's when
    there is one; SHARED the worker's own)."""

    def __init__(self, path: str | os.PathLike, *, embedder: "Embedder | None" = None, clock: Clock = system_clock,
                 environ: dict[str, str] | None = None, readonly: bool = False, fetch_model: bool = True,
                 embedders: str = provider.LOCAL, deadline: float | None = None):
        self.core = Core(path, embedder=embedder, embedders=embedders, clock=clock, environ=environ,
                         readonly=readonly, fetch_model=fetch_model, deadline=deadline)

    # -- the core's parts ------------------------------------------------------------------------------------
    @property
    def con(self) -> "apsw.Connection":
        return self.core.con

    @property
    def settings(self) -> Settings:
        return self.core.settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self.core.settings = value

    @property
    def vectors(self) -> "Embeddings":
        return self.core.vectors

    @property
    def clock(self) -> Clock:
        return self.core.clock

    @property
    def path(self) -> str:
        return self.core.path

    @property
    def readonly(self) -> bool:
        return self.core.readonly

    def load_settings(self) -> Settings:
        return self.core.load_settings()

    def close(self) -> None:
        self.core.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the model -------------------------------------------------------------------------------------------
    @property
    def embedder(self) -> "Embedder | None":
        """The embedder, or None when the semantic tier is disabled or the model is missing or broken."""
        return self.core.vectors.embedder

    @property
    def model_loaded(self) -> bool:
        """The model is loaded in this process (a hook uses it then, and never loads it just for recall)."""
        return self.core.vectors.loaded

    @property
    def embedder_error(self) -> str | None:
        return self.core.vectors.error

    def embed(self, content: str, hash_hex: str | None = None) -> "np.ndarray | None":
        """The unit vector of `content` (cached by content hash: identical content is embedded once)."""
        return self.core.vectors.embed(content, hash_hex)

    def embed_many(self, contents: Sequence[str], hashes: Sequence[str] | None = None) -> None:
        """Embed in one model call the contents not cached yet (an optimisation only)."""
        self.core.vectors.embed_many(contents, hashes)

    # -- check and capture -----------------------------------------------------------------------------------
    def check_duplicate(self, content: str, namespace: str, domain: str | None = None, *,
                        log_check: bool = True) -> CheckResult:
        """Is `content` a duplicate in its (domain, namespace)? Runs exact, semantic, recent; first hit wins."""
        return write.check_duplicate(self.core, content, namespace, domain, log_check=log_check)

    def capture(self, content: str, namespace: str, domain: str | None = None, *, importance: float = 0.5,
                tags: Iterable[str] | None = None, source: str | None = None, session_id: str | None = None,
                policy: str | None = None, created_at: str | None = None) -> CaptureResult:
        """Check `content` and, unless it is a duplicate under the namespace's policy, store it (memory, vector
        and recent-capture row in one transaction). Every decision is written to the decision log."""
        prepared = prepare(CaptureRequest(content, namespace, domain, importance, tags, source, session_id, policy,
                                          created_at))
        return write.capture_prepared(self.core, prepared)

    def capture_prepared(self, p: Prepared) -> CaptureResult:
        """`capture` of a request already validated (`inputs.prepare`): the content hash is computed once."""
        return write.capture_prepared(self.core, p)

    def capture_many(self, requests: Sequence[CaptureRequest], *, deadline: float | None = None,
                     dry_run: bool = False, dedupe_batch: bool = True, minimum: int = 0) -> list["Outcome"]:
        """Capture (or, dry run, check) many texts at once; see `dedup.in_batch.capture_many`."""
        from subcog_store.dedup.in_batch import capture_many

        return capture_many(self.core, requests, deadline=deadline, dry_run=dry_run, dedupe_batch=dedupe_batch,
                            minimum=minimum)

    def record_capture(self, content: str, namespace: str, domain: str | None = None,
                       memory_id: str | None = None) -> None:
        """Remember that `content` was captured now (the recent tier), without storing a memory."""
        write.record_capture(self.core, content, namespace, domain, memory_id)

    # -- reading ---------------------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        return memories.require(self.con, memory_id)

    def memories(self, namespace: str | None = None, domain: str | None = None, status: str | None = "active",
                 limit: int = 100) -> list[Memory]:
        return memories.listed(self.con, canonical_namespace(namespace) if namespace else None, domain, status,
                               limit)

    def search(self, query: str, *, domain: str | None = None, namespace: str | None = None, limit: int = 5,
               include_all: bool = False, use_model: bool = True, exclude=None) -> "SearchResult":
        """Hybrid search of a domain's memories (see `recall.search`)."""
        from subcog_store.recall.search import search

        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit {str(limit)[:20]!r}: expected a whole number from 1 to 1000")
        return search(self.core, query, domain=canonical_domain(domain), namespace=namespace, limit=limit,
                      include_all=include_all, use_model=use_model, exclude=exclude)

    def forget(self, memory_id: str, reason: str | None = None) -> int:
        """Retire a memory (out of search), logged and reversible with `reverse`; returns the decision id."""
        from subcog_store.maintenance import forget

        return forget(self.core, memory_id, reason)

    def move_domain(self, source: str, target: str, progress=None) -> dict:
        """Move every memory of domain `source` to `target` (see `maintenance.move_domain`; `progress(done,
        total)` is told as it goes)."""
        from subcog_store.maintenance import move_domain

        return move_domain(self.core, source, target, **({"progress": progress} if progress else {}))

    def stats(self) -> dict:
        """Counts by namespace and status, check counters, skip counters, durations, recent window."""
        return checks.stats(self.con)
