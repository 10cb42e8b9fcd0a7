"""`doctor`: verify the store's invariants; each finding names what is wrong."""
# Lazy imports: the worker's state and the lexicon are read only by the `doctor` command.
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from subcog_store.clock import iso
from subcog_store.config import is_postgres
from subcog_store.db import files, hook_state, integrity as db_integrity, memories, vectors
from subcog_store.db.connection import connect, latest_version, schema_version
from subcog_store.text.normalize import content_hash
from subcog_store.errors import NotFound

if TYPE_CHECKING:
    import apsw


@dataclass
class Finding:
    check: str
    ok: bool
    detail: str = ""
    examples: list[str] = field(default_factory=list)


@contextmanager
def open_for_doctor(path: Path) -> Iterator["apsw.Connection"]:
    """The database as it is: never migrated (so the schema check can fail), never created."""
    if not is_postgres(path) and not Path(path).exists():
        raise NotFound(f"{path} does not exist (run `subcog-store init`)")
    con = connect(path, migrate=False)
    try:
        yield con
    finally:
        con.close()


def worker_finding() -> Finding:
    """The warm worker: running, absent or stale are all fine (it is never required); a worker directory that is
    not private to this user fails (the worker is never used then, and someone else could answer hooks)."""
    from subcog_store.worker.lifecycle import state

    try:
        info = state()
    except Exception as e:  # noqa: BLE001
        return Finding("worker", True, f"state unknown: {type(e).__name__}: {e}")
    detail = f"{info['state']} ({info['socket']})"
    if info.get("pid"):
        detail += f", pid {info['pid']}"
    if "requests" in info:
        detail += f", {info['requests']} requests, idle {info['idle_secs']:.0f} s, {info['rss_mb']} MB"
    if not info.get("enabled", True):
        detail += ", disabled by SUBCOG_WORKER_ENABLED"
    if info.get("problem"):
        detail += f": {info['problem']}"
    return Finding("worker", info["state"] != "unsafe", detail)


def lexicon_finding() -> Finding:
    """The changed-fact guard's WordNet (models/manifest.json): verified, or absent (the guard judges without it,
    fine); files that fail their size or sha256 fail (`python -m subcog_store.model.files fetch` replaces them)."""
    from subcog_store.model import lexicon

    state, detail = lexicon.status()
    return Finding("guard_lexicon", state != "damaged", detail)


CHECKS = 11   # the findings diagnose() makes before the worker's (the progress bar's total)


def diagnose(con: "apsw.Connection", *, worker: bool = False,
             progress: Callable[[int, int, str], None] | None = None) -> list[Finding]:
    """Run every invariant check; a failed one has ok=False and up to five example ids. `worker`: also report
    the warm worker and the guard's lexicon (the `doctor` command). `progress(done, total, check)` is called as
    each check ends."""
    findings: list[Finding] = []

    def add(check: str, bad: list[str], what: str) -> None:
        findings.append(Finding(check, not bad, f"{len(bad)} {what}" if bad else "ok", bad[:5]))
        if progress:
            progress(len(findings), CHECKS, check)

    version = schema_version(con)
    findings.append(Finding("schema_version", version == latest_version(con),
                            f"version {version}, latest {latest_version(con)}"))
    integrity = _integrity(con)
    findings.append(Finding("sqlite_integrity", integrity == ["ok"], "; ".join(integrity[:3]) + (
        "" if integrity == ["ok"] else ": the file is damaged, nothing more is written to it; `subcog-store "
        "salvage > memories.jsonl` saves every memory that can still be read, `subcog-store --db NEW.db capture "
        "--jsonl < memories.jsonl` puts them in a new store")))
    if progress:
        progress(len(findings), CHECKS, "sqlite_integrity")
    add("active_memory_has_vector", vectors.missing(con),
        "active memories without a vector (run `subcog-store reembed`)")
    add("vector_has_active_memory", db_integrity.vectors_without_active_memory(con),
        "vectors without an active memory")
    add("vector_scope_matches", db_integrity.vectors_in_wrong_scope(con), "vectors filed under the wrong namespace/domain")
    add("vector_bits_match", [str(seq) for seq in vectors.stale_bits(con)],
        "vectors whose sign bits are missing, stale or left over (run `subcog-store reembed`)")
    stale = [mid for mid, content, stored in memories.hashes(con) if content_hash(content) != stored]
    add("stored_hash_matches_content", stale, "memories whose stored hash does not match their content")
    add("one_active_per_hash", [f"{r[0]}/{r[1]}/{r[2][:16]}" for r in db_integrity.duplicate_active(con)],
        "scopes with the same content active twice")
    add("successor_exists", db_integrity.dangling_successors(con), "retired memories pointing at a missing successor")
    pending = hook_state.pending_before(con, iso(time.time() - hook_state.STALE_SECS))
    add("no_capture_left_pending", [f"{p.get('session_id', '')} {p['transcript_path']}" for p in pending.records],
        "transcript captures left pending by a warm worker that died (the next capture hook redoes them)")
    add("no_unreadable_pending_capture",
        [row.describe() for row in pending.unreadable] + hook_state.set_aside_records(con),
        "pending capture records that cannot be read (kept in hook_pending_set_aside by fingerprint; their "
        "sessions' next capture reads on from the saved offset; `delete from hook_pending_set_aside` once seen)")
    return findings + ([worker_finding(), lexicon_finding()] if worker else [])


def _integrity(con: "apsw.Connection") -> list[str]:
    """SQLite's quick check; a damaged file is recorded as such (no more writes), a sound one cleared."""
    integrity = db_integrity.sqlite_check(con)
    if integrity == ["ok"]:
        files.clear_damage(con.filename)
    else:
        files.record_damage(con.filename, "; ".join(integrity[:2])[:300])
    return integrity
