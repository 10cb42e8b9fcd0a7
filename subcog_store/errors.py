"""The errors this package raises to its callers, each with the CLI exit code documented in the README."""
from __future__ import annotations


class SubcogError(Exception):
    """Base class: a clear, user-facing message; `exit_code` is what the CLI exits with."""

    exit_code = 1


class InvalidInput(SubcogError):
    """Empty, oversized or non-UTF-8 content, an unknown namespace, a malformed request."""

    exit_code = 2


class ConfigError(SubcogError):
    """An environment variable or setting that does not parse or is out of range."""

    exit_code = 3


class DatabaseError(SubcogError):
    """The database cannot be opened or written: missing directory, read-only, locked, corrupt."""

    exit_code = 4


class NotASubcogDatabase(DatabaseError):
    """The file is a database (or something else) that this project did not create; it is left untouched."""

    exit_code = 5


class DatabaseDamaged(DatabaseError):
    """The database file is damaged (SQLITE_CORRUPT, an unreadable vector blob): nothing more is written to it
    until it is repaired or replaced (see `db.damage`)."""

    exit_code = 8


class IntegrityError(SubcogError):
    """`doctor` found a broken invariant."""

    exit_code = 6


class NotFound(SubcogError):
    """No memory or decision with that id."""

    exit_code = 7


# What SQLite and sqlite-vec say when a page or a vector blob cannot be read as written (beside CorruptError).
_CORRUPTION_WORDS = ("database disk image is malformed", "blob read error", "opening blob failed",
                     "error opening vector blob", "could not open vectors blob", "malformed database schema")


def points_to_corruption(error: BaseException) -> bool:
    """A SQLite (apsw) error that means the file is damaged, not busy, full or misused."""
    if type(error).__module__ != "apsw":
        return False
    if type(error).__name__ == "CorruptError":
        return True
    text = str(error).lower()
    return any(words in text for words in _CORRUPTION_WORDS)

