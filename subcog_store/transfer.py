"""Export and import of memories: JSONL (every field, for a backup or a move to another machine) and Markdown (the
project's memory document: by namespace, current facts only, each outdated fact listed under the one that replaced
it).

Exports stream rows (oldest first) and redact every text again on the way out, as every output does. An exported
line is also a `capture --jsonl` line. `import_lines` captures each current memory of a JSONL export through the
store's own check, in the export's order, each line meeting only the store (as it was when the line was first
captured), so a second import of the same file stores nothing; a bad line gets its reason and the others go on.
"""
# Lazy imports: the store and its capture load for an import only (an export reads rows).
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

from subcog_store.db import export as db_export
from subcog_store.db.decisions import STORED_DECISIONS
from subcog_store.db.memories import Memory
from subcog_store.text.redact import shown

if TYPE_CHECKING:
    from subcog_store.store import Store

FORMATS = ("jsonl", "markdown")
IMPORT_CHUNK = 256          # lines parsed, then captured, at a time
MAX_LINE = 1 << 20          # a longer line is refused (a memory is at most 64 KiB)
ERRORS_KEPT = 20            # bad lines reported by number and reason (the rest only counted)


def count(store: "Store", domain: str | None = None, include_all: bool = False) -> int:
    return db_export.count(store.con, domain, include_all)


def memories(store: "Store", domain: str | None = None, include_all: bool = False) -> Iterator[Memory]:
    """The memories to export, oldest first, one row at a time."""
    yield from db_export.memories(store.con, domain, include_all)


def line(memory: Memory) -> str:
    """One JSONL line: what `capture --jsonl` and `import` read, plus where it came from."""
    return json.dumps({
        "content": shown(memory.content), "namespace": memory.namespace, "domain": memory.domain,
        "importance": memory.importance, "tags": memory.tags, "source": memory.source,
        "session_id": memory.session_id, "created_at": memory.created_at, "id": memory.id, "urn": memory.urn,
        "status": memory.status, "updated_at": memory.updated_at,
        "outdated_by": memory.successor_id}, ensure_ascii=False)


def export_jsonl(store: "Store", out: IO[str], domain: str | None = None, include_all: bool = False,
                 progress: Callable[[int], None] | None = None) -> int:
    n = 0
    for n, memory in enumerate(memories(store, domain, include_all), start=1):
        out.write(line(memory) + "\n")
        if progress:
            progress(n)
    return n


def export_markdown(store: "Store", out: IO[str], domain: str | None = None, version: str = "",
                    today: str = "", progress: Callable[[int], None] | None = None) -> int:
    """The memory document of `domain` (or of every domain, one part each); returns the current facts written."""
    outdated: dict[str, list[dict]] = {}
    for row in db_export.outdated(store.con, domain):
        outdated.setdefault(row["successor_id"], []).append(row)
    current_domain = current_namespace = None
    n = 0
    level = "#" if domain else "##"
    if not domain:
        out.write(f"# Memories\n\nExported by subcog-store {version} on {today}: every project's current facts, by "
                  "project and namespace; a fact a newer memory replaced is listed under it.\n")
    for m in db_export.current(store.con, domain):
        if m.domain != current_domain:
            current_domain, current_namespace = m.domain, None
            out.write(f"\n{level} {'Memories of ' if domain else ''}{_escape(m.domain)}\n")
            if domain:
                out.write(f"\nThe memories of this project, exported by subcog-store {version} on {today}: current "
                          "facts only, by namespace, the most important first; a fact a newer memory replaced is "
                          "listed under it.\n")
        if m.namespace != current_namespace:
            current_namespace = m.namespace
            out.write(f"\n{level}# {m.namespace}\n\n")
        out.write(_bullet(m, outdated))
        n += 1
        if progress:
            progress(n)
    if n == 0:
        out.write("\nNo memories.\n")
    return n


def _bullet(m: Memory, outdated: dict[str, list[dict]]) -> str:
    meta = [f"`{m.urn}`", m.created_at[:10], f"importance {m.importance:.2f}"]
    if m.tags:
        meta.append("tags: " + ", ".join(_escape(t) for t in m.tags))
    text = f"- {_block(shown(m.content) or '')}\n  {' · '.join(meta)}\n"
    return text + _replaced(m.id, outdated, 1, set())


def _replaced(memory_id: str, outdated: dict[str, list[dict]], depth: int, seen: set[str]) -> str:
    out = ""
    for old in outdated.get(memory_id, []):
        if old["id"] in seen or depth > 20:
            continue
        seen.add(old["id"])
        indent = "  " * depth
        out += (f"{indent}- replaced: ~~{_block(shown(old['content']) or '', indent + '  ')}~~ "
                f"(`{old['id']}` · {old['created_at'][:10]})\n")
        out += _replaced(old["id"], outdated, depth + 1, seen)
    return out


def _escape(text: str) -> str:
    """Stored text as Markdown text: no HTML (a memory holding `<script>` reads as text)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _block(text: str, indent: str = "  ") -> str:
    """A memory inside a list item: escaped, its later lines indented under it."""
    lines = _escape(text).strip().splitlines() or [""]
    return lines[0] + "".join(f"\n{indent}{x}" if x.strip() else "\n" for x in lines[1:])


# -- import ---------------------------------------------------------------------------------------------------------
@dataclass
class ImportReport:
    """What an import did: decisions by kind, lines that were not current memories, bad lines."""

    lines: int = 0
    decisions: Counter = field(default_factory=Counter)
    not_current: int = 0
    errors: int = 0
    error_lines: list[dict] = field(default_factory=list)

    @property
    def stored(self) -> int:
        return sum(n for d, n in self.decisions.items() if d in STORED_DECISIONS)

    @property
    def skipped(self) -> int:
        """Lines whose memory was not stored (a duplicate, or refused by a policy)."""
        return sum(self.decisions.values()) - self.stored

    def fail(self, number: int, reason: str) -> None:
        self.errors += 1
        if len(self.error_lines) < ERRORS_KEPT:
            self.error_lines.append({"line": number, "error": reason})

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "stored": self.stored, "decisions": dict(self.decisions),
                "not_current": self.not_current, "errors": self.errors, "error_lines": self.error_lines}


def import_lines(store: "Store", raw_lines: Iterable[bytes], domain: str | None = None,
                 progress: Callable[[int], None] | None = None) -> ImportReport:
    """Capture the current memories of a JSONL export (`domain`: all of them into this one instead)."""
    report = ImportReport()
    chunk: list[tuple[int, dict]] = []
    done = 0
    for number, raw in enumerate(raw_lines, start=1):
        done += len(raw)
        item = _parse(raw, number, report)
        if item is not None:
            chunk.append((number, item))
        if len(chunk) >= IMPORT_CHUNK:
            _capture(store, chunk, domain, report)
            chunk = []
            if progress:
                progress(done)
    _capture(store, chunk, domain, report)
    if progress:
        progress(done)
    return report


def bounded_lines(stream: IO[bytes], limit: int = MAX_LINE) -> Iterator[bytes]:
    """The lines of a binary stream; of a line over `limit`, its first `limit + 1` bytes (the rest is skipped
    unread into memory), so a file of any shape is read in bounded memory."""
    while line := stream.readline(limit + 1):
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := stream.readline(1 << 16)) and not rest.endswith(b"\n"):
                pass
        yield line


def _parse(raw: bytes, number: int, report: ImportReport) -> dict | None:
    if not raw.strip():
        return None
    report.lines += 1
    if len(raw) > MAX_LINE:
        report.fail(number, f"line longer than {MAX_LINE} bytes")
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        report.fail(number, f"not a JSON line ({str(e)[:80]})")
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("content"), str) or \
            not isinstance(obj.get("namespace"), str):
        report.fail(number, 'expected an object with a string "content" and "namespace"')
        return None
    if obj.get("status", "active") != "active":
        report.not_current += 1
        return None
    return obj


def _capture(store: "Store", chunk: list[tuple[int, dict]], domain: str | None, report: ImportReport) -> None:
    from subcog_store.errors import DatabaseError
    from subcog_store.store import CaptureRequest

    if not chunk:
        return
    requests = [CaptureRequest(o["content"], o["namespace"], domain or o.get("domain"), o.get("importance", 0.5),
                               o.get("tags"), o.get("source") or "import", o.get("session_id"), None,
                               o.get("created_at")) for _, o in chunk]
    for (number, _), outcome in zip(chunk, store.capture_many(requests, dedupe_batch=False)):
        if outcome.error is not None:
            if isinstance(outcome.error, DatabaseError):
                raise outcome.error
            report.fail(number, str(outcome.error))
        elif outcome.result is not None:
            report.decisions[outcome.result.decision] += 1
