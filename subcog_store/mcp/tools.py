"""The MCP server's tools in plain Python (no SDK): arguments checked, the project's scope kept, answers as short
text for the model.

The project is the server's working directory as a domain (`scope.domain_for`; SUBCOG_HOOK_DOMAIN overrides), as
the hooks derive it from theirs: memories of other projects are never listed, shown or changed. One store
connection is kept for the server's life (every read and write is its own short transaction; hooks write the
same file concurrently); the model is loaded on the first call that needs it and kept. Every text that leaves is
redacted again (`text.redact.shown`). Any failure is a `ToolError`: the server answers it as a tool error.
"""
# Lazy imports: the store opens, and recall loads, on the first tool call that needs them.
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from subcog_store.config import is_postgres
from subcog_store.errors import SubcogError
from subcog_store.text.namespaces import NAMESPACES

if TYPE_CHECKING:
    from subcog_store.db.memories import Memory
    from subcog_store.store import CaptureResult, Store

log = logging.getLogger("subcog_store.mcp")
MAX_LIMIT = 20
LINE_CHARS = 200                 # a search line shows this much of a memory; `show` shows all of it
MAX_ID_CHARS = 300

_NS = {"type": "string", "enum": list(NAMESPACES)}
_ID = {"type": "string", "description": "URN (subcog://...) or id"}
# name -> (description, input schema, read-only). Short: the client sends them to the model every session.
TOOLS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "search": ("Search this project's memories from earlier sessions (decisions, learnings, patterns, ...). One "
               "line per memory: URN, namespace, score, text; OUTDATED marks a fact a newer memory replaced, "
               "POSSIBLY OUTDATED one the code it cites no longer bears out.",
               {"type": "object", "properties": {
                   "query": {"type": "string"},
                   "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 5},
                   "namespace": _NS},
                "required": ["query"], "additionalProperties": False}, True),
    "show": ("Show one memory of this project in full.",
             {"type": "object", "properties": {"id": _ID}, "required": ["id"], "additionalProperties": False}, True),
    "remember": ("Store a lasting fact of this project for later sessions. Duplicates are detected; answers what "
                 "was decided, why, and the URN.",
                 {"type": "object", "properties": {
                     "content": {"type": "string"}, "namespace": _NS,
                     "importance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
                     "tags": {"type": "array", "items": {"type": "string"}}},
                  "required": ["content", "namespace"], "additionalProperties": False}, False),
    "forget": ("Retire a memory of this project (out of search). Logged; reversible with `subcog-store reverse`.",
               {"type": "object", "properties": {"id": _ID, "reason": {"type": "string"}},
                "required": ["id"], "additionalProperties": False}, False),
}
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                       "array": (list,)}


class ToolError(Exception):
    """A call that cannot be served; the message is what the model reads."""


def check_arguments(name: str, arguments: object) -> dict[str, Any]:
    """The arguments of tool `name`, checked against its schema (names, types, required); raises ToolError."""
    if name not in TOOLS:
        raise ToolError(f"unknown tool {name[:80]!r}; the tools are: {', '.join(TOOLS)}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolError("arguments must be an object")
    schema = TOOLS[name][1]
    props = schema["properties"]
    if unknown := [k for k in arguments if k not in props]:
        raise ToolError(f"unknown argument {unknown[0][:40]!r}; {name} takes: {', '.join(props)}")
    if missing := [k for k in schema["required"] if arguments.get(k) is None]:
        raise ToolError(f"missing argument {missing[0]!r}")
    for key, value in arguments.items():
        want = props[key]["type"]
        if value is not None and (not isinstance(value, _TYPES[want]) or isinstance(value, bool)):
            raise ToolError(f"{key} must be {'an' if want[0] in 'aeiou' else 'a'} {want}, not {_json_type(value)}")
    return {k: v for k, v in arguments.items() if v is not None}


def _json_type(value: object) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _one_line(text: str | None, limit: int = LINE_CHARS) -> str:
    from subcog_store.text.redact import shown_line

    return shown_line(text, limit)


class Tools:
    """The tools over one store, for the project of `cwd` (default: the process's working directory)."""

    def __init__(self, db: Path, cwd: str | None = None, environ: Mapping[str, str] | None = None):
        self.db, self.cwd = (db if is_postgres(db) else Path(db)), cwd
        self._environ = environ
        self._store: "Store | None" = None
        self._opened: tuple[int, int] | None = None   # the file the store was opened on (device, inode)
        self._domain: str | None = None
        self._fresh = False               # settings read in this call
        self._lock = threading.Lock()     # one call at a time on the connection

    # -- set-up -----------------------------------------------------------------------------------------------
    @property
    def domain(self) -> str:
        if self._domain is None:
            from subcog_store.scope import domain_for

            self._domain = domain_for(self.cwd or os.getcwd(), self._environ)
        return self._domain

    @property
    def store(self) -> "Store":
        """The store, opened on first use and kept; once per call its settings are read again (a change made
        with `update settings` is seen without a restart) and the file at its path is checked to be the one it
        opened: one deleted or replaced since (device and inode) is let go and the path opened anew, never a
        write into a file nobody will read again. A PostgreSQL connection the server ended (a restart) is opened
        anew too: the call that met the restart failed with a clear error, the next one works."""
        from subcog_store.db.connection import let_go
        from subcog_store.db.files import file_id

        if self._store is not None and getattr(self._store.con, "lost", False):
            log.warning("the connection to the store was lost (a server restart?): opening it anew")
            self._store.close()
            self._store = None
        if self._store is not None and not self._fresh and file_id(self.db) != self._opened:
            log.warning("the database file %s was deleted or replaced since it was opened: opening it anew",
                        self.db)
            let_go(self._store.con)
            self._store = None
        if self._store is None:
            from subcog_store.store import Store

            if isinstance(self.db, Path) and not self.db.parent.is_dir():
                raise ToolError(f"the database directory {self.db.parent} does not exist")
            environ = dict(self._environ) if self._environ is not None else None
            self._store, self._fresh = Store(self.db, environ=environ, fetch_model=False), True
            self._opened = file_id(self.db)
        elif not self._fresh:
            self._store.settings, self._fresh = self._store.load_settings(), True
        return self._store

    def open(self) -> None:
        """Open the store now (a server does it while answering its first messages); a failure is left for the
        first call to report."""
        try:
            with self._lock:
                self.store
        except (ToolError, SubcogError):
            pass

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- dispatch ---------------------------------------------------------------------------------------------
    def call(self, name: str, arguments: object) -> str:
        """Run a tool; returns the text for the model or raises ToolError (never anything else)."""
        try:
            args = check_arguments(name, arguments)
            with self._lock:
                self._fresh = False
                return getattr(self, f"_{name}")(**args)
        except ToolError:
            raise
        except SubcogError as e:
            raise ToolError(str(e)) from None
        except Exception as e:  # noqa: BLE001 - a SQLite error, a bug: the server answers and keeps serving
            from subcog_store.db import files   # lazy: only when a call failed on SQLite
            from subcog_store.db.connection import database_error

            mapped = files.note_damage(self.db, e) or database_error(e, str(self.db))
            if mapped is None:
                log.exception("tool %s failed", name)
            raise ToolError(str(mapped) if mapped else f"internal error ({type(e).__name__}); see the server's "
                                                        "log") from None

    def _memory(self, ref: str) -> "Memory":
        """A memory of this project by id or URN (another project's is not found)."""
        from subcog_store.errors import NotFound

        if len(ref) > MAX_ID_CHARS or not ref.strip():
            raise ToolError("no such memory: an id or subcog:// URN is expected")
        ref = ref.strip()
        if ref.startswith("subcog://") and ref[len("subcog://"):].split("/", 1)[0] != self.domain:
            raise ToolError(f"{_one_line(ref, 120)} is not a memory of this project")
        try:
            memory = self.store.get(ref.rsplit("/", 1)[-1])
        except NotFound:
            raise ToolError(f"no memory {_one_line(ref, 120)} in this project") from None
        if memory.domain != self.domain:
            raise ToolError(f"no memory {_one_line(ref, 120)} in this project")
        return memory

    # -- the tools --------------------------------------------------------------------------------------------
    def _search(self, query: str, limit: int = 5, namespace: str | None = None) -> str:
        from subcog_store.db import locks
        from subcog_store.recall import inject
        from subcog_store.recall.session_search import search_all

        if not 1 <= limit <= MAX_LIMIT:
            raise ToolError(f"limit must be from 1 to {MAX_LIMIT}")
        started = time.perf_counter()
        store = self.store
        found = search_all(store, query, domain=self.domain, namespace=namespace, limit=limit)
        lines = []
        for f in found.items:   # memories (the project's and the developer's preferences), then sessions' text
            cos = f" cos {f.similarity:.2f}" if f.similarity is not None else ""
            if f.kind == "memory":
                h, m = f.hit, f.hit.memory
                old = f" OUTDATED (updated by {h.outdated_by})" if h.outdated_by else ""
                old += f" POSSIBLY OUTDATED ({_one_line(h.code_mark, 200)})" if h.code_mark else ""
                lines.append(f"- {m.urn} [{m.namespace}] {h.score:.4f}{cos}{old}: {_one_line(m.content)}")
            else:
                lines.append(f"- {f.ref} [earlier session, {f.hit.role}] {f.hit.score:.4f}{cos}: "
                             f"{_one_line(f.text)}")
        how = found.method + (f"; {found.note}" if found.note else "")
        head = f"{len(lines)} {'memory' if len(lines) == 1 else 'memories'} of this project ({how})" + \
            (":" if lines else ".")
        text = "\n".join([head, *lines])
        recall = inject.Recall(text=text, memory_ids=[f.hit.memory.id if f.kind == "memory" else f.ref
                                                      for f in found.items],
                               scores=[round(f.hit.score, 6) for f in found.items], method=found.method,
                               reason=found.note)
        try:   # best effort: a hook's capture holding the lock does not hold us
            with locks.best_effort(store.con):
                inject.log(store, recall, hook="mcp-search", domain=self.domain, session_id=None, query=query,
                           started=started)
        except Exception as e:  # noqa: BLE001 - the answer stands without its log row
            log.warning("search not logged: %s: %s", type(e).__name__, e)
        return text

    def _show(self, id: str) -> str:  # noqa: A002 - the argument's name in the schema
        m = self._memory(id)
        facts = [f"namespace {m.namespace}", f"status {m.status}", f"importance {m.importance:g}",
                 f"created {m.created_at}"]
        if m.tags:
            facts.append("tags " + ", ".join(_one_line(t, 60) for t in m.tags))
        if m.source:
            facts.append(f"source {_one_line(m.source, 60)}")
        lines = [m.urn, " · ".join(facts)]
        if m.successor_id:
            lines.append(f"OUTDATED: updated by {m.successor_id}")
        from subcog_store.db import citations
        from subcog_store.text.redact import shown

        lines += citations.describe(citations.of_memory(self.store.con, m.id))

        return "\n".join([*lines, "", shown(m.content) or ""])

    def _remember(self, content: str, namespace: str, importance: float = 0.5, tags: list | None = None) -> str:
        from subcog_store.inputs import validate_label

        session = os.environ.get("CLAUDE_CODE_SESSION_ID") if self._environ is None else \
            self._environ.get("CLAUDE_CODE_SESSION_ID")
        try:
            session = validate_label("session_id", session)
        except SubcogError:
            session = None
        result = self.store.capture(content, namespace, self.domain, importance=importance, tags=tags,
                                      source="mcp", session_id=session)
        if result.stored and result.memory_id:
            from subcog_store.code.record import cite_new

            cite_new(self.store.core, [result.memory_id], self.cwd or os.getcwd(), self.domain, 2.0)
        return describe(result)

    def _forget(self, id: str, reason: str | None = None) -> str:  # noqa: A002
        from subcog_store.inputs import validate_label

        m = self._memory(id)
        decision = self.store.forget(m.id, validate_label("reason", reason[:200] if reason else None))
        return f"forgot {m.urn} (decision {decision}; `subcog-store reverse {decision}` brings it back)"


def describe(result: "CaptureResult") -> str:
    """What a capture decided, why, and the URN, in two lines."""
    check = result.check
    if result.stored:
        head = f"stored {result.urn} (decision {result.decision}"
    else:
        head = f"not stored (decision {result.decision}" + (f"; existing memory {result.urn}" if result.urn else "")
    head += f"; log #{result.decision_id})" if result.decision_id else ")"
    why = result.reasoning
    if not why and check.is_duplicate:
        why = {"exact_match": "the same text is already stored",
               "recent_capture": f"the same text was captured {check.captured_seconds_ago or 0:.0f} s ago",
               "semantic_similar": f"the same meaning (similarity {check.similarity_score or 0:.3f})"}.get(
                   check.reason or "", check.reason)
    if not why:
        why = "no duplicate in this project's " + check.namespace if check.enabled else "deduplication is off"
    extra = [f"retired {', '.join(result.retired)}"] if result.retired else []
    extra += [f"marked as outdated: {', '.join(result.outdated)}"] if result.outdated else []
    extra += [f"{result.redacted} secret(s) replaced by [REDACTED]"] if result.redacted else []
    extra += result.warnings
    return "\n".join([head, f"why: {_one_line(why, 400)}", *extra])
