"""A text extraction found nothing in, recognised without extracting it again: a fingerprint of all that decides
the extraction's answer for one text, the text, its kind, the probability floor, and the extraction code itself
(every file of this package and the other modules it loads, `OTHER_SOURCES`, with the Python that runs them).
Each text is judged on its own (`extract.judge`; a candidate never spans two texts), so a text whose fingerprint a
store holds (`db/hook_state.known_empty`) gives no candidate again, and a change to any of that code gives every
text another fingerprint. Only these 64-bit numbers are kept, never text.
"""
from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

from subcog_store.text.digests import blake2b

__all__ = ["code_version", "fingerprint", "OTHER_SOURCES"]

PACKAGE = Path(__file__).parent
# The modules outside this package that extraction loads (tests/test_extraction_memo.py checks the list is whole).
OTHER_SOURCES = ("text/redact.py", "text/lazy_regex.py", "text/digests.py")


@lru_cache(maxsize=1)
def code_version() -> bytes | None:
    """A digest of the extraction code as this process found it on disk (None when a file cannot be read: then no
    text is recognised)."""
    digest = blake2b(sys.version.encode(), digest_size=16)
    try:
        files = sorted(p for p in PACKAGE.iterdir() if p.is_file()) + [PACKAGE.parent / s for s in OTHER_SOURCES]
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.digest()


def fingerprint(version: bytes, text: str, kind: str, min_confidence: float | None) -> int:
    """The signed 64-bit fingerprint of extracting `text` of `kind` at `min_confidence` with the code `version`."""
    digest = blake2b(key=version, digest_size=8)
    digest.update(f"{kind}\0{min_confidence!r}\0".encode())
    digest.update(text.encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest(), "big", signed=True)
