"""The citations tables (`citations`, `memory_code`): the one owner of their queries.

What a memory cites in its project's code, the commit it was cited at, each citation's last check (the file's
size and mtime then, and what no longer held), and the memory's mark: why the code may no longer bear it out.
Writes run inside the caller's transaction (`db.connection.immediate`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from subcog_store.db.connection import dict_rows
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw

MISSING, UNREADABLE = -1, -2     # checked_size of a file that was not there, or could not be read
MAX_REASONS = 3                  # a memory's mark names at most this many of its problems


@dataclass(frozen=True)
class Citation:
    """One thing a memory cites: a file, a symbol in a file, or a key's value in a file."""

    kind: str                    # file | symbol | value
    path: str
    name: str | None = None
    value: str | None = None


@dataclass
class Stored:
    """A stored citation, as a check reads it."""

    id: int
    memory_id: str
    kind: str
    path: str
    name: str | None
    value: str | None
    problem: str | None
    status: str
    commit_sha: str | None


def replace(con: "apsw.Connection", memory_id: str, domain: str, citations: Iterable[Citation], *,
            root: str | None, commit: str | None, now: str, cited_by: str) -> None:
    """A memory's citations, written anew (never checked yet), and where and when they were taken."""
    con.execute(q("delete_citations_of"), {"memory_id": memory_id})
    for c in citations:
        con.execute(q("insert_citation"), {"memory_id": memory_id, "domain": domain, "kind": c.kind,
                                           "path": c.path, "name": c.name, "value": c.value})
    con.execute(q("upsert_memory_code"), {"memory_id": memory_id, "domain": domain, "root": root,
                                          "commit_sha": commit, "cited_at": now, "cited_by": cited_by})


def file_states(con: "apsw.Connection", domain: str) -> dict[str, list[tuple]]:
    """Each cited file of a domain -> the states (size, mtime ns, checked ns) its citations were checked in."""
    out: dict[str, list[tuple]] = {}
    for path, size, mtime, checked in con.execute(q("cited_file_states"), {"domain": domain}):
        out.setdefault(path, []).append((size, mtime, checked))
    return out


def at_paths(con: "apsw.Connection", domain: str, paths: list[str]) -> list[Stored]:
    return [Stored(**r) for r in dict_rows(con.execute(q("citations_at_paths"), {"domain": domain,
                                                                               "paths": json.dumps(paths)}))]


def set_checked(con: "apsw.Connection", citation_id: int, problem: str | None, size: int, mtime_ns: int | None,
                checked_ns: int) -> None:
    con.execute(q("set_citation_checked"), {"id": citation_id, "problem": problem, "checked_size": size,
                                            "checked_mtime_ns": mtime_ns, "checked_ns": checked_ns})


def move(con: "apsw.Connection", citation_id: int, path: str) -> None:
    con.execute(q("set_citation_path"), {"id": citation_id, "path": path})


def refresh_marks(con: "apsw.Connection", memory_ids: Iterable[str], now: str) -> dict[str, str | None]:
    """Set each memory's mark from its citations' problems; returns memory id -> mark (None: none)."""
    ids = list(dict.fromkeys(memory_ids))
    problems: dict[str, list[str]] = {mid: [] for mid in ids}
    for memory_id, problem in con.execute(q("problems_of_memories"), {"ids": json.dumps(ids)}):
        if problem not in problems[memory_id]:
            problems[memory_id].append(problem)
    marks = {}
    for memory_id, found in problems.items():
        mark = None
        if found:
            mark = "; ".join(found[:MAX_REASONS]) + (f" (and {len(found) - MAX_REASONS} more)"
                                                      if len(found) > MAX_REASONS else "")
        con.execute(q("set_outdated"), {"memory_id": memory_id, "outdated": mark, "now": now})
        marks[memory_id] = mark
    return marks


def marks(con: "apsw.Connection", memory_ids: Iterable[str]) -> dict[str, str]:
    """The marks of those memories the code no longer bears out (memory id -> why)."""
    ids = list(memory_ids)
    if not ids:
        return {}
    return dict(con.execute(q("code_marks"), {"ids": json.dumps(ids)}).fetchall())


def outdated(con: "apsw.Connection", domain: str, limit: int = 100) -> list[dict]:
    """The active memories of a domain the code no longer bears out, most recently marked first."""
    return dict_rows(con.execute(q("outdated_memories"), {"domain": domain, "limit": limit}))


def citing_path(con: "apsw.Connection", domain: str, path: str, limit: int) -> list[dict]:
    """Current memories that cite a file (or a symbol or value in it), most citations of it first."""
    return dict_rows(con.execute(q("memories_citing_path"), {"domain": domain, "path": path, "limit": limit}))


def of_memory(con: "apsw.Connection", memory_id: str) -> dict | None:
    """One memory's citations and where they were taken (None: never cited)."""
    code = dict_rows(con.execute(q("memory_code_of"), {"memory_id": memory_id}))
    if not code:
        return None
    return {**code[0], "citations": dict_rows(con.execute(q("citations_of_memory"), {"memory_id": memory_id}))}


def to_cite(con: "apsw.Connection", domain: str, include_cited: bool, limit: int) -> list[dict]:
    """Active memories of a domain without citations yet (or all of them), oldest first."""
    return dict_rows(con.execute(q("memories_to_cite"), {"domain": domain, "all": int(include_cited),
                                                         "limit": limit}))


def confirm(con: "apsw.Connection", memory_id: str, now: str) -> int:
    """The user says the memory is still true: the claims the code contradicts are dropped, the mark cleared;
    returns how many claims were dropped."""
    con.execute(q("drop_failing_citations"), {"memory_id": memory_id})
    dropped = con.changes()
    con.execute(q("confirm_memory_code"), {"memory_id": memory_id, "now": now})
    return dropped


def describe(code: dict | None) -> list[str]:
    """A memory's citations as lines for people (`show`)."""
    if code is None:
        return ["code: not cited yet (`subcog-store cite`)"]
    where = f"at commit {code['commit_sha'][:12]}" if code["commit_sha"] else "outside git"
    lines = [f"code: {len(code['citations'])} citations, taken {where} on {code['cited_at']} ({code['cited_by']})"]
    if code["outdated"]:
        lines.append(f"possibly outdated (since {code['outdated_at']}): {code['outdated']}")
    for c in code["citations"]:
        what = c["path"] + (f" {c['name']}" if c["name"] else "") + (f" = {c['value']}" if c["value"] else "")
        lines.append(f"  {c['kind']}: {what}" + (f"  [{c['problem']}]" if c["problem"] else ""))
    return lines


def move_domain(con: "apsw.Connection", memory_id: str, domain: str) -> None:
    """A memory moved to another domain: its citations and their record go with it."""
    con.execute(q("move_citations_domain"), {"memory_id": memory_id, "domain": domain})
    con.execute(q("move_memory_code_domain"), {"memory_id": memory_id, "domain": domain})
