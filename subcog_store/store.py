"""The Store: one SQLite file; capture, check, record, read. Python orchestrates, SQL decides."""
from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

import apsw

from subcog_store.dedup.check import CheckInputs, CheckResult, apply_guard, check_row, exact_tier, guard_floor, run_check, urn
from subcog_store.clock import Clock, iso, system_clock
from subcog_store.config import MAX_CONTENT_BYTES, Settings
from subcog_store.db.connection import BUSY_TIMEOUT_MS, connect, immediate
from subcog_store.errors import DatabaseError, InvalidInput, NotFound
from subcog_store.text.namespaces import canonical_domain, canonical_namespace
from subcog_store.text.normalize import content_hash
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.model.embedder import Embedder
    from subcog_store.dedup.policies import Plan

log = logging.getLogger("subcog_store")
MEMORY_COLUMNS = ("id", "domain", "namespace", "content", "content_hash", "importance", "tags", "status", "source",
                  "session_id", "created_at", "updated_at", "successor_id", "seq")
SYNCED_SETTINGS = ("dedup_time_window_secs", "dedup_cache_capacity")
CHECK_LOG_WAIT_MS = 250


@dataclass
class Memory:
    id: str
    domain: str
    namespace: str
    content: str
    content_hash: str
    importance: float
    tags: list[str]
    status: str
    source: str | None
    session_id: str | None
    created_at: str
    updated_at: str
    successor_id: str | None
    seq: int

    @classmethod
    def from_row(cls, row: Sequence) -> "Memory":
        data = dict(zip(MEMORY_COLUMNS, row))
        data["tags"] = json.loads(data["tags"])
        return cls(**data)

    @property
    def urn(self) -> str:
        return urn(self.domain, self.namespace, self.id)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("seq")
        data["urn"] = self.urn
        return data


@dataclass
class CaptureResult:
    stored: bool
    decision: str
    memory_id: str | None
    urn: str | None
    check: CheckResult
    decision_id: int | None = None
    retired: list[str] = field(default_factory=list)
    reasoning: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = {k: v for k, v in asdict(self).items() if k != "check"}
        data.update({k: v for k, v in self.check.to_dict().items() if k not in data})
        return data


def validate_content(content: object) -> str:
    """Return the content as str, or raise InvalidInput (empty, oversized, not UTF-8)."""
    if isinstance(content, (bytes, bytearray)):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInput(f"content is not valid UTF-8 (byte {e.start})") from None
    if not isinstance(content, str):
        raise InvalidInput("content must be text")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput("content is not valid UTF-8 (lone surrogate)") from None
    if not content.strip():
        raise InvalidInput("content is empty or only whitespace")
    if size > MAX_CONTENT_BYTES:
        raise InvalidInput(f"content is {size} bytes; the limit is {MAX_CONTENT_BYTES} bytes (64 KiB)")
    return content


def validate_tags(tags: Iterable[str] | None) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, (str, bytes)) or not isinstance(tags, (list, tuple, set, frozenset)):
        raise InvalidInput(f"tags must be a list of strings, not {type(tags).__name__}")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInput(f"invalid tag {tag!r}: tags are non-empty strings")
        if tag.strip() not in out:
            out.append(tag.strip())
    return out


def validate_importance(importance: object) -> float:
    try:
        value = float(importance)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInput(f"importance {importance!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise InvalidInput(f"importance {value} is out of range (0 to 1)")
    return value


class Store:
    """A subcog-store database. `embedder=None` uses the packaged MiniLM model, loaded on first need."""

    def __init__(self, path: str | os.PathLike, *, embedder: "Embedder | None" = None, clock: Clock = system_clock,
                 environ: dict[str, str] | None = None, readonly: bool = False):
        self.path = str(path)
        self.con = connect(self.path, readonly=readonly)
        self.clock = clock
        self.readonly = readonly
        self._environ = environ
        self.settings = self.load_settings()
        self._embedder = embedder
        self._embedder_error: str | None = None
        self._vectors: OrderedDict[str, "np.ndarray"] = OrderedDict()

    # -- set-up -------------------------------------------------------------------------------------------
    def load_settings(self) -> Settings:
        stored = dict(self.con.execute(q("select_settings")).fetchall())
        return Settings.load(stored, self._environ)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> "Embedder | None":
        """The embedder, or None when the semantic tier is disabled or the model is missing or broken."""
        if not self.settings.dedup_semantic_enabled or self._embedder_error:
            return None
        if self._embedder is None:
            from subcog_store.model.embedder import Embedder
            directory = (self._environ or {}).get("SUBCOG_MODEL_DIR")
            self._embedder = Embedder(Path(directory) if directory else None)
        try:
            self._embedder.load()
        except Exception as e:  # missing or corrupt files, onnxruntime failure: the text tier stands in
            self._embedder_error = f"{type(e).__name__}: {e}"
            log.warning("semantic tier off, using the text tier instead: %s", self._embedder_error)
            return None
        return self._embedder

    @property
    def embedder_error(self) -> str | None:
        return self._embedder_error

    def embed(self, content: str, hash_hex: str | None = None) -> "np.ndarray | None":
        """The unit vector of `content` (cached by content hash: identical content is embedded once)."""
        key = hash_hex or content_hash(content)
        if key in self._vectors:
            self._vectors.move_to_end(key)
            return self._vectors[key]
        embedder = self.embedder
        if embedder is None:
            return None
        vector = embedder.embed_batch([content])[0]
        self._remember_vector(key, vector)
        return vector

    def embed_many(self, contents: Sequence[str]) -> None:
        """Embed a batch in one model call (only contents not already cached) and cache the vectors.

        An optimisation only: when the batch fails, each content is embedded (or fails open) on its own later.
        """
        if not contents or not self.settings.dedup_semantic_enabled:
            return
        try:
            self._embed_missing(contents)
        except Exception as e:  # noqa: BLE001
            log.warning("batch embedding failed, embedding one by one: %s: %s", type(e).__name__, e)

    def _embed_missing(self, contents: Sequence[str]) -> None:
        missing = {}
        for text in contents:
            key = content_hash(text)
            if key not in self._vectors:
                missing.setdefault(key, text)
        embedder = self.embedder if missing else None
        if embedder is None:
            return
        vectors = embedder.embed_batch(list(missing.values()))
        for key, vector in zip(missing, vectors):
            self._remember_vector(key, vector)

    def _remember_vector(self, key: str, vector: "np.ndarray") -> None:
        self._vectors[key] = vector
        while len(self._vectors) > 4096:
            self._vectors.popitem(last=False)

    # -- the check ------------------------------------------------------------------------------------------
    def _inputs(self, content: object, namespace: str, domain: str | None) -> CheckInputs:
        text = validate_content(content)
        return CheckInputs(text, content_hash(text), canonical_namespace(namespace), canonical_domain(domain),
                           self.clock())

    def check_duplicate(self, content: str, namespace: str, domain: str | None = None, *,
                        log_check: bool = True) -> CheckResult:
        """Is `content` a duplicate in its (domain, namespace)? Runs exact, semantic, recent; first hit wins."""
        inputs = self._inputs(content, namespace, domain)
        result = run_check(self.con, inputs, self.settings, self._embed_for_check)
        if log_check and not self.readonly:
            # The log row is best effort: a check on a read-only or busy file still answers, without waiting
            # long behind another process's capture.
            self.con.setbusytimeout(CHECK_LOG_WAIT_MS)
            try:
                with immediate(self.con):
                    self.con.execute(q("insert_check"), check_row(result, iso(inputs.now), inputs.content_hash[:16]))
            except apsw.Error as e:
                log.warning("check not logged: %s", e)
            finally:
                self.con.setbusytimeout(BUSY_TIMEOUT_MS)
        return result

    def _embed_for_check(self, content: str, hash_hex: str) -> "np.ndarray | None":
        return self.embed(content, hash_hex)

    # -- capture --------------------------------------------------------------------------------------------
    def capture(self, content: str, namespace: str, domain: str | None = None, *, importance: float = 0.5,
                tags: Iterable[str] | None = None, source: str | None = None, session_id: str | None = None,
                policy: str | None = None) -> CaptureResult:
        """Check `content` and, unless it is a duplicate under the namespace's policy, store it (memory, vector
        and recent-capture row in one transaction). Every decision is written to the decision log."""
        inputs = self._inputs(content, namespace, domain)
        tags_list, importance = validate_tags(tags), validate_importance(importance)
        for name, value in (("source", source), ("session_id", session_id)):
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"{name} must be text, not {type(value).__name__}")
        if policy is not None and policy not in ("skip", "verify", "replace", "merge"):
            raise InvalidInput(f"unknown policy {policy!r}: skip, verify, replace or merge")
        if self.readonly:
            raise DatabaseError(f"{self.path}: opened read-only")
        from subcog_store.dedup import policies

        policy = policy or self.settings.policy(inputs.namespace)
        check = run_check(self.con, inputs, self.settings, self._embed_for_check)
        floor = guard_floor(check, self.settings)
        apply_guard(inputs.content, [n for n in check.neighbours if n.similarity >= floor])
        matched_at = None
        if check.neighbours:
            best = max(check.neighbours, key=lambda n: n.similarity)
            row = self.con.execute(q("get_memory"), {"id": best.memory_id}).fetchone()
            matched_at = row[10] if row else None
        plan = policies.plan(check, inputs.content, policy, self.settings, iso(inputs.now), matched_at)
        vector = None
        if plan.store and self.settings.dedup_semantic_enabled:
            try:
                vector = self.embed(plan.content)
            except Exception as e:  # fail open: store without a vector; doctor reports it, reembed fixes it
                plan.warnings.append(f"not embedded: {type(e).__name__}: {e}")
        meta = {"importance": importance, "tags": tags_list, "source": source, "session_id": session_id}
        try:
            return self._apply(inputs, check, plan, vector, meta)
        except apsw.BusyError:
            raise DatabaseError(f"{self.path}: the database is locked by another process") from None
        except (apsw.ReadOnlyError, apsw.CantOpenError) as e:
            raise DatabaseError(f"{self.path}: cannot write: {e}") from None

    def _apply(self, inputs: CheckInputs, check: CheckResult, plan: "Plan", vector: "np.ndarray | None",
               meta: dict) -> CaptureResult:
        now = iso(inputs.now)
        with immediate(self.con), self._pruning_settings(now):
            if plan.store:
                self._revalidate(inputs, check, plan)
            undo: dict = {"candidate": {"content": inputs.content, **meta}}
            memory_id = None
            if plan.retire:
                undo["retired"] = [self._retire(mid, plan.retire_status, now) for mid in plan.retire]
            if plan.store:
                if plan.decision == "merged" and undo.get("retired"):  # highest importance, union of tags
                    old = undo["retired"][0]["row"]
                    meta = {**meta, "importance": max(meta["importance"], old["importance"]),
                            "tags": list(dict.fromkeys(json.loads(old["tags"]) + meta["tags"]))}
                memory_id = self._insert_memory(inputs, plan.content, meta, vector, now)
                for retired in undo.get("retired", []):
                    self.con.execute("update memories set successor_id = ? where id = ?",
                                     (memory_id, retired["row"]["id"]))
                undo["stored"] = memory_id
            elif plan.decision == "hash_exact" and check.matched_memory_id:
                self._touch_on_hash_hit(check.matched_memory_id, meta, now)
            self.con.execute(q("insert_check"), check_row(check, now, inputs.content_hash[:16]))
            decision_id = self._log_decision(inputs, plan, memory_id, undo, now)
        result_urn = urn(inputs.domain, inputs.namespace, memory_id) if memory_id else check.matched_urn
        return CaptureResult(plan.store, plan.decision, memory_id or check.matched_memory_id, result_urn, check,
                             decision_id, list(plan.retire), plan.reasoning, plan.warnings)

    def _revalidate(self, inputs: CheckInputs, check: CheckResult, plan: "Plan") -> None:
        """Under the write lock: another process may have stored the same text, or retired our match."""
        plan.retire = [mid for mid in plan.retire if self._status(mid) == "active"]
        if not plan.retire and plan.decision in ("replaced", "merged"):
            plan.decision, plan.content = "stored", inputs.content
        found = exact_tier(self.con, content_hash(plan.content), inputs.namespace, inputs.domain)
        if found and found[0] not in plan.retire:
            plan.decision, plan.store, plan.retire = "hash_exact", False, []
            check.is_duplicate, check.reason, check.method = True, "exact_match", "hash"
            check.matched_memory_id, check.similarity_score = found[0], 1.0
            check.matched_urn = urn(inputs.domain, inputs.namespace, found[0])

    def _status(self, memory_id: str) -> str | None:
        row = self.con.execute("select status from memories where id = ?", (memory_id,)).fetchone()
        return row[0] if row else None

    def _insert_memory(self, inputs: CheckInputs, content: str, meta: dict, vector: "np.ndarray | None",
                       now: str) -> str:
        for _ in range(5):
            memory_id = os.urandom(6).hex()
            try:
                seq, stored_hash = self.con.execute(q("insert_memory"), {
                    "id": memory_id, "domain": inputs.domain, "namespace": inputs.namespace, "content": content,
                    "importance": meta["importance"], "tags": json.dumps(meta["tags"]), "source": meta["source"],
                    "session_id": meta["session_id"], "now": now}).fetchone()
                break
            except apsw.ConstraintError as e:
                if "memories.id" not in str(e):
                    raise
        else:
            raise DatabaseError("could not allocate a memory id")
        if vector is not None:
            self.con.execute(q("insert_vector"), {"seq": seq, "namespace": inputs.namespace,
                                                  "domain": inputs.domain, "embedding": vector.tobytes()})
        self.con.execute(q("insert_recent_capture"), {"content_hash": stored_hash, "memory_id": memory_id,
                                                      "namespace": inputs.namespace, "domain": inputs.domain,
                                                      "captured_at": inputs.now})
        return memory_id

    def _retire(self, memory_id: str, status: str, now: str) -> dict:
        """Take a memory out of search (status + vector moved aside); returns its row for undo."""
        row = dict(zip(MEMORY_COLUMNS, self.con.execute(q("get_memory"), {"id": memory_id}).fetchone()))
        vector = self.con.execute(q("select_vector"), {"seq": row["seq"]}).fetchone()
        if vector:
            self.con.execute("insert or replace into retired_vectors (memory_seq, embedding) values (?, ?)",
                             (row["seq"], vector[0]))
            self.con.execute(q("delete_vector"), {"seq": row["seq"]})
        self.con.execute("update memories set status = ?, updated_at = ? where id = ?", (status, now, memory_id))
        return {"row": row}

    def _touch_on_hash_hit(self, memory_id: str, meta: dict, now: str) -> None:
        """A repeat may bring new tags or a higher importance: keep them on the existing memory."""
        row = self.con.execute("select tags, importance from memories where id = ?", (memory_id,)).fetchone()
        if not row:
            return
        tags = list(dict.fromkeys(json.loads(row[0]) + meta["tags"]))
        importance = max(row[1], meta["importance"])
        if tags != json.loads(row[0]) or importance != row[1]:
            self.con.execute("update memories set tags = ?, importance = ?, updated_at = ? where id = ?",
                             (json.dumps(tags), importance, now, memory_id))

    def _log_decision(self, inputs: CheckInputs, plan: "Plan", memory_id: str | None, undo: dict,
                      now: str) -> int:
        confirmed = plan.decision in ("hash_exact", "stored")
        return self.con.execute(q("log_decision"), {
            "decided_at": now, "domain": inputs.domain, "namespace": inputs.namespace, "policy": plan.policy,
            "decision": plan.decision, "new_content": inputs.content, "new_hash": inputs.content_hash,
            "matched_memory_id": plan.matched.memory_id if plan.matched else None,
            "matched_content": plan.matched.content if plan.matched else None, "similarity": plan.similarity,
            "memory_id": memory_id, "reasoning": plan.reasoning,
            "review_status": "confirmed" if confirmed else "unreviewed", "reviewed_at": now if confirmed else None,
            "undo": json.dumps(undo)}).fetchone()[0]

    @contextmanager
    def _pruning_settings(self, now: str) -> Iterator[None]:
        """Inside a write transaction: the pruning trigger reads the window and capacity from `settings`;
        let it see the effective values (environment overrides) and put the stored ones back before the
        commit, so a one-off override never persists and no other process ever sees it."""
        restore = {}
        for key in SYNCED_SETTINGS:
            row = self.con.execute("select value from settings where key = ?", (key,)).fetchone()
            effective = str(self.settings.values[key])
            if row is None or row[0] != effective:
                restore[key] = row[0] if row else None
                self.con.execute(q("upsert_setting"), {"key": key, "value": effective, "now": now})
        yield
        for key, value in restore.items():
            if value is None:
                self.con.execute("delete from settings where key = ?", (key,))
            else:
                self.con.execute(q("upsert_setting"), {"key": key, "value": value, "now": now})

    def record_capture(self, content: str, namespace: str, domain: str | None = None,
                       memory_id: str | None = None) -> None:
        """Remember that `content` was captured now (the recent tier), without storing a memory."""
        inputs = self._inputs(content, namespace, domain)
        if self.readonly:
            raise DatabaseError(f"{self.path}: opened read-only")
        with immediate(self.con), self._pruning_settings(iso(inputs.now)):
            self.con.execute(q("insert_recent_capture"), {
                "content_hash": inputs.content_hash, "memory_id": memory_id, "namespace": inputs.namespace,
                "domain": inputs.domain, "captured_at": inputs.now})

    # -- reading --------------------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        row = self.con.execute(q("get_memory"), {"id": memory_id}).fetchone()
        if row is None:
            raise NotFound(f"no memory with id {memory_id!r}")
        return Memory.from_row(row)

    def memories(self, namespace: str | None = None, domain: str | None = None, status: str | None = "active",
                 limit: int = 100) -> list[Memory]:
        params = {"namespace": canonical_namespace(namespace) if namespace else None, "domain": domain,
                  "status": status, "limit": limit}
        return [Memory.from_row(r) for r in self.con.execute(q("list_memories"), params)]

    def stats(self) -> dict:
        """Counts by namespace and status, check counters, skip counters, durations, recent window."""
        def rows(sql: str) -> list[dict]:
            cursor = self.con.execute(sql)
            names = None
            out = []
            for row in cursor:
                names = names or [d[0] for d in cursor.getdescription()]
                out.append(dict(zip(names, row)))
            return out
        return {
            "memories": rows("select * from v_namespace_counts order by domain, namespace, status"),
            "checks": rows("select * from v_check_counts order by namespace, result"),
            "skips": rows("select * from v_skip_counts order by namespace, reason"),
            "durations": rows("select * from v_check_durations order by tier"),
            "recent_window": rows("select * from v_recent_window")[0],
            "decisions": rows("select decision, review_status, count(*) as n from dedup_log "
                              "group by decision, review_status order by decision"),
        }
