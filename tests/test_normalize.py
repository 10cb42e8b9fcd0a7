"""Normalization and the content hash: Python, the SQL generated column, and Rust's definition agree."""
from __future__ import annotations

import hashlib
import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from subcog_store.text import digests
from subcog_store.text.normalize import content_hash, fingerprint, hash_tag, normalize

HEX64 = re.compile(r"^[0-9a-f]{64}$")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Unicode White_Space (what Rust's `split_whitespace`/`trim` use).
UNICODE_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + \
    "\u2028\u2029\u202f\u205f\u3000"
# Not White_Space, although Python's str.split() splits on the first four.
NOT_WHITESPACE = ["\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\u180e", "\ufeff"]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_case_and_whitespace_hash_parity() -> None:
    assert content_hash("Use PostgreSQL") == content_hash("  use   postgresql  ")
    assert content_hash("Use PostgreSQL") == sha("use postgresql")
    assert normalize("  USE   postgresql   FOR storage  ") == "use postgresql for storage"


def test_tabs_and_newlines_fold() -> None:
    assert normalize("use\tPostgreSQL\n\nfor\r\nstorage") == "use postgresql for storage"
    assert content_hash("use\tpostgresql\nfor storage") == content_hash("use postgresql for storage")


def test_cjk_is_kept() -> None:
    text = "数据库使用 PostgreSQL"
    assert normalize(text) == "数据库使用 postgresql"
    assert content_hash(text) == sha("数据库使用 postgresql")
    assert content_hash("数据库使用") != content_hash("数据库")


def test_empty_content_hashes_to_sha256_of_empty() -> None:
    assert content_hash("") == sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert content_hash("   \t\n") == sha("")
    assert HEX64.match(content_hash(""))


@pytest.mark.parametrize("ws", list(UNICODE_WHITESPACE), ids=lambda c: f"U+{ord(c):04X}")
def test_unicode_whitespace_folds(ws: str) -> None:
    assert normalize(f"{ws}a{ws}{ws}b{ws}") == "a b"
    assert content_hash(f"a{ws}b") == content_hash("a b")


def test_ideographic_space_and_nbsp_fold() -> None:
    assert content_hash("use\u3000postgresql") == content_hash("use postgresql")
    assert content_hash("use\u00a0postgresql") == content_hash("use postgresql")
    assert content_hash("\u3000\u00a0Use PostgreSQL\u00a0") == content_hash("use postgresql")


@pytest.mark.parametrize("char", NOT_WHITESPACE, ids=lambda c: f"U+{ord(c):04X}")
def test_non_white_space_is_kept(char: str) -> None:
    # Rust parity: U+001C..U+001F are not Unicode White_Space, although Python's str.split() splits on them.
    assert normalize(f"a{char}b") == f"a{char}b"
    assert content_hash(f"a{char}b") != content_hash("a b")
    assert content_hash(f"a{char}b") == sha(f"a{char}b")


def test_unicode_lower_case() -> None:
    assert normalize("ÜNÏCÖDÉ FAÇADE") == "ünïcödé façade"
    assert normalize("ΟΔΟΣ") == "οδος"  # final sigma, as Rust's to_lowercase


def test_hash_tag_form() -> None:
    digest = content_hash("Use PostgreSQL")
    tag = hash_tag(digest)
    assert re.fullmatch(r"hash:sha256:[0-9a-f]{16}", tag)
    assert tag == "hash:sha256:" + digest[:16]
    assert fingerprint("Use PostgreSQL") == digest[:16]


def test_view_hash_tag_matches_python(store) -> None:
    result = store.capture("Use PostgreSQL for storage", "decisions")
    row = store.con.execute("select content_hash, hash_tag from v_memories where id = ?",
                            (result.memory_id,)).fetchone()
    assert row == (content_hash("Use PostgreSQL for storage"), hash_tag(content_hash("Use PostgreSQL for storage")))


# ---------------------------------------------------------------------------------------------- properties

texts = st.text(min_size=0, max_size=200)
ws_chars = st.sampled_from(list(UNICODE_WHITESPACE))
nonblank = st.text(min_size=1, max_size=200).filter(lambda s: s.strip() and normalize(s))


@given(texts)
@settings(max_examples=300, deadline=None)
def test_normalization_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once
    assert content_hash(once) == content_hash(text)
    assert HEX64.match(content_hash(text))


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
                        min_size=1, max_size=10), min_size=1, max_size=6),
       st.lists(st.text(alphabet=ws_chars, min_size=1, max_size=3), min_size=8, max_size=8))
@settings(max_examples=200, deadline=None)
def test_any_whitespace_runs_fold_to_one_space(words: list[str], gaps: list[str]) -> None:
    words = [w for w in words if normalize(w) == w.lower() and w.lower() == w.lower().lower()]
    spaced = gaps[0] + "".join(w + g for w, g in zip(words, itertools.cycle(gaps[1:])))
    assert normalize(spaced) == " ".join(w.lower() for w in words)


_counter = itertools.count()


@pytest.fixture
def hash_store(make_store):
    # No dedup and no semantic tier: every new text is stored, so each example's row is its own.
    return make_store(dedup_enabled=False, dedup_semantic_enabled=False)


@given(nonblank)
@SETTINGS
def test_sql_generated_column_equals_python(hash_store, text: str) -> None:
    domain = f"d{next(_counter)}"
    result = hash_store.capture(text, "decisions", domain)
    assert result.memory_id
    stored = hash_store.con.execute("select content_hash, content from memories where id = ?",
                                    (result.memory_id,)).fetchone()
    assert stored[1] == text  # the text round-trips through SQLite unchanged
    assert stored[0] == content_hash(text)
    assert hash_store.con.execute("select subcog_content_hash(?)", (text,)).fetchone()[0] == content_hash(text)


@pytest.fixture
def prop_store(make_store):
    return make_store()


@given(nonblank, st.lists(ws_chars, max_size=3), st.lists(ws_chars, max_size=3))
@SETTINGS
def test_identical_content_is_always_a_duplicate_once_recorded(prop_store, text: str, pre: list[str],
                                                              post: list[str]) -> None:
    domain = f"d{next(_counter)}"
    captured = prop_store.capture(text, "learnings", domain)
    assert captured.stored
    for variant in (text, "".join(pre) + text + "".join(post)):
        check = prop_store.check_duplicate(variant, "learnings", domain)
        assert check.is_duplicate and check.reason == "exact_match"
        assert check.matched_memory_id == captured.memory_id
        assert check.tiers_run == ["exact"]
    again = prop_store.capture(text, "learnings", domain)
    assert not again.stored and again.decision == "hash_exact" and again.memory_id == captured.memory_id
    # Recorded without a memory (the recent window): a duplicate too, whitespace variants included.
    prop_store.record_capture(text, "context", domain)
    recent = prop_store.check_duplicate("".join(post) + text + "".join(pre), "context", domain)
    assert recent.is_duplicate and recent.reason == "recent_capture" and recent.matched_urn


@given(nonblank, st.text(alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
                         min_size=1, max_size=20))
@SETTINGS
def test_changed_suffix_is_never_an_exact_match(prop_store, text: str, suffix: str) -> None:
    domain = f"d{next(_counter)}"
    prop_store.capture(text, "patterns", domain)
    changed = text + suffix
    if normalize(changed) == normalize(text):  # e.g. a suffix of format characters that lower() leaves as is
        return
    check = prop_store.check_duplicate(changed, "patterns", domain)
    assert check.reason != "exact_match"
    assert check.content_hash != content_hash(text)


@pytest.mark.parametrize("data", [b"", b"abc", "données 数据".encode(), bytes(range(256)) * 50])
def test_the_built_in_digests_are_hashlibs(data: bytes) -> None:
    """text/digests.py's SHA-256 and BLAKE2b (keyed, sized) give what hashlib's give."""
    assert digests.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert digests.blake2b(data, digest_size=16).digest() == hashlib.blake2b(data, digest_size=16).digest()
    assert digests.blake2b(key=b"k" * 16, digest_size=8).digest() == \
        hashlib.blake2b(key=b"k" * 16, digest_size=8).digest()
