-- name: get_hook_offset
-- Where the last capture stopped reading this session's transcript: the record's byte offset, the characters of
-- that record's text already handled, and how many candidates of the next piece (with the last one's fingerprint).
select
  byte_offset,
  record_chars,
  piece_done,
  piece_mark
from hook_offsets
where session_id = :session_id
  and transcript_path = :transcript_path;

-- name: set_hook_offset
-- Remember where this run stopped reading.
insert into hook_offsets (session_id, transcript_path, byte_offset, record_chars, piece_done, piece_mark, updated_at)
values (:session_id, :transcript_path, :byte_offset, :record_chars, :piece_done, :piece_mark, :now)
on conflict (session_id, transcript_path) do update
set byte_offset = excluded.byte_offset,
    record_chars = excluded.record_chars,
    piece_done = excluded.piece_done,
    piece_mark = excluded.piece_mark,
    updated_at = excluded.updated_at;

-- name: insert_hook_run
-- One pre-compact run and its report.
insert into hook_runs (session_id, transcript_path, trigger, started_at, finished_at, status, captured, skipped,
  redacted, report)
values (:session_id, :transcript_path, :trigger, :started_at, :finished_at, :status, :captured, :skipped,
  :redacted, :report);

-- name: undelivered_hook_run
-- The newest pre-compact run of a session whose report has not yet reached the model (session-end,
-- post-compact and import-history runs report nothing to it).
select id, report from hook_runs
where session_id = :session_id and status <> 'dry_run' and delivered_at is null
  and coalesce(trigger, '') not in ('session-end', 'post-compact', 'import-history')
order by id desc
limit 1;

-- name: mark_hook_run_delivered
-- The session-start hook handed this report (:upto) to the model: it and the session's earlier ones are given once.
update hook_runs set delivered_at = :now
where session_id = :session_id and delivered_at is null and id <= :upto;

-- name: hook_run_reports
-- Every hook run's report (redact: it lists the texts captured and skipped).
select id, report
from hook_runs
order by id;

-- name: redact_hook_run
-- A hook run's report with the secrets replaced.
update hook_runs
set report = :report
where id = :id;

-- name: mark_hook_pending
-- This capture will finish after the hook has answered (the warm worker's background part).
insert into hook_pending (session_id, transcript_path, payload, queued_at, deferred)
values (:session_id, :transcript_path, :payload, :now, 0)
on conflict (session_id, transcript_path) do update
set payload = excluded.payload, queued_at = excluded.queued_at, deferred = 0;

-- name: defer_hook_capture
-- This capture stopped early for its budget: the next capture hook on the store goes on with it.
insert into hook_pending (session_id, transcript_path, payload, queued_at, deferred)
values (:session_id, :transcript_path, :payload, :now, 1)
on conflict (session_id, transcript_path) do update
set payload = excluded.payload, queued_at = excluded.queued_at, deferred = 1;

-- name: clear_hook_pending
-- The capture of this session's transcript is saved: nothing of it is pending any more.
delete from hook_pending
where session_id = :session_id
  and transcript_path = :transcript_path;

-- name: stale_hook_pending
-- Captures recorded as pending before :before and never saved (their worker died): the oldest first, at most
-- :limit (-1: all).
select
  session_id,
  transcript_path,
  payload,
  queued_at
from hook_pending
where queued_at < :before
  and deferred = 0
order by queued_at
limit :limit;

-- name: deferred_hook_captures
-- Captures their budget stopped early, the oldest first, at most :limit.
select
  session_id,
  transcript_path,
  payload,
  queued_at
from hook_pending
where deferred = 1
order by queued_at
limit :limit;

-- name: set_aside_hook_pending
-- A pending capture record that cannot be read leaves the queue for hook_pending_set_aside (doctor reports it).
insert into hook_pending_set_aside (session_id, transcript_path, payload, queued_at, set_aside_at, reason)
select session_id, transcript_path, payload, queued_at, :now, :reason
from hook_pending
where session_id = :session_id and transcript_path = :transcript_path and queued_at = :queued_at
on conflict (session_id, transcript_path, queued_at) do nothing;

-- name: delete_set_aside_hook_pending
-- ... and is removed from the queue in the same transaction.
delete from hook_pending
where session_id = :session_id and transcript_path = :transcript_path and queued_at = :queued_at;

-- name: hook_pending_set_aside
-- The pending capture records set aside as unreadable (doctor).
select session_id, transcript_path, payload
from hook_pending_set_aside
order by set_aside_at;

-- name: known_empty_texts
-- Which of the fingerprints (a JSON array of integers) name texts a capture extracted and found no candidate in.
select fingerprint
from extraction_memo
where fingerprint in (select value from json_each(:fingerprints));

-- name: remember_empty_texts
-- Texts a capture extracted and found no candidate in (a JSON array of their fingerprints).
insert into extraction_memo (fingerprint, seen_at)
select value, :now from json_each(:fingerprints) where true
on conflict (fingerprint) do nothing;

-- name: prune_empty_texts
-- The fingerprints added before :before.
delete from extraction_memo
where seen_at < :before;
