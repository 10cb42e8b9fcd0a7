"""Content normalization and hashing: the one definition shared by Python and the SQL generated column."""
from __future__ import annotations

import re

from subcog_store.text.digests import sha256

# Unicode White_Space, as Rust's `split_whitespace` sees it (Python's str.split() also splits on U+001C..U+001F).
_WHITESPACE = re.compile("[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")

HASH_TAG_PREFIX = "hash:sha256:"


def normalize(content: str) -> str:
    """Trim, Unicode lower case, and fold every run of Unicode whitespace into one space.

    The same as Rust's `content.trim().to_lowercase().split_whitespace().join(" ")`.
    """
    return " ".join(part for part in _WHITESPACE.split(content.lower()) if part)


def content_hash(content: str) -> str:
    """SHA256 hex of the normalized content (64 lower-case hex characters)."""
    return sha256(normalize(content).encode("utf-8")).hexdigest()


def hash_tag(content_hash_hex: str) -> str:
    """The short tag form of a content hash: `hash:sha256:<first 16 hex>`."""
    return HASH_TAG_PREFIX + content_hash_hex[:16]


def fingerprint(content: str) -> str:
    """A short, non-reversible fingerprint for logs (never log raw content)."""
    return content_hash(content)[:16]
