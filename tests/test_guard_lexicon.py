"""WordNet in the changed-fact guard (docs/guard.md, round 9): the real WordNet 3.0 files, fetched with the model.

A slot filled with a WordNet synonym is no changed fact even without the model; a WordNet antonym only the other
text writes is a changed fact even when the rest is reworded and the model calls everything a synonym.
"""
from __future__ import annotations

import pytest

from subcog_store.dedup.rule import judge
from subcog_store.model import lexicon
from subcog_store.text import guard_lexicon
from subcog_store.text.guard import changed_fact


def credulous(p: str, q: str) -> float:
    """A phrase model that calls everything a synonym (MiniLM rates cheap / expensive 0.80)."""
    return 0.99


def test_the_wordnet_files_are_in_the_model_directory_as_the_manifest_says() -> None:
    # fetched with the model by `make setup`: `make test` runs the guard as users get it
    spec, root = lexicon.load_manifest(), lexicon.lexicon_dir()
    assert {"index.noun", "data.verb", "adj.exc", "LICENSE"} <= set(spec.files) and spec.sdist.endswith(".tar.gz")
    for name, (sha256, size) in spec.files.items():
        assert (root / name).stat().st_size == size and lexicon.sha256_file(root / name) == sha256, name
    assert guard_lexicon._root() == root and guard_lexicon.available()


@pytest.mark.parametrize("a,b", [("kids", "children"), ("telephone", "phone"), ("kept", "preserved"),
                                 ("stopped", "halted"), ("biggest", "large"), ("ran", "run")])
def test_synonyms_in_any_inflection(a: str, b: str) -> None:
    assert guard_lexicon.synonyms(a, b) and guard_lexicon.synonyms(b, a)
    assert not guard_lexicon.antonyms(a, b)


@pytest.mark.parametrize("a,b", [("cheap", "expensive"), ("stable", "unstable"), ("simple", "complex"),
                                 ("correct", "incorrect"), ("fastest", "slow")])
def test_antonyms(a: str, b: str) -> None:
    assert guard_lexicon.antonyms(a, b) and guard_lexicon.antonyms(b, a)
    assert not guard_lexicon.synonyms(a, b)


@pytest.mark.parametrize("a,b", [("monday", "friday"), ("redis", "memcached"), ("sync", "auth"),
                                 ("frontend", "backend"), ("", "x"), ("sync_v3", "sync_v5"), ("日本", "キャッシュ")])
def test_other_words_are_neither(a: str, b: str) -> None:
    assert not guard_lexicon.synonyms(a, b) and not guard_lexicon.antonyms(a, b)


@pytest.mark.parametrize("older,newer", [
    ("Two children are playing in the park.", "Two kids are playing in the park."),
    ("The session files are kept as they are.", "The session files are preserved as they are."),
])
def test_a_wordnet_synonym_in_a_slot_is_no_changed_fact_without_the_model(older: str, newer: str) -> None:
    assert not changed_fact(older, newer).changed and not changed_fact(newer, older).changed
    assert judge(older, newer, 0.95).duplicate(0.90)


@pytest.mark.parametrize("older,newer,detail", [
    ("The upload API is stable on large files.", "On large files the upload API is unstable.", "stable vs unstable"),
    ("The retry logic in the worker is simple.", "The worker has complex retry logic.", "simple vs complex"),
    ("The generated checksums are correct for every release.", "Every release gets incorrect generated checksums.",
     "correct vs incorrect"),
])
def test_a_wordnet_antonym_is_a_changed_fact_however_worded(older: str, newer: str, detail: str) -> None:
    verdict = changed_fact(older, newer, credulous)
    assert (verdict.reason, verdict.detail) == ("polarity", detail)
    assert changed_fact(newer, older, credulous).reason == "polarity"
    assert not judge(older, newer, 0.97, credulous).agrees


def test_a_negated_word_is_not_read_against_its_antonym() -> None:
    a = "The cache is not available during the nightly rebuild."
    b = "During the nightly rebuild the cache is unavailable."
    assert not changed_fact(a, b, credulous).changed and not changed_fact(b, a, credulous).changed


def test_without_wordnet_the_guard_judges_as_before(no_lexicon) -> None:
    assert not guard_lexicon.available()
    assert changed_fact("Two children are playing in the park.", "Two kids are playing in the park.").reason \
        == "substitution"   # the safe side
    assert not changed_fact("The upload API is stable on large files.", "On large files the upload API is unstable.",
                            credulous).changed   # the known hole the lexicon closes


def _tiny_wordnet(root, data_adj: str) -> None:
    """WordNet's file layout with two adjectives (sorted index, data lines that start with their offset)."""
    for name in ("noun", "verb", "adj", "adv"):
        (root / f"index.{name}").write_text("  1 licence\n")
        (root / f"data.{name}").write_text("  1 licence\n")
        (root / f"{name}.exc").write_text("cheaper cheap\n" if name == "adj" else "zz zz\n")
    (root / "index.adj").write_text("  1 licence\ncheap a 1 1 ! 1 0 00000100\nexpensive a 1 1 ! 1 0 00000200\n")
    (root / "data.adj").write_text(data_adj)


def test_the_reader_on_wordnets_layout_and_on_damaged_lines(tmp_path, monkeypatch) -> None:
    good = ("  1 licence\n00000100 00 a 01 cheap 0 001 ! 00000200 a 0101 | low in price\n"
            "00000200 00 a 01 expensive 0 001 ! 00000100 a 0101 | high in price\n")
    monkeypatch.setattr(guard_lexicon, "_root", lambda: tmp_path)
    try:
        _tiny_wordnet(tmp_path, good)
        guard_lexicon.clear_caches()
        assert guard_lexicon.antonyms("cheaper", "expensive") and not guard_lexicon.synonyms("cheap", "expensive")
        _tiny_wordnet(tmp_path, "  1 licence\n00000100 00 a zz cheap\n00000200 garbage\n")
        guard_lexicon.clear_caches()
        assert not guard_lexicon.antonyms("cheap", "expensive")   # "not known", never an exception
        verdict = changed_fact("The API is cheap to run.", "Running the API is expensive.", credulous)
        assert verdict.reason == "polarity"   # from the hand-made opposites; the damaged lexicon raised nothing
    finally:
        guard_lexicon.clear_caches()
