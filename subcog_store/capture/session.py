"""Capture: `pre-compact` (before the client compacts) and `session-end` (most sessions never compact) read the
transcript from the same cursor, so nothing is captured twice; `post-compact` captures the lasting facts of the
compaction summary the client hands it (Claude Code writes the summary into the transcript only after the
SessionStart hooks ran, so the next transcript read sees it again: its facts are then exact duplicates).

Bounded by the hook's budget end to end: what is finished is committed with the offset of the last fully handled
record, the rest is read next time.

Through the warm worker a transcript capture may finish after the hook has answered (`HookOptions.on_recorded`,
SUBCOG_HOOK_ANSWER_SECS): it is recorded in `hook_pending` first and cleared with its saved offset, and one left
behind (the worker died) is redone from that offset by a later capture hook on the store.

The Claude Code adapter (`claude_code/handlers.py`) parses the hook input and hands over a `Source`; this module
knows no hook protocol.
"""
# Lazy imports: the store (apsw, the model) and the extraction pipeline load when a capture runs: a bad input or
# setting is answered without them.
from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from subcog_store.capture import pending as hook_pending
from subcog_store.capture.known_empty import KnownEmpty
from subcog_store.capture.resume import parts_of, read_before, resume_at, skip_done
from subcog_store.capture.run import HookOptions, Run, Source, new_run
from subcog_store.capture.session_text import keep_text_of_run
from subcog_store.clock import iso
from subcog_store.db import hook_state, locks
from subcog_store.db.hook_state import Resume
from subcog_store.db.connection import Error as DbError, immediate
from subcog_store.scope import USER_DOMAIN
from subcog_store.text.normalize import fingerprint

log = logging.getLogger("subcog_store.hook.capture")
SAVE_GRACE_SECS = 0.5
EXTRACT_CHUNK = 200   # records (or pieces) extracted at once (each judged on its own: extraction/extract.py)
EXTRACT_CHARS = 40_000  # ... and about this many characters (a deadline check between groups)
EXTRACT_SHARE = 0.5   # pending captures of others are redone only before this share of the budget
PIECE_CHARS = 20_000  # a longer record is read in paragraph-aligned pieces of about this size
MIN_READ_BYTES = 2 << 20  # of the transcript a hook run reads past its budget (before its limit): its minimum's
MIN_CAPTURES = 32     # candidates a run handles past its budget, until its limit (run.TIMEOUT_MARGIN_SECS; README)
SOURCES = {"pre-compact": "pre-compact-hook", "session-end": "session-end-hook", "post-compact": "compact-summary",
           "import-history": "import-history"}
MAX_SUMMARY_CHARS = 200_000
EMPTY_KEPT_SECS = 30 * 86400   # how long a store remembers a text extraction found nothing in (a cache: a text
#                               forgotten is extracted again; sessions are mostly resumed within days)


def capture_transcript(source: Source, options: HookOptions, run: Run | None = None,
                       started: float | None = None) -> Run:
    """Capture the unread part of the source's transcript. Never raises: problems land in `run.errors`."""
    started = options.clock() if started is None else started
    return capture_source(source, options, run or new_run(options), started, started + options.budget_secs)


def capture_source(source: Source, options: HookOptions, run: Run, started: float, deadline: float,
                   redo: bool = False) -> Run:
    """Capture the unread part of the transcript `source` names (see `capture_transcript`); then, unless this
    is itself one (`redo`), pending captures a dead worker left behind, while the extraction share lasts."""
    run.session_id = source.session_id
    run.trigger = source.trigger or options.event
    options.domain, options.cwd = options.domain_override or source.domain(options.environ), source.cwd
    path = source.transcript_path
    if not path:
        run.fail("no transcript_path in the hook input", "missing transcript_path")
        return run
    run.transcript_path = path
    stale: list[dict] = []
    try:
        stale = _capture_transcript(run, options, deadline, options.minimum_limit(started),
                                    {**source.pending(), "event": options.event}, redo)
    except Exception as e:  # fail open: the compaction goes on
        run.fail("capture failed", e)
    log.info("%s session=%s captured=%d skipped=%d redacted=%d errors=%d in %.0f ms", options.event,
             run.session_id, len(run.captured), len(run.skipped), run.redacted, len(run.errors),
             (options.clock() - started) * 1000)
    for left in stale:
        if options.clock() > started + (deadline - started) * EXTRACT_SHARE:
            break
        _redo(left, options, started, deadline)
    return run


def _redo(pending: dict, options: HookOptions, started: float, deadline: float) -> None:
    """Finish a capture its budget stopped early or a dead worker left pending (from its saved offset; never
    raises)."""
    event = pending.get("event") if pending.get("event") in ("pre-compact", "session-end") else "pre-compact"
    what = "finishing a deferred" if pending.get("deferred") else "redoing a pending"
    log.info("%s %s capture of session=%s", what, event, pending.get("session_id"))
    redo = Run(dry_run=False, log=options.log_path, trigger=pending.get("trigger") or event)
    try:
        capture_source(Source.from_pending(pending), replace(options, event=event, on_recorded=None,
                                                             domain_override=None), redo, started, deadline, redo=True)
    except Exception as e:  # noqa: BLE001 - the next hook tries again
        log.warning("pending capture not redone: %s: %s", type(e).__name__, e)


def _open_store(run: Run, options: HookOptions):
    """The hook's store (never fetching the model; a dry run without a store uses a throw-away one), or None."""
    from subcog_store.errors import ConfigError, SubcogError
    from subcog_store.store import Store

    try:
        dry_without_db = options.dry_run and not Path(options.db).exists()
        return Store(":memory:" if dry_without_db else options.db, readonly=options.dry_run and not dry_without_db,
                     environ=options.environ, embedders=options.embedders,
                     fetch_model=False, deadline=options.store_deadline)
    except ConfigError as e:
        run.fail(f"bad setting: {e}", e)
        return None
    except SubcogError as e:
        run.fail("memory store unavailable", e)
        return None


def capture_summary(source: Source, summary: str | None, options: HookOptions, run: Run | None = None,
                    started: float | None = None) -> Run:
    """Capture the lasting facts of a compaction summary (post-compact). Never raises."""
    from subcog_store.extraction.extract import extract_candidates
    from subcog_store.extraction.transcript import AssistantText

    started = options.clock() if started is None else started
    deadline = started + options.budget_secs
    run = run or new_run(options, trigger="post-compact")
    run.session_id, run.transcript_path = source.session_id, source.transcript_path
    options.domain, options.cwd = source.domain(options.environ), source.cwd
    if not summary or not summary.strip():
        return run
    store = _open_store(run, options)
    if store is None:
        return run
    with store:
        keep_to_budget(store, deadline, clock=options.clock)
        text = AssistantText(summary[:MAX_SUMMARY_CHARS], None, None, run.session_id, 0, False, kind="summary")
        candidates = _log_status(store, extract_candidates([text], min_confidence=options.min_confidence,
                                                      with_status=True), options, run)
        run.redacted = sum(c.redacted for c in candidates)
        _capture_all(run, store, candidates, options, deadline, MIN_CAPTURES, options.minimum_limit(started), 1)
        _cite(store, run, options, deadline)
        if not options.dry_run:
            keep_to_budget(store, deadline, grace=SAVE_GRACE_SECS, clock=options.clock)
            try:
                _save(store, run, run.session_id or "", None)
            except DbError as e:
                run.fail("could not save the run (the captures are saved)", e)
    log.info("post-compact session=%s captured=%d skipped=%d in %.0f ms", run.session_id, len(run.captured),
             len(run.skipped), (options.clock() - started) * 1000)
    return run


def _capture_transcript(run: Run, options: HookOptions, deadline: float, limit: float | None, pending: dict,
                        redo: bool = False) -> list[dict]:
    """Capture from the saved offset; returns the pending captures of dead workers to redo (none when `redo`)."""
    from subcog_store.extraction.transcript import TranscriptError, read_assistant_texts

    store = _open_store(run, options)
    if store is None:
        return []
    with store:
        keep_to_budget(store, deadline, clock=options.clock)
        session_key = run.session_id or ""
        if (options.on_recorded or redo) and not options.dry_run:
            try:
                hook_pending.mark(store, session_key, run.transcript_path, pending)
            except DbError as e:   # not recorded: the worker answers when the capture is done
                log.warning("capture not recorded as pending: %s: %s", type(e).__name__, e)
            else:
                if options.on_recorded:
                    options.on_recorded()
        at = hook_state.offset(store.con, session_key, run.transcript_path)
        offset, chars = at.offset, at.chars
        run.first_run = at == Resume()
        try:
            least = MIN_READ_BYTES if limit is not None and options.clock() <= limit else 0   # a hook's
            read = read_assistant_texts(run.transcript_path, offset, include_sidechain=options.include_sidechain,
                                        include_user=True, deadline=deadline, at_least_bytes=least)
        except TranscriptError as e:
            run.fail("transcript unreadable", e)
            if redo:   # gone for good: nothing more can be captured from it
                hook_pending.clear(store, session_key, run.transcript_path)
            return []
        run.records, run.bad_lines, run.truncated = read.records, read.bad_lines, read.truncated
        if read.truncated:   # the reader's stop is said as the other stops are
            run.stop_at("budget" if read.stopped_by == "deadline" else "size")
        parts = [piece for text in read.texts
                 for piece in pieces(text, chars if text.offset == offset else 0)]
        known = KnownEmpty(store.con, options.min_confidence)
        resume = _extract_and_capture(run, store, parts, at, options, deadline, limit, known) or \
            Resume(read.next_offset)
        _cite(store, run, options, deadline)
        if options.dry_run:
            return []
        keep_to_budget(store, deadline, clock=options.clock)
        left = [] if redo else hook_pending.to_redo(store, options.budget_secs, run.transcript_path)
        # the sessions' text is stored here, embedded later off the hook's path (capture/session_text.py)
        keep_text_of_run(store.core, options.domain, run.session_id, read_before(parts, resume))
        keep_to_budget(store, deadline, grace=SAVE_GRACE_SECS, clock=options.clock)
        try:
            _save(store, run, session_key, resume if resume.after(at) else None, pending if run.truncated else None,
                  known.found)
        except DbError as e:
            run.fail("could not save the run (the captures are saved)", e)
        return left


def _extract_and_capture(run: Run, store, parts: list, at: Resume, options: HookOptions, deadline: float,
                         limit: float | None, known: KnownEmpty) -> Resume | None:
    """Extract the parts group by group (texts `known` to hold no candidate left out), each captured before the
    next is extracted: a busy run extracts about what it can capture. A new group starts while its extraction (as
    long as the last one took) still fits before `deadline`, or, before `limit`, while the run is short of its
    minimum (MIN_CAPTURES handled); the first group, and its first candidate, whatever the time. Returns where
    the next run goes on (None: all read was handled)."""
    handled, extract_secs = 0, 0.0
    for n, group in enumerate(_groups(parts)):
        now = options.clock()
        short = handled < MIN_CAPTURES and (limit is None or now <= limit)
        if n and not short and now + extract_secs > deadline:
            run.stop_at("budget")   # the next group's extraction would not fit: said as any budget stop
            return Resume(group[0].offset, group[0].char_start)
        candidates = _log_status(store, known.extract(group), options, run)
        extract_secs = options.clock() - now
        keys = parts_of(candidates, group)
        candidates, keys, skipped = skip_done(candidates, keys, at) if n == 0 else (candidates, keys, 0)
        run.redacted += sum(c.redacted for c in candidates)
        stopped = _capture_all(run, store, candidates, options, deadline, max(MIN_CAPTURES - handled, 0), limit,
                               at_least=int(n == 0))
        if stopped is not None:
            run.truncated = True
            return resume_at(candidates, keys, stopped, at, skipped)
        handled += len(candidates)
    return None


def _log_status(store, candidates: list, options: HookOptions, run: Run) -> list:
    """The candidates to capture; the status lines among them (judged facts, vetoed as status: `extract.py`) go
    to the decision log instead (`dedup.write.log_status`; not in a dry run), so none is dropped silently."""
    from subcog_store.dedup.write import log_status
    from subcog_store.inputs import prepare

    for c in candidates if not options.dry_run else ():
        if c.status:
            try:
                log_status(store.core, prepare(_request(c, options, run)), c.status)
            except Exception as e:   # fail open: a capture goes on without the row
                run.fail("a status line could not be logged", e)
    return [c for c in candidates if not c.status]


def _request(c, options: HookOptions, run: Run):
    from subcog_store.inputs import CaptureRequest

    return CaptureRequest(c.text, c.namespace, USER_DOMAIN if c.scope == "user" else options.domain,
                          round(c.confidence, 2), options.tags, SOURCES[options.event], run.session_id,
                          project_wide=True, from_summary=c.from_summary)


def _cite(store, run: Run, options: HookOptions, deadline: float) -> None:
    """What the memories this run stored cite in the project's code (code/record.py)."""
    if run.stored and not options.dry_run:
        from subcog_store.code.record import cite_new   # here: the code index loads only when a memory was stored
        cite_new(store.core, run.stored, options.cwd, options.domain, deadline - options.clock())


def _groups(parts: list) -> list[list]:
    """Consecutive records or pieces extracted together: at most EXTRACT_CHUNK of them, about EXTRACT_CHARS."""
    out: list[list] = []
    size = 0
    for part in parts:
        if not out or len(out[-1]) >= EXTRACT_CHUNK or size + len(part.text) > EXTRACT_CHARS:
            out.append([])
            size = 0
        out[-1].append(part)
        size += len(part.text)
    return out


def pieces(text, skip_chars: int = 0) -> list:
    """A record's text from `skip_chars` on, in paragraph-aligned pieces of at most PIECE_CHARS: a record of
    any size is extracted and captured piece by piece over successive runs."""
    body, out, start = text.text, [], max(0, skip_chars)
    if start == 0 and len(body) <= PIECE_CHARS:
        return [text]
    while start < len(body):
        end = min(len(body), start + PIECE_CHARS)
        if end < len(body):
            end = _cut(body, start, end)
        out.append(replace(text, text=body[start:end], char_start=start))
        start = end
    return out


def _cut(body: str, start: int, end: int) -> int:
    """Where a piece of body[start:end] ends: after its last paragraph break, else its last line break, else its
    last sentence end, else its last space; a piece never splits a line (a list item) when one fits whole."""
    for mark in ("\n\n", "\n", ". ", " "):
        cut = body.rfind(mark, start, end)
        if cut > start:
            return cut + len(mark)
    return end


def keep_to_budget(store, deadline: float, grace: float = 0.0, clock=time.monotonic) -> None:
    """Waiting for another process's lock must not outlast the hook's time budget (plus a short grace for
    saving where the run stopped, so its progress is not lost)."""
    locks.within(store.con, deadline, grace, clock)


def _save(store, run: Run, session_key: str, offset: Resume | None, deferred: dict | None = None,
          empty: set[int] | None = None) -> None:
    """Where this run stopped reading (unless a run of the same transcript at the same time got further) and its
    report, in one transaction; `deferred`: the run stopped early, and the next capture hook on the store goes on
    with it (its pending record); `empty`: the texts it found no candidate in (`KnownEmpty`)."""
    clock = store.clock()
    now = iso(clock)
    with immediate(store.con):
        if empty:
            hook_state.remember_empty(store.con, sorted(empty), clock, EMPTY_KEPT_SECS)
        hook_pending.clear(store, session_key, run.transcript_path, in_transaction=True)
        if deferred is not None:
            hook_state.defer(store.con, session_key, run.transcript_path, deferred, now)
            log.info("capture of session=%s deferred for its budget: the next capture hook goes on with it",
                     run.session_id)
        if offset is not None:   # never back: a capture of the transcript run at the same time may have got further
            if offset.after(hook_state.offset(store.con, session_key, run.transcript_path)):
                hook_state.set_offset(store.con, session_key, run.transcript_path, offset, now)
            else:
                log.info("capture of session=%s: another run of its transcript got further; its resume point kept",
                         run.session_id)
        hook_state.add_run(store.con, session_id=run.session_id, transcript_path=run.transcript_path,
                           trigger=run.trigger, started_at=iso(run.started_at), finished_at=now, status=run.status,
                           captured=len(run.captured), skipped=len(run.skipped), redacted=run.redacted,
                           report=run.report())


def _capture_all(run: Run, store, candidates: list, options: HookOptions, deadline: float, minimum: int = 0,
                 limit: float | None = None, at_least: int = 0) -> int | None:
    """Capture (or, dry run, check) the candidates, repeats within the batch skipped; returns the index of the
    first one not handled when the time budget or the lock stopped the run first (None: all handled). `minimum`,
    `limit`, `at_least`: see `capture_many`."""
    from subcog_store.dedup.in_batch import EMBED_CHUNK, capture_many
    from subcog_store.errors import DatabaseDamaged, DatabaseError

    requests = [_request(c, options, run) for c in candidates]
    outcomes = capture_many(store.core, requests, deadline=deadline, dry_run=options.dry_run, minimum=minimum,
                            limit=limit, at_least=at_least, clock=options.clock, chunk=options.embed_chunk or EMBED_CHUNK)
    for i, (c, o) in enumerate(zip(candidates, outcomes)):
        if not o.handled:
            run.stop_at("budget")
            return i
        if o.error is not None:
            if isinstance(o.error, DatabaseDamaged):
                run.fail("the memory store is damaged, nothing is written to it (run `subcog-store doctor`)",
                         o.error)
                return i
            if isinstance(o.error, DatabaseError) and "locked" in str(o.error):
                run.fail("memory store locked; the rest is captured next time", o.error)
                return i
            run.fail("a capture failed", f"{type(o.error).__name__} for {fingerprint(c.text)}: {o.error}")
            if isinstance(o.error, DatabaseError):
                return i
            continue
        if o.repeat_of is not None:
            run.skipped.append({"content": c.text, "namespace": c.namespace, "reason": "in_batch",
                                "same_as": candidates[o.repeat_of].text[:60], "matched_urn": None,
                                "similarity": None if o.similarity is None else round(o.similarity, 4)})
            continue
        _report_one(run, c, o)
    return None


def _report_one(run: Run, c, o) -> None:
    if o.check is not None:   # dry run
        check, stored, decision, urn, reasoning = o.check, not o.check.is_duplicate, "stored", None, None
    else:
        r = o.result
        check, stored, decision, urn, reasoning = r.check, r.stored, r.decision, r.urn, r.reasoning
    namespace = o.prepared.namespace   # the namespace of a memory of the same subject, when one was found
    if stored:
        if o.check is None and o.result.memory_id:
            run.stored.append(o.result.memory_id)
        entry = {"content": c.text, "namespace": namespace, "urn": urn, "confidence": round(c.confidence, 2),
                 "decision": decision}
        changed = next((n for n in check.neighbours if n.changed_fact), None)
        if decision == "changed_fact" and changed:
            from subcog_store.db.memories import urn as make_urn

            entry.update(matched_urn=make_urn(o.prepared.domain, changed.namespace or namespace, changed.memory_id),
                         reasoning=reasoning or changed.changed_fact)
        run.captured.append(entry)
    else:
        run.skipped.append({"content": c.text, "namespace": namespace, "reason": check.reason,
                            "matched_urn": check.matched_urn, "similarity": check.similarity_score,
                            "seconds_ago": check.captured_seconds_ago, "decision": decision})
