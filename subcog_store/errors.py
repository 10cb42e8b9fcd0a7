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


class IntegrityError(SubcogError):
    """`doctor` found a broken invariant."""

    exit_code = 6


class NotFound(SubcogError):
    """No memory or decision with that id."""

    exit_code = 7
