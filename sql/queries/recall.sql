-- name: log_recall
-- What one hook or tool handed the model.
insert into recall_log (
  recalled_at, session_id, hook, domain, query_fingerprint, method, memory_ids, scores, tokens, reason, duration_ms)
values (
  :recalled_at, :session_id, :hook, :domain, :query_fingerprint, :method, :memory_ids, :scores, :tokens, :reason,
  :duration_ms);

-- name: log_recall_once
-- A recall_log row a hook deferred while the store was locked (db/deferred.py), unless it is already there.
insert into recall_log (
  recalled_at, session_id, hook, domain, query_fingerprint, method, memory_ids, scores, tokens, reason, duration_ms)
select
  :recalled_at, :session_id, :hook, :domain, :query_fingerprint, :method, :memory_ids, :scores, :tokens, :reason,
  :duration_ms
where not exists (
  select 1 from recall_log
  where session_id is :session_id and recalled_at = :recalled_at and hook = :hook and memory_ids = :memory_ids);

-- name: injected_in_session
-- Memories already handed to the model in a session (never twice).
select distinct j.value as id
from recall_log r, json_each(r.memory_ids) j
where r.session_id = :session_id;

-- name: tokens_in_session
-- Tokens injected so far in a session (one budget shared by every hook).
select coalesce(sum(tokens), 0)
from recall_log
where session_id = :session_id;

-- name: last_compaction
-- When a session was last compacted (its memories created up to then are recallable in it).
select max(compacted_at)
from session_compactions
where session_id = :session_id;

-- name: record_compaction
-- A session was compacted.
insert or ignore into session_compactions (session_id, compacted_at)
values (:session_id, :compacted_at);
