"""SQL lives in `sql/`: migrations in `sql/schema/NNN_name.sql`, named queries in `sql/queries/*.sql`.

PostgreSQL has its own tree under `sql/postgresql/` (the same layout): every function takes the `dialect`.

A query file holds blocks that start with `-- name: query_name`; the `--` lines right after the name are
its docstring. Queries are loaded once into a dict.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from subcog_store.config import resource_dir

_NAME = re.compile(r"^--\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")


class SqlFileError(Exception):
    """A query file is malformed (names the file and line)."""


class Query(str):
    """The SQL text of a named query, carrying its name: a backend with its own SQL runs its text of that name
    (`postgres/adapter.py`)."""

    __slots__ = ("name",)

    def __new__(cls, text: str, name: str) -> "Query":
        query = super().__new__(cls, text)
        query.name = name
        return query


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


DIALECTS = {"sqlite": "", "postgresql": "postgresql"}


@lru_cache(maxsize=2)
def queries(dialect: str = "sqlite") -> dict[str, Query]:
    """All named queries of `sql/queries/` (or `sql/postgresql/queries/`), by name."""
    found: dict[str, str] = {}
    for path in sorted((dialect_dir(dialect) / "queries").glob("*.sql")):
        name, body, start = None, [], 0
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines + ["-- name: _end_"], start=1):
            match = _NAME.match(line)
            if not match:
                if name is None and line.strip() and not line.startswith("--"):
                    raise SqlFileError(f"{path}:{number}: SQL before the first '-- name:' header")
                body.append(line)
                continue
            if name is not None:
                text = "\n".join(l for l in body if not l.lstrip().startswith("--")).strip()
                if not text:
                    raise SqlFileError(f"{path}:{start}: query {name!r} is empty")
                if name in found:
                    raise SqlFileError(f"{path}:{start}: query {name!r} is defined twice")
                found[name] = Query(text, name)
            name, body, start = match.group(1), [], number
    found.pop("_end_", None)
    return found


def sql_dir() -> Path:
    """The `sql/` directory (raises ConfigError naming where it looked when it is missing)."""
    return resource_dir("sql")


def dialect_dir(dialect: str = "sqlite") -> Path:
    """`sql/` for SQLite, `sql/postgresql/` for PostgreSQL."""
    return sql_dir() / DIALECTS[dialect]


def q(name: str, dialect: str = "sqlite") -> Query:
    """The SQL text of one named query (a missing name is a bug: SqlFileError names it)."""
    try:
        return queries(dialect)[name]
    except KeyError:
        raise SqlFileError(f"no query named {name!r} in {dialect_dir(dialect) / 'queries'}") from None


@lru_cache(maxsize=2)
def migrations(dialect: str = "sqlite") -> tuple[Migration, ...]:
    """The schema migrations, in version order."""
    steps = []
    for path in sorted((dialect_dir(dialect) / "schema").glob("*.sql")):
        version, _, name = path.stem.partition("_")
        steps.append(Migration(int(version), name, path.read_text(encoding="utf-8")))
    versions = [m.version for m in steps]
    if versions != list(range(1, len(steps) + 1)):
        raise SqlFileError(f"migrations in {dialect_dir(dialect) / 'schema'} must be numbered 1..n, found {versions}")
    return tuple(steps)
