"""Which embedder a Store uses: `embedder_for(settings, fetch_missing, source)`, the one place the choice is
made. The caller says where the model runs (no process-wide mode):

- `LOCAL` (the library's default; a hook run in process; the MCP server): a plain in-process Embedder.
- `SHARED` (the worker serving a hook): one Embedder per model directory, kept warm across requests (a new one
  when the model files change).
- `VIA_WORKER` (CLI commands: capture, check, search, dedup, reembed, eval-pairs): a `WorkerEmbedder`, which embeds
  in the warm worker and, when the worker is absent (it starts one for next time), starting, busy, of another
  version or fails mid-way, in this process; with SUBCOG_WORKER_ENABLED=false, LOCAL. Vectors are the same every
  way: the same Embedder code, session options and batches run on both sides.
"""
# Lazy imports: onnxruntime and tokenizers load only when a model is used, the worker client only when the
# worker is.
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.config import Settings
    from subcog_store.model.embedder import Embedder

log = logging.getLogger("subcog_store.worker")
LOCAL, SHARED, VIA_WORKER = "local", "shared", "via-worker"
MAX_SHARED = 4            # model directories kept loaded in the worker at once
_shared: dict[tuple, "Embedder"] = {}   # the worker's warm embedders (SHARED), one per directory and file version
_shared_lock = threading.Lock()


def embedder_for(settings: "Settings", fetch_missing: bool = False, source: str = LOCAL):
    """The embedder for a store with these settings, where `source` says it runs (Embedder-compatible: `load`,
    `loaded`, `embed_batch`)."""
    if source == SHARED:
        return shared(settings.model_dir, fetch_missing)
    if source == VIA_WORKER:
        from subcog_store.worker.client import enabled

        if enabled(settings.environ):
            return WorkerEmbedder(settings.model_dir, fetch_missing)
    from subcog_store.model.embedder import Embedder

    return Embedder(settings.model_dir, fetch_missing=fetch_missing)


def resolve(directory: Path | None) -> Path:
    from subcog_store.config import model_dir

    return Path(directory) if directory else model_dir()


def _files_stamp(directory: Path) -> tuple:
    out = []
    for name in ("model.onnx", "tokenizer.json"):
        try:
            st = os.stat(directory / name)
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def shared(directory: Path | None, fetch_missing: bool = False) -> "Embedder":
    """This process's Embedder for a model directory (one per directory and file version, created unloaded)."""
    from subcog_store.model.embedder import Embedder

    resolved = resolve(directory)
    key = (str(resolved), fetch_missing, _files_stamp(resolved))
    with _shared_lock:
        embedder = _shared.get(key)
        if embedder is None:
            for stale in [k for k in _shared if k[:2] == key[:2]]:   # the files changed: drop the old session
                del _shared[stale]
            while len(_shared) >= MAX_SHARED:
                del _shared[next(iter(_shared))]
            embedder = _shared[key] = Embedder(resolved, fetch_missing=fetch_missing)
        return embedder


def loaded_dirs() -> list[str]:
    with _shared_lock:
        return [k[0] for k, e in _shared.items() if e.loaded]


class WorkerEmbedder:
    """Embedder-compatible client: embeds in the warm worker, else in this process (loaded on first need)."""

    dimensions = 384
    name = "all-MiniLM-L6-v2-int8"

    def __init__(self, directory: Path | None = None, fetch_missing: bool = False):
        self.directory, self.fetch_missing = directory, fetch_missing
        self._remote = False
        self._local: "Embedder | None" = None
        self._lock = threading.Lock()

    def _note(self, error: Exception) -> None:
        from subcog_store.worker.client import Unavailable

        if isinstance(error, Unavailable) and not error.quiet:
            log.info("worker: %s; embedding in process", error.reason)
            if error.spawn:
                from subcog_store.worker.lifecycle import start_detached

                try:
                    start_detached()
                except Exception as e:  # noqa: BLE001 - the worker is an optimisation only
                    log.info("worker: could not start one: %s", e)

    def _go_local(self) -> "Embedder":
        if self._local is None:
            from subcog_store.model.embedder import Embedder

            self._remote = False
            self._local = Embedder(self.directory, fetch_missing=self.fetch_missing)
        return self._local

    def load(self) -> None:
        """Have the worker load the model (or load it here); raises like Embedder.load when it is unusable."""
        with self._lock:
            if self._remote:
                return
            if self._local is None:
                from subcog_store.worker import client

                try:
                    client.request("load", {"model_dir": str(resolve(self.directory))}, answer_secs=60.0)
                    self._remote = True
                    return
                except client.Unavailable as e:
                    self._note(e)
            self._go_local().load()

    @property
    def loaded(self) -> bool:
        return self._remote or (self._local is not None and self._local.loaded)

    def embed(self, text: str) -> "np.ndarray":
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> "np.ndarray":
        """An (n, 384) float32 array of unit vectors, one row per text, in order."""
        import numpy as np

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if self._remote:
            from subcog_store.worker import client

            try:
                blob = client.embed(texts, str(resolve(self.directory)))
                return np.frombuffer(blob, dtype=np.float32).reshape(len(texts), self.dimensions).copy()
            except client.Unavailable as e:
                self._note(e)
        with self._lock:
            local = self._go_local()
        return local.embed_batch(texts)
