"""all-MiniLM-L6-v2 sentence embeddings with onnxruntime and tokenizers, loaded on first use.

Pipeline (the sentence-transformers one): lower-case WordPiece, truncation at 256 tokens, padding per batch
to its longest member, mean pooling over the attention mask, L2 normalisation.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from subcog_store.model.files import (ModelFilesError, fetch, fetch_lexicon_beside, is_default_download_dir,
                                      model_dir, verify)

if TYPE_CHECKING:
    import numpy as np

DIMENSIONS = 384
MAX_TOKENS = 256
BATCH_SIZE = 32
# The session's threading, in one place, chosen by bench/bench_onnx_threads.py (bench/RESULTS.md): two intra-op
# threads that do not spin. On the idle 2-core machine they embed as fast as onnxruntime's default (a batch of 20
# in 63 against 61 ms; one thread takes 111); beside two CPU-bound processes spinning threads burn a core waiting
# for work, and these take 122-131 ms a batch against the default's 161.
INTRA_OP_THREADS = 2
INTER_OP_THREADS = 1
ALLOW_SPINNING = False


def session_options(threads: int = 0):
    """The onnxruntime.SessionOptions every session of this model is created with (`threads` overrides the
    intra-op thread count)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads or INTRA_OP_THREADS
    options.inter_op_num_threads = INTER_OP_THREADS
    spinning = "1" if ALLOW_SPINNING else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spinning)
    options.add_session_config_entry("session.inter_op.allow_spinning", spinning)
    return options


class Embedder:
    """Embeds text into 384-dimension unit vectors (float32). Heavy imports happen on first `embed_batch`."""

    dimensions = DIMENSIONS
    name = "all-MiniLM-L6-v2-int8"

    def __init__(self, directory: Path | None = None, threads: int = 0, fetch_missing: bool = False):
        self.directory = directory
        self.threads = threads
        self.fetch_missing = fetch_missing  # download missing files into the user's data directory first
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Verify the model files and create the ONNX session (raises ModelFilesError when unusable)."""
        with self._lock:
            if self._session is not None:
                return
            directory = self.directory or model_dir()
            try:
                directory = verify(directory)
            except ModelFilesError:
                if not (self.fetch_missing and is_default_download_dir(directory)):
                    raise
                directory = fetch(directory)
                fetch_lexicon_beside(directory)   # the guard's WordNet comes with the model; it judges without it
            import onnxruntime
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(MAX_TOKENS)
            self._session = onnxruntime.InferenceSession(
                str(directory / "model.onnx"), session_options(self.threads), providers=["CPUExecutionProvider"])
            self._input_names = {i.name for i in self._session.get_inputs()}
            self._tokenizer = tokenizer

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def embed(self, text: str) -> "np.ndarray":
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> "np.ndarray":
        """Return an (n, 384) float32 array of unit vectors, one row per text, in order."""
        import numpy as np

        self.load()
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        # Similar lengths share a batch, so little padding is computed.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start:start + BATCH_SIZE]
            out[chunk] = self._run([encodings[i] for i in chunk])
        return out

    def _run(self, encodings: list) -> "np.ndarray":
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {k: v for k, v in feeds.items() if k in self._input_names}
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
