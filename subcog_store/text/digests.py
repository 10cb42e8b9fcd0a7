"""SHA-256 and BLAKE2b without importing `hashlib` on a hook's path.

`hashlib` loads OpenSSL's bindings (`_hashlib`: ~3 ms of a hook process's CPU) to offer every algorithm; the two
this package hashes with on the hook path have built-in implementations that give the same digests (the standard
library's `random` takes its sha512 the same way). A Python without them gets hashlib's.
"""
from __future__ import annotations

__all__ = ["blake2b", "sha256"]

try:
    from _sha256 import sha256   # CPython 3.11 (3.12 calls the module _sha2)
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256
try:
    from _blake2 import blake2b   # what hashlib.blake2b is too
except ImportError:
    from hashlib import blake2b
