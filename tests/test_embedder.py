"""The embedder against the fp32 reference of all-MiniLM-L6-v2, batching, truncation, lazy loading, caching."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from subcog_store.model.embedder import DIMENSIONS, MAX_TOKENS, Embedder

# Degenerate inputs under 2 characters ("" and "x"): the int8 model reaches only 0.996 / 0.998 against the fp32
# reference there. The store never embeds them: empty content is rejected (InvalidInput) and content shorter than
# SUBCOG_DEDUP_MIN_SEMANTIC_LENGTH skips the semantic tier, so they are held to a looser 0.99.
DEGENERATE_MAX_CHARS = 2
DEGENERATE_MIN_COSINE = 0.99
MIN_COSINE = 0.999


@pytest.fixture(scope="module")
def reference(shared_dir: Path) -> list[dict]:
    path = shared_dir / "reference" / "minilm_reference.json"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return json.loads(path.read_text(encoding="utf-8"))["sentences"]


@pytest.fixture(scope="module")
def raw_embedded(reference, embedder) -> np.ndarray:
    """Our vectors for every reference sentence, in one batch (the 256-token sentence costs ~0.25 s on 2 CPUs)."""
    return embedder.embed_batch([s["text"] for s in reference])


@pytest.fixture(scope="module")
def embedded(reference, raw_embedded) -> tuple[np.ndarray, np.ndarray]:
    ref = np.array([s["embedding"] for s in reference], dtype=np.float64)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    return raw_embedded.astype(np.float64), ref


def is_degenerate(text: str) -> bool:
    return len(text) < DEGENERATE_MAX_CHARS


def test_shape_dtype_and_unit_norm(embedder, reference, raw_embedded) -> None:
    vectors = raw_embedded
    assert vectors.shape == (len(reference), DIMENSIONS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed_batch([]).shape == (0, DIMENSIONS)


def test_reference_covers_the_cases(reference) -> None:
    texts = [s["text"] for s in reference]
    assert "" in texts and "x" in texts
    assert any(s["tokens"] == MAX_TOKENS for s in reference)  # one sentence over the limit, truncated


def test_cosine_with_reference(reference, embedded) -> None:
    ours, ref = embedded
    cosines = (ours * ref).sum(axis=1)
    failures = []
    for sentence, cosine in zip(reference, cosines):
        floor = DEGENERATE_MIN_COSINE if is_degenerate(sentence["text"]) else MIN_COSINE
        if cosine < floor:
            failures.append(f"{sentence['text'][:40]!r}: {cosine:.5f} < {floor}")
    assert not failures, failures


def test_pair_cosines_match_reference(reference, embedded) -> None:
    ours, ref = embedded
    keep = [i for i, s in enumerate(reference) if not is_degenerate(s["text"])]
    worst = max((abs(float(ours[i] @ ours[j]) - float(ref[i] @ ref[j])), i, j) for i, j in combinations(keep, 2))
    assert worst[0] < 0.01, (worst, reference[worst[1]]["text"], reference[worst[2]]["text"])


def test_token_counts_match_reference(reference, embedder) -> None:
    for sentence in reference:
        assert len(embedder._tokenizer.encode(sentence["text"]).ids) == sentence["tokens"], sentence["text"][:40]


def test_batch_padding_changes_nothing(reference, embedder) -> None:
    short = ["Likes coffee", "Use PostgreSQL for storage", "数据库使用 PostgreSQL"]
    by_tokens = sorted(reference, key=lambda s: s["tokens"])
    longer = [s["text"] for s in by_tokens if 18 <= s["tokens"] < MAX_TOKENS][-4:]
    assert len(longer) == 4
    for text in short:
        alone = embedder.embed(text)
        for batch in ([text] + longer, longer + [text], [longer[0], text, longer[-1]]):
            vectors = embedder.embed_batch(batch)
            assert np.allclose(vectors[batch.index(text)], alone, atol=1e-5), (text, batch.index(text))
    # Rows keep their order whatever the internal length sort does.
    batch = longer + short
    vectors = embedder.embed_batch(batch)
    for text, vector in zip(batch, vectors):
        assert np.allclose(vector, embedder.embed(text), atol=1e-5)


def test_padding_to_the_longest_possible_member(reference, embedder, raw_embedded) -> None:
    # The reference batch put every sentence next to the 256-token one (padded in the same chunk or not):
    # each row equals the sentence embedded alone.
    for index in (0, 2, 20, 28, 29):
        assert np.allclose(raw_embedded[index], embedder.embed(reference[index]["text"]), atol=1e-5)
    longest = max(reference, key=lambda s: s["tokens"])["text"]
    pair = embedder.embed_batch(["Likes coffee", longest])
    assert np.allclose(pair[0], embedder.embed("Likes coffee"), atol=1e-5)


def test_truncation_at_256_tokens(reference, embedder) -> None:
    long_text = max((s["text"] for s in reference), key=len)
    assert len(embedder._tokenizer.encode(long_text).ids) == MAX_TOKENS
    extended = long_text + " and then a long appendix about unrelated gardening topics" * 40
    assert len(embedder._tokenizer.encode(extended).ids) == MAX_TOKENS
    a, b = embedder.embed_batch([long_text, extended])
    assert np.allclose(a, b, atol=1e-6)
    # A change inside the first 256 tokens still changes the vector.
    changed = "Gardening. " + long_text
    assert not np.allclose(embedder.embed(changed), a, atol=1e-4)


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])


def test_lazy_load_constructing_does_not_import_onnxruntime() -> None:
    proc = run_python("""
        import sys
        from subcog_store.model.embedder import Embedder
        e = Embedder()
        assert not e.loaded
        assert "onnxruntime" not in sys.modules, "onnxruntime imported by the constructor"
        assert "tokenizers" not in sys.modules, "tokenizers imported by the constructor"
        e.embed("hello world")
        assert e.loaded and "onnxruntime" in sys.modules
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_store_open_and_short_check_do_not_load_the_model(tmp_path: Path) -> None:
    # A hook is a fresh process: opening a store and checking short content must not pay for the model.
    proc = run_python(f"""
        import sys
        from subcog_store.store import Store
        s = Store({str(tmp_path / 'm.db')!r}, environ={{}})
        r = s.check_duplicate("short note", "decisions")
        assert "semantic:skipped_short" in r.tiers_run, r.tiers_run
        assert "onnxruntime" not in sys.modules
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


class CountingEmbedder(Embedder):
    """The real model (sharing the loaded session), counting every text passed to embed_batch."""

    def __init__(self, loaded: Embedder):
        super().__init__(loaded.directory)
        loaded.load()
        self._session, self._tokenizer, self._input_names = loaded._session, loaded._tokenizer, loaded._input_names
        self.texts: list[str] = []

    def embed_batch(self, texts):
        self.texts.extend(texts)
        return super().embed_batch(texts)


LONG = "We decided to use PostgreSQL as the primary database for the billing service."


def test_identical_content_is_embedded_once(make_store, embedder) -> None:
    counting = CountingEmbedder(embedder)
    store = make_store(embedder_=counting)
    first = store.capture(LONG, "decisions")
    assert first.stored
    assert counting.texts == [LONG]  # the check embedded it, the insert reused the vector
    store.check_duplicate(LONG, "decisions")              # exact tier: no embedding at all
    store.check_duplicate(LONG, "patterns")               # semantic tier in another namespace: cached vector
    store.check_duplicate("  " + LONG.upper() + "\n", "learnings")  # same normalized content: same vector
    store.capture(LONG, "decisions")
    store.capture(LONG, "context")
    assert counting.texts == [LONG]
    other = LONG.replace("billing", "invoicing")
    store.check_duplicate(other, "decisions")
    store.capture(other, "patterns")
    assert counting.texts == [LONG, other]


def test_embed_many_embeds_each_distinct_text_once(make_store, embedder) -> None:
    counting = CountingEmbedder(embedder)
    store = make_store(embedder_=counting)
    other = "Always run database migrations inside a single transaction so they roll back cleanly."
    store.embed_many([LONG, other, LONG, "  " + LONG + "  "])
    assert sorted(counting.texts) == sorted([LONG, other])
    store.capture(LONG, "decisions")
    store.capture(other, "decisions")
    assert sorted(counting.texts) == sorted([LONG, other])
