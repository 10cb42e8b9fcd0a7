-- name: batch_scopes
-- The (namespace, domain) scopes that hold active memories; a batch run never mixes two scopes.
select namespace, domain, count(*) as n
from memories
where status = 'active'
  and (:namespace is null or namespace = :namespace)
  and (:domain is null or domain = :domain)
group by namespace, domain
order by namespace, domain;

-- name: batch_count_active
-- Active memories, optionally of one namespace and/or domain.
select count(*)
from memories
where status = 'active'
  and (:namespace is null or namespace = :namespace)
  and (:domain is null or domain = :domain);

-- name: batch_scope_memories
-- The active memories of one scope, oldest first.
select
  id, domain, namespace, content, content_hash, importance, tags, status, source, session_id,
  created_at, updated_at, successor_id, seq
from memories
where namespace = :namespace
  and domain = :domain
  and status = 'active'
order by created_at, seq;

-- name: batch_scope_vectors
-- Every vector of a namespace partition (the vec0 table; domain is a metadata column, filtered here).
select memory_seq, embedding
from memory_vectors
where namespace = :namespace
  and domain = :domain;


-- name: batch_memory_row
-- One memory as stored, every column (undo data of a batch merge).
select
  id, domain, namespace, content, content_hash, importance, tags, status, source, session_id,
  created_at, updated_at, successor_id, seq
from memories
where id = :id;

-- name: batch_retired_vector
-- The parked vector of a memory, if any.
select embedding from retired_vectors where memory_seq = :seq;

-- name: batch_park_vector
-- Keep a vector that leaves search, so unmerge can put it back.
insert or replace into retired_vectors (memory_seq, embedding) values (:seq, :embedding);

-- name: batch_unpark_vector
-- Forget a parked vector.
delete from retired_vectors where memory_seq = :seq;

-- name: batch_retire_member
-- A merged-away member: out of search, linked to the survivor.
update memories
set status = 'merged', successor_id = :successor_id, updated_at = :now
where id = :id and status = 'active';

-- name: batch_update_survivor
-- The survivor takes the merged text, the highest importance, the union of tags and the newest time.
update memories
set content = :content, importance = :importance, tags = :tags, created_at = :created_at, updated_at = :now
where id = :id and status = 'active';

-- name: batch_restore_memory
-- Put every stored column of a memory back as it was (content_hash is generated from content).
update memories
set domain = :domain, namespace = :namespace, content = :content, importance = :importance, tags = :tags,
    status = :status, source = :source, session_id = :session_id, created_at = :created_at,
    updated_at = :updated_at, successor_id = :successor_id
where seq = :seq and id = :id;

-- name: batch_reinsert_memory
-- Re-insert a hard-deleted memory with its original rowid (seq), so vectors and FTS line up again.
insert into memories (
  seq, id, domain, namespace, content, importance, tags, status, source, session_id, created_at, updated_at,
  successor_id)
values (
  :seq, :id, :domain, :namespace, :content, :importance, :tags, :status, :source, :session_id, :created_at,
  :updated_at, :successor_id);

-- name: batch_predecessors
-- Memories that point at one memory as their successor (what --hard-delete removes with it).
select
  id, domain, namespace, content, content_hash, importance, tags, status, source, session_id,
  created_at, updated_at, successor_id, seq
from memories
where successor_id = :id;

-- name: batch_recent_captures_of
-- Recent-capture rows that point at a memory.
select id, content_hash, memory_id, namespace, domain, captured_at
from recent_captures
where memory_id = :id;

-- name: batch_delete_recent_captures_of
-- Drop the recent-capture rows that point at a memory.
delete from recent_captures where memory_id = :id;

-- name: batch_reinsert_recent_capture
-- Put a recent-capture row back with its original id.
insert or ignore into recent_captures (id, content_hash, memory_id, namespace, domain, captured_at)
values (:id, :content_hash, :memory_id, :namespace, :domain, :captured_at);

-- name: batch_delete_memory
-- Hard delete (retired_vectors follow by ON DELETE CASCADE, memories_fts by trigger).
delete from memories where id = :id;

-- name: batch_active_hash_owner
-- The active memory of a scope with this normalized content, if any.
select id from memories
where domain = :domain and namespace = :namespace and content_hash = :content_hash and status = 'active';

-- name: batch_log_row
-- One decision-log row, for unmerge.
select id, policy, decision, review_status, domain, namespace, memory_id, undo
from dedup_log
where id = :id;

-- name: batch_mark_reversed
-- The merge was undone.
update dedup_log set review_status = 'reversed', reviewed_at = :now where id = :id;

-- name: batch_mark_stale_runs
-- Runs still 'running' were killed or crashed: mark them interrupted (this run carries on their work).
update dedup_runs set status = 'interrupted' where status = 'running';

-- name: batch_start_run
-- A run row, written at the start so a killed run leaves a trace.
insert into dedup_runs (started_at, dry_run, status, memories_before)
values (:started_at, 0, 'running', :memories_before)
returning id;

-- name: batch_finish_run
-- The run's figures, written at the end.
update dedup_runs
set finished_at = :finished_at, status = :status, memories_after = :memories_after, clusters = :clusters,
    removed = :removed, removal_rate = :removal_rate, duration_s = :duration_s, warnings = :warnings
where id = :id;

-- name: batch_get_setting
-- One stored setting value.
select value from settings where key = :key;
