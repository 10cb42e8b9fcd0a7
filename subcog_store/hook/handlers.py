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


def log_path() -> Path:
    """`SUBCOG_HOOK_LOG`, else `$XDG_STATE_HOME/subcog-store/hook.log` (default ~/.local/state)."""
    from subcog_store.config import hook_log_path

    try:
        return hook_log_path()
    except Exception:  # noqa: BLE001 - a bad value is reported by the setting's own check
        return Path(os.devnull)


def setup_log() -> str:
    """Send this package's log records to the hook log file; returns its path (or '' when not writable).

    Nothing ever reaches stderr: a log that cannot be written is dropped silently."""
    root = logging.getLogger("subcog_store")
    root.propagate = False  # the log file only: stderr stays quiet during the user's session
    root.setLevel(logging.INFO)
    logging.raiseExceptions = False  # a failing log write (full disk, /dev/full) must not print a traceback
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except (OSError, ValueError):
        root.addHandler(logging.NullHandler())
        return ""
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)
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
        """The hook's settings (raises ConfigError naming a variable that does not parse)."""
        from subcog_store.config import process_setting

        return cls(db=db, dry_run=dry_run, budget_secs=float(process_setting("hook_budget_secs")),
                   include_sidechain=bool(process_setting("hook_include_sidechain")),
                   min_confidence=float(process_setting("hook_min_confidence")),
                   domain=str(process_setting("hook_domain") or "project"))


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


def default_db() -> Path:
    """The database the hooks use (SUBCOG_DB, else the XDG data directory, created when missing)."""
    from subcog_store.config import db_path, process_setting

    path = db_path()
    if not process_setting("db"):
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


def dispatch(event: str | None, raw: bytes, db: Path, *, dry_run: bool = False, fmt: str = "default") -> str:
    """Run one hook; returns what to print (may be empty). Raises only on our own bugs (the entry catches)."""
    from subcog_store.errors import ConfigError

    if event == "pre-compact":
        try:
            options = HookOptions.from_env(db, dry_run=dry_run)
        except ConfigError as e:
            log.warning("pre-compact: bad setting: %s", e)
            return json.dumps({"systemMessage": f"subcog: capture skipped: {e}"}, ensure_ascii=False)
        return pre_compact_output(pre_compact(raw, options), fmt)
    if event == "session-start":
        return session_start(raw, db)
    log.warning("unknown hook event %r", event)
    return ""


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

    from subcog_store.errors import SubcogError
    from subcog_store.hook.extract import extract_candidates
    from subcog_store.hook.transcript import TranscriptError, read_assistant_texts
    from subcog_store.store import Store

    try:
        dry_without_db = options.dry_run and not Path(options.db).exists()
        store = Store(":memory:" if dry_without_db else options.db, readonly=options.dry_run and not dry_without_db,
                      fetch_model=False)
    except SubcogError as e:
        run.fail("memory store unavailable", e)
        return
    with store:
        keep_to_budget(store, deadline)
        session_key = run.session_id or ""
        offset = _stored_offset(store, session_key, run.transcript_path)
        try:
            read = read_assistant_texts(run.transcript_path, offset, include_sidechain=options.include_sidechain,
                                        deadline=deadline)
        except TranscriptError as e:
            run.fail("transcript unreadable", e)
            return
        run.records, run.bad_lines, run.truncated = read.records, read.bad_lines, read.truncated
        candidates, next_offset = [], read.next_offset
        for text in read.texts:  # classification is bounded by the deadline too
            if time.monotonic() > deadline:
                next_offset, run.truncated = text.offset, True
                run.fail("time budget used up; the rest is captured next time", "budget")
                break
            candidates += extract_candidates([text], min_confidence=options.min_confidence)
        run.redacted = sum(c.redacted for c in candidates)
        stopped_at = _capture_all(run, store, candidates, options, deadline) if not run.errors else None
        if stopped_at is not None:
            next_offset, run.truncated = min(next_offset, stopped_at), True
        if options.dry_run:
            return
        keep_to_budget(store, deadline, grace=SAVE_GRACE_SECS)
        try:
            _save(store, run, session_key, next_offset if next_offset > offset else None)
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


def _capture_all(run: Run, store, candidates: list, options: HookOptions, deadline: float) -> int | None:
    """Capture (or, dry run, check) the candidates, repeats within the batch skipped; returns the transcript
    offset to resume from when the time budget or the lock stopped the run first (None: all handled)."""
    from subcog_store.errors import DatabaseError
    from subcog_store.store import CaptureRequest

    requests = [CaptureRequest(c.text, c.namespace, options.domain, round(c.confidence, 2), TAGS, SOURCE,
                               run.session_id) for c in candidates]
    outcomes = store.capture_many(requests, deadline=deadline, dry_run=options.dry_run)
    for c, o in zip(candidates, outcomes):
        if not o.handled:
            run.fail("time budget used up; the rest is captured next time", "budget")
            return c.offset
        if o.error is not None:
            if isinstance(o.error, DatabaseError) and "locked" in str(o.error):
                run.fail("memory store locked; the rest is captured next time", o.error)
                return c.offset
            run.fail("a capture failed", f"{type(o.error).__name__} for {fingerprint(c.text)}: {o.error}")
            if isinstance(o.error, DatabaseError):
                return c.offset
            continue
        if o.repeat_of is not None:
            run.skipped.append({"content": c.text, "namespace": c.namespace, "reason": "in_batch",
                                "same_as": candidates[o.repeat_of].text[:60], "matched_urn": None,
                                "similarity": None if o.similarity is None else round(o.similarity, 4)})
            continue
        _report_one(run, c, o, options)
    return None


def _report_one(run: Run, c, o, options: HookOptions) -> None:
    if o.check is not None:   # dry run
        check, stored, decision, urn, reasoning = o.check, not o.check.is_duplicate, "stored", None, None
    else:
        r = o.result
        check, stored, decision, urn, reasoning = r.check, r.stored, r.decision, r.urn, r.reasoning
    if stored:
        entry = {"content": c.text, "namespace": c.namespace, "urn": urn, "confidence": round(c.confidence, 2),
                 "decision": decision}
        changed = next((n for n in check.neighbours if n.changed_fact), None)
        if decision == "changed_fact" and changed:
            from subcog_store.db.memories import urn as make_urn

            entry.update(matched_urn=make_urn(options.domain, c.namespace, changed.memory_id),
                         reasoning=reasoning or changed.changed_fact)
        run.captured.append(entry)
    else:
        run.skipped.append({"content": c.text, "namespace": c.namespace, "reason": check.reason,
                            "matched_urn": check.matched_urn, "similarity": check.similarity_score,
                            "seconds_ago": check.captured_seconds_ago, "decision": decision})


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
