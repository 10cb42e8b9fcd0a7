"""Claude Code hooks: `pre-compact` captures the session's lasting statements before compaction;
`session-start` (source "compact") hands the report to the model in the new context window.

Both never harm the session: whatever happens they exit 0 and print output the client accepts, and they
log details (content fingerprints only, never content) to the hook log.
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subcog_store.text.normalize import content_hash, fingerprint
from subcog_store.hook.report import markdown, system_message

log = logging.getLogger("subcog_store.hook.handlers")
TAGS = ["auto-captured", "pre-compact"]
SAVE_GRACE_SECS = 0.5
SOURCE = "pre-compact-hook"


def env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        log.warning("%s is not a number; using %s", name, default)
        return default


def log_path() -> Path:
    """`SUBCOG_HOOK_LOG`, else `$XDG_STATE_HOME/subcog-store/hook.log` (default ~/.local/state)."""
    if os.environ.get("SUBCOG_HOOK_LOG"):
        return Path(os.environ["SUBCOG_HOOK_LOG"])
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "subcog-store" / "hook.log"


def setup_log() -> str:
    """Send this package's log records to the hook log file; returns its path (or '' when not writable)."""
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return ""
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("subcog_store")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False  # the log file only: stderr stays quiet during the user's compaction
    return str(path)


@dataclass
class HookOptions:
    db: Path
    dry_run: bool = False
    budget_secs: float = 20.0
    include_sidechain: bool = False
    min_confidence: float = 0.5
    domain: str = "project"

    @classmethod
    def from_env(cls, db: Path, dry_run: bool = False) -> "HookOptions":
        return cls(db=db, dry_run=dry_run,
                   budget_secs=env_float("SUBCOG_HOOK_BUDGET_SECS", 20.0),
                   include_sidechain=os.environ.get("SUBCOG_HOOK_INCLUDE_SIDECHAIN", "").lower() in ("1", "true"),
                   min_confidence=env_float("SUBCOG_HOOK_MIN_CONFIDENCE", 0.5),
                   domain=os.environ.get("SUBCOG_HOOK_DOMAIN", "project") or "project")


@dataclass
class Run:
    """What one pre-compact run did; `report()` is what is stored and shown."""

    session_id: str | None = None
    transcript_path: str | None = None
    trigger: str | None = None
    dry_run: bool = False
    captured: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    redacted: int = 0
    records: int = 0
    bad_lines: int = 0
    truncated: bool = False
    log: str = ""
    started_at: float = field(default_factory=time.time)

    def fail(self, summary: str, error: BaseException | str) -> None:
        detail = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error
        self.errors.append({"summary": summary, "detail": detail[:500]})
        log.warning("pre-compact: %s: %s", summary, detail[:500])

    def report(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "dry_run": self.dry_run, "captured": self.captured,
                "skipped": self.skipped, "redacted": self.redacted, "errors": self.errors, "records": self.records,
                "bad_lines": self.bad_lines, "truncated": self.truncated, "log": self.log}

    @property
    def status(self) -> str:
        if self.dry_run:
            return "dry_run"
        return "failed" if self.errors and not self.captured else ("partial" if self.errors or self.truncated
                                                                     else "ok")


def parse_payload(raw: bytes) -> dict:
    """The hook input object; raises ValueError with a short reason."""
    if not raw.strip():
        raise ValueError("empty hook input")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError("hook input is not JSON") from None
    if not isinstance(payload, dict):
        raise ValueError("hook input is not a JSON object")
    return payload


def pre_compact(raw: bytes, options: HookOptions) -> Run:
    """Capture the unread part of the transcript. Never raises: problems land in `run.errors`."""
    started = time.monotonic()
    deadline = started + options.budget_secs
    run = Run(dry_run=options.dry_run, log=str(log_path()))
    try:
        payload = parse_payload(raw)
    except ValueError as e:
        run.fail(str(e), e)
        return run
    run.session_id = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    run.trigger = payload.get("trigger") if isinstance(payload.get("trigger"), str) else None
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        run.fail("no transcript_path in the hook input", "missing transcript_path")
        return run
    run.transcript_path = path
    try:
        _capture_transcript(run, options, deadline)
    except Exception as e:  # fail open: the compaction goes on
        run.fail("capture failed", e)
    log.info("pre-compact session=%s captured=%d skipped=%d redacted=%d errors=%d in %.0f ms",
             run.session_id, len(run.captured), len(run.skipped), run.redacted, len(run.errors),
             (time.monotonic() - started) * 1000)
    return run


def _capture_transcript(run: Run, options: HookOptions, deadline: float) -> None:
    import apsw

    from subcog_store.hook.extract import extract_candidates
    from subcog_store.errors import SubcogError
    from subcog_store.store import Store
    from subcog_store.hook.transcript import TranscriptError, read_assistant_texts

    try:
        dry_without_db = options.dry_run and not Path(options.db).exists()
        store = Store(":memory:" if dry_without_db else options.db, readonly=options.dry_run and not dry_without_db)
    except SubcogError as e:
        run.fail("memory store unavailable", e)
        return
    with store:
        session_key = run.session_id or ""
        offset = _stored_offset(store, session_key, run.transcript_path)
        try:
            read = read_assistant_texts(run.transcript_path, offset, include_sidechain=options.include_sidechain,
                                        deadline=deadline)
        except TranscriptError as e:
            run.fail("transcript unreadable", e)
            return
        run.records, run.bad_lines, run.truncated = read.records, read.bad_lines, read.truncated
        candidates = extract_candidates(read.texts, min_confidence=options.min_confidence)
        run.redacted = sum(c.text.count("[REDACTED]") for c in candidates)
        fresh = _dedupe_batch(run, store, candidates, options.domain)
        finished = _capture_all(run, store, fresh, options, deadline)
        if options.dry_run:
            return
        keep_to_budget(store, deadline, grace=SAVE_GRACE_SECS)
        try:
            _save(store, run, session_key, read.next_offset if finished else None)
        except apsw.Error as e:
            run.fail("could not save the run (the captures are saved)", e)


def keep_to_budget(store, deadline: float, grace: float = 0.0) -> None:
    """Waiting for another process's lock must not outlast the hook's time budget (plus a short grace for
    saving where the run stopped, so its progress is not lost)."""
    remaining = max(deadline - time.monotonic(), 0.0)
    store.con.setbusytimeout(max(1, int(max(remaining, grace) * 1000)))


def _stored_offset(store, session_key: str, path: str) -> int:
    from subcog_store.db.sqlfiles import q

    row = store.con.execute(q("get_hook_offset"), {"session_id": session_key, "transcript_path": path}).fetchone()
    return int(row[0]) if row else 0


def _save(store, run: Run, session_key: str, offset: int | None) -> None:
    """Where this run stopped reading (when it finished) and its report, in one transaction."""
    from subcog_store.clock import iso
    from subcog_store.db.connection import immediate
    from subcog_store.db.sqlfiles import q

    now = iso(store.clock())
    with immediate(store.con):
        if offset is not None:
            store.con.execute(q("set_hook_offset"), {"session_id": session_key, "transcript_path": run.transcript_path,
                                                     "byte_offset": offset, "now": now})
        store.con.execute(q("insert_hook_run"), {
            "session_id": run.session_id, "transcript_path": run.transcript_path, "trigger": run.trigger,
            "started_at": iso(run.started_at), "finished_at": now, "status": run.status, "captured": len(run.captured),
            "skipped": len(run.skipped), "redacted": run.redacted, "report": json.dumps(run.report())})


def _dedupe_batch(run: Run, store, candidates: list, domain: str) -> list:
    """Drop candidates that repeat an earlier one of this batch: same hash, or the same meaning.

    The model is loaded only when some candidate is long enough for the semantic tier and is not already
    an exact match in the store, so a batch of repeats never pays for it.
    """
    from subcog_store.dedup.check import exact_tier

    kept, seen = [], {}
    for c in candidates:
        key = (c.namespace, content_hash(c.text))
        if key in seen:
            run.skipped.append({"content": c.text, "namespace": c.namespace, "reason": "in_batch",
                                "same_as": seen[key], "matched_urn": None})
            continue
        seen[key] = c.text[:60]
        kept.append(c)
    min_len = int(store.settings.dedup_min_semantic_length)
    needs_model = [c for c in kept if len(c.text) >= min_len
                   and not exact_tier(store.con, content_hash(c.text), c.namespace, domain)]
    if len(needs_model) < 1 or not store.settings.dedup_semantic_enabled:
        return kept
    from subcog_store.text.guard import is_duplicate

    store.embed_many([c.text for c in needs_model])
    vectors = {id(c): store.embed(c.text) for c in needs_model}
    if any(v is None for v in vectors.values()):
        return kept
    out: list = []
    for c in kept:
        twin = None
        if id(c) in vectors:
            for earlier in out:
                if id(earlier) in vectors and earlier.namespace == c.namespace:
                    similarity = float(vectors[id(c)] @ vectors[id(earlier)])
                    if is_duplicate(earlier.text, c.text, similarity, store.settings.threshold(c.namespace)):
                        twin = (earlier, similarity)
                        break
        if twin:
            run.skipped.append({"content": c.text, "namespace": c.namespace, "reason": "in_batch",
                                "same_as": twin[0].text[:60], "similarity": round(twin[1], 4),
                                "matched_urn": None})
        else:
            out.append(c)
    return out


def _capture_all(run: Run, store, candidates: list, options: HookOptions, deadline: float) -> bool:
    """Capture (or, dry run, check) each candidate; False when the time budget ran out first."""
    from subcog_store.errors import SubcogError

    for c in candidates:
        if time.monotonic() > deadline:
            run.fail("time budget used up; the rest is captured next time", "budget")
            return False
        keep_to_budget(store, deadline)
        try:
            if options.dry_run:
                check = store.check_duplicate(c.text, c.namespace, options.domain, log_check=False)
                stored, decision, urn, reasoning = not check.is_duplicate, "stored", None, None
            else:
                result = store.capture(c.text, c.namespace, options.domain, importance=round(c.confidence, 2),
                                       tags=TAGS, source=SOURCE, session_id=run.session_id)
                check, stored, decision, urn = result.check, result.stored, result.decision, result.urn
                reasoning = result.reasoning
        except SubcogError as e:
            run.fail("a capture failed", f"{type(e).__name__} for {fingerprint(c.text)}: {e}")
            if "locked" in str(e):
                run.fail("memory store locked; the rest is captured next time", e)
                return False
            continue
        if stored:
            changed = next((n for n in check.neighbours if n.changed_fact), None)
            entry = {"content": c.text, "namespace": c.namespace, "urn": urn, "confidence": round(c.confidence, 2),
                     "decision": decision}
            if decision == "changed_fact" and changed:
                entry.update(matched_urn=f"subcog://{options.domain}/{c.namespace}/{changed.memory_id}",
                             reasoning=reasoning or changed.changed_fact)
            run.captured.append(entry)
        else:
            run.skipped.append({"content": c.text, "namespace": c.namespace, "reason": check.reason,
                                "matched_urn": check.matched_urn, "similarity": check.similarity_score,
                                "seconds_ago": check.captured_seconds_ago, "decision": decision})
    return True


def pre_compact_output(run: Run, fmt: str = "default") -> str:
    """stdout for the client: a systemMessage (default), or the original design's report (--format subcog)."""
    report = run.report()
    if fmt == "subcog":
        return json.dumps({"hookSpecificOutput": {"hookEventName": "PreCompact",
                                                  "additionalContext": markdown(report)}}, ensure_ascii=False)
    return json.dumps({"systemMessage": system_message(report)}, ensure_ascii=False)


def session_start(raw: bytes, db: Path) -> str:
    """On source "compact": the last pre-compact report of this session, once; otherwise nothing."""
    try:
        payload = parse_payload(raw)
    except ValueError as e:
        log.warning("session-start: %s", e)
        return ""
    if payload.get("source") != "compact" or not isinstance(payload.get("session_id"), str):
        return ""
    try:
        from subcog_store.clock import iso
        from subcog_store.db.connection import immediate
        from subcog_store.db.sqlfiles import q
        from subcog_store.store import Store

        if not Path(db).exists():
            return ""
        with Store(db) as store:
            row = store.con.execute(q("undelivered_hook_run"), {"session_id": payload["session_id"]}).fetchone()
            if row is None:
                return ""
            with immediate(store.con):
                store.con.execute(q("mark_hook_run_delivered"), {"session_id": payload["session_id"],
                                                                 "now": iso(store.clock())})
        text = "subcog memory report from before this compaction:\n" + markdown(json.loads(row[1]))
    except Exception as e:  # fail open
        log.warning("session-start failed: %s: %s", type(e).__name__, e)
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}},
                      ensure_ascii=False)
