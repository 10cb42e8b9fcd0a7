"""`copy SOURCE DEST`: the current memories of one store into another (SQLite to PostgreSQL and back, or any two),
each through the destination's own deduplication and decision log, with its vector, importance, tags, source,
session and creation date; then the "outdated by" links between them that the destination did not make itself.

Memories go oldest first (a changed fact meets the fact it changes, as on the day it was captured). Each carries
its stored vector: nothing is embedded again, so the copy needs no model and the destination's semantic check sees
the vectors the source had. A memory the destination holds already is a duplicate there (the exact tier for the
same text), so a second copy stores nothing. Retired memories (superseded, merged, deleted) are left out and
counted.
"""
# Lazy imports: numpy only when a vector is carried over.
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from subcog_store.clock import iso
from subcog_store.core import Core
from subcog_store.db import export as db_export, memories as writer, vectors as db_vectors
from subcog_store.db.connection import immediate
from subcog_store.db.decisions import STORED_DECISIONS
from subcog_store.dedup.outdated import Outdated, link_outdated
from subcog_store.dedup.write import capture_prepared
from subcog_store.errors import InvalidInput, SubcogError
from subcog_store.inputs import CaptureRequest, prepare

if TYPE_CHECKING:
    from subcog_store.db.memories import Memory


@dataclass
class CopyReport:
    """What a copy did: the destination's decisions by kind, links made, memories left out or refused."""

    memories: int = 0
    decisions: Counter = field(default_factory=Counter)
    linked: int = 0
    retired_left_out: int = 0
    errors: list[dict] = field(default_factory=list)

    @property
    def copied(self) -> int:
        return sum(n for d, n in self.decisions.items() if d in STORED_DECISIONS)

    def to_dict(self) -> dict[str, Any]:
        return {"memories": self.memories, "copied": self.copied, "decisions": dict(self.decisions),
                "linked": self.linked, "retired_left_out": self.retired_left_out, "errors": self.errors}


def count(source: Core, domain: str | None) -> int:
    return db_export.count(source.con, domain, False)


def copy_memories(source: Core, dest: Core, domain: str | None = None,
                  progress: Callable[[int], None] | None = None) -> CopyReport:
    """Copy the current memories of `source` (of one domain, or all) into `dest`; see the module's docstring."""
    import numpy as np

    if dest.readonly:
        raise InvalidInput(f"{dest.path}: opened read-only")
    report = CopyReport()
    report.retired_left_out = db_export.count(source.con, domain, True) - db_export.count(source.con, domain, False)
    mapped: dict[str, str] = {}            # source id -> the destination's memory holding it
    outdated: list["Memory"] = []
    for n, memory in enumerate(list(db_export.memories(source.con, domain, False)), start=1):
        report.memories += 1
        try:
            p = prepare(CaptureRequest(memory.content, memory.namespace, memory.domain, memory.importance,
                                       memory.tags, memory.source, memory.session_id, None, memory.created_at))
            blob = db_vectors.of_memory(source.con, memory.id)
            if blob is not None:
                dest.vectors.remember(p.content_hash, np.frombuffer(blob, dtype="<f4").copy())
            result = capture_prepared(dest, p)
        except SubcogError as e:
            if e.exit_code == 4:      # the destination failed (down, locked): stop, what is copied stays
                raise
            report.errors.append({"id": memory.id, "error": str(e)[:200]})
            continue
        report.decisions[result.decision] += 1
        if result.memory_id:
            mapped[memory.id] = result.memory_id
        if memory.successor_id:
            outdated.append(memory)
        if progress:
            progress(n)
    report.linked = _link(dest, outdated, mapped)
    return report


class _CopiedLink:
    """The reason a copied link gives in the decision log."""

    def describe(self) -> str:
        return "outdated by it in the store copied from (copy)"


def _link(dest: Core, outdated: list["Memory"], mapped: dict[str, str]) -> int:
    """The source's "outdated by" links between memories now in `dest`, where `dest` has none yet (logged as
    changed_fact decisions, reversible like any)."""
    linked = 0
    for memory in outdated:
        old, new = mapped.get(memory.id), mapped.get(memory.successor_id or "")
        if not old or not new or old == new:
            continue
        with immediate(dest.con):
            older, newer = writer.get(dest.con, old), writer.get(dest.con, new)
            if older is None or newer is None or older.successor_id or newer.status != "active":
                continue
            found = [Outdated(older.id, older.namespace, older.content, 1.0, _CopiedLink())]   # type: ignore[arg-type]
            linked += len(link_outdated(dest.con, found, memory_id=newer.id, domain=newer.domain,
                                        namespace=newer.namespace, content=newer.content,
                                        content_hash=newer.content_hash, now=iso(dest.clock())))
    return linked
