"""A store's embeddings: the embedder it uses (chosen by `model.provider`, loaded on first need) and its cache of
vectors by content hash (identical normalized content is embedded once per store)."""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Callable, Sequence

from subcog_store.model import provider
from subcog_store.text.normalize import content_hash

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.config import Settings
    from subcog_store.dedup.rule import PhraseSimilarity
    from subcog_store.model.embedder import Embedder

log = logging.getLogger("subcog_store")
CACHE_SIZE = 8192   # vectors kept, least recently used dropped first


class Embeddings:
    """Vectors for one store. `embedder`: a given one (tests, eval-pairs), else `source` picks it
    (`model.provider`: in process, the worker's warm one, or through the worker); `settings()` gives the store's
    current settings (the semantic tier's switch and the model directory)."""

    def __init__(self, settings: Callable[[], "Settings"], *, embedder: "Embedder | None" = None,
                 source: str = provider.LOCAL, fetch_missing: bool = False):
        self._settings, self._embedder, self.source, self.fetch_missing = settings, embedder, source, fetch_missing
        self._error: str | None = None
        self._vectors: OrderedDict[str, "np.ndarray"] = OrderedDict()

    @property
    def embedder(self) -> "Embedder | None":
        """The loaded embedder, or None when the semantic tier is disabled or the model is missing or broken."""
        if not self._settings().dedup_semantic_enabled or self._error:
            return None
        if self._embedder is None:
            self._embedder = provider.embedder_for(self._settings(), self.fetch_missing, self.source)
        try:
            self._embedder.load()
        except Exception as e:  # missing or corrupt files, onnxruntime failure: the text tier stands in
            self._error = f"{type(e).__name__}: {e}"
            log.warning("semantic tier off, using the text tier instead: %s", self._error)
            return None
        return self._embedder

    @property
    def loaded(self) -> bool:
        """The model is loaded (a hook uses it then, and never loads it just for recall)."""
        return self._embedder is not None and self._embedder.loaded

    @property
    def error(self) -> str | None:
        return self._error

    def embed(self, content: str, hash_hex: str | None = None) -> "np.ndarray | None":
        """The unit vector of `content` (cached by content hash), or None without a model."""
        key = hash_hex or content_hash(content)
        if key in self._vectors:
            self._vectors.move_to_end(key)
            return self._vectors[key]
        embedder = self.embedder
        if embedder is None:
            return None
        vector = embedder.embed_batch([content])[0]
        self._remember(key, vector)
        return vector

    def embed_many(self, contents: Sequence[str], hashes: Sequence[str] | None = None) -> None:
        """Embed in one model call the contents not cached yet. An optimisation only: when it fails, each
        content is embedded (or fails open) on its own later."""
        if not contents or not self._settings().dedup_semantic_enabled:
            return
        try:
            missing: dict[str, str] = {}
            for i, text in enumerate(contents):
                key = hashes[i] if hashes else content_hash(text)
                if key not in self._vectors:
                    missing.setdefault(key, text)
            embedder = self.embedder if missing else None
            if embedder is None:
                return
            for key, vector in zip(missing, embedder.embed_batch(list(missing.values()))):
                self._remember(key, vector)
        except Exception as e:  # noqa: BLE001 - an invalid text, a model failure: each text goes on alone
            log.warning("batch embedding failed, embedding one by one: %s: %s", type(e).__name__, e)

    def cached(self, hash_hex: str) -> "np.ndarray | None":
        return self._vectors.get(hash_hex)

    def remember(self, hash_hex: str, vector: "np.ndarray") -> None:
        """A content's vector known already (`copy` brings each memory's own from the source store)."""
        self._remember(hash_hex, vector)

    def _remember(self, key: str, vector: "np.ndarray") -> None:
        self._vectors[key] = vector
        while len(self._vectors) > CACHE_SIZE:
            self._vectors.popitem(last=False)

    def phrase_similarity(self) -> "PhraseSimilarity | None":
        """The model's similarity of two short phrases, for the guard; None while the model is not loaded (the
        guard never loads it on its own)."""
        if not self.loaded or self.embedder is None:
            return None

        def similarity(a: str, b: str) -> float:
            va, vb = self.embed(a), self.embed(b)
            return float(va @ vb) if va is not None and vb is not None else 0.0
        return similarity
