-- name: find_exact_match
-- The active memory in a scope with the same normalized content (exact tier).
select
  id,
  content
from memories
where content_hash = :content_hash
  and domain = :domain
  and namespace = :namespace
  and status = 'active'
limit 1;

-- name: find_semantic_neighbours
-- The k nearest active memories of a scope by embedding (semantic tier). Unit vectors: cosine = 1 - d²/2.
with knn as (
  select
    memory_seq,
    distance
  from memory_vectors
  where embedding match :embedding
    and k = :k
    and namespace = :namespace
    and domain = :domain
)
select
  m.id,
  m.content,
  1.0 - knn.distance * knn.distance / 2.0 as similarity
from knn
join memories m on m.seq = knn.memory_seq
where m.status = 'active'
order by knn.distance;

-- name: find_text_neighbours
-- Candidates by BM25 over the FTS5 index of the scope (the text tier, when there is no model).
select
  m.id,
  m.content,
  bm25(memories_fts) as score
from memories_fts
join memories m on m.seq = memories_fts.rowid
where memories_fts match :query
  and m.domain = :domain
  and m.namespace = :namespace
  and m.status = 'active'
order by score
limit :k;

-- name: find_recent_capture
-- The newest capture of this content in the scope within the window (recent tier).
select
  memory_id,
  captured_at
from recent_captures
where content_hash = :content_hash
  and namespace = :namespace
  and domain = :domain
  and captured_at >= :since
order by captured_at desc
limit 1;

-- name: insert_memory
-- A new active memory; content_hash is computed by the database.
insert into memories (id, domain, namespace, content, importance, tags, status, source, session_id, created_at, updated_at)
values (:id, :domain, :namespace, :content, :importance, :tags, 'active', :source, :session_id, :now, :now)
returning seq, content_hash;

-- name: insert_vector
-- The embedding of an active memory, in its namespace partition.
insert into memory_vectors (memory_seq, namespace, domain, embedding)
values (:seq, :namespace, :domain, :embedding);

-- name: delete_vector
-- Take a memory out of vector search (vec0 has no INSERT OR REPLACE: delete, then insert).
delete from memory_vectors where memory_seq = :seq;

-- name: select_vector
-- The stored embedding of a memory, if it has one.
select embedding from memory_vectors where memory_seq = :seq;

-- name: insert_recent_capture
-- Remember a capture for the recent window; the trigger prunes by age and capacity.
insert into recent_captures (content_hash, memory_id, namespace, domain, captured_at)
values (:content_hash, :memory_id, :namespace, :domain, :captured_at);

-- name: insert_check
-- One row per duplicate check.
insert into dedup_checks (
  checked_at, domain, namespace, result, reason, method, similarity, matched_memory_id,
  duration_ms, exact_ms, semantic_ms, recent_ms, tiers_run, tier_errors, content_fingerprint)
values (
  :checked_at, :domain, :namespace, :result, :reason, :method, :similarity, :matched_memory_id,
  :duration_ms, :exact_ms, :semantic_ms, :recent_ms, :tiers_run, :tier_errors, :content_fingerprint);

-- name: upsert_setting
-- Store a setting (used to keep the pruning triggers in step with the environment).
insert into settings (key, value, updated_at) values (:key, :value, :now)
on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at
where settings.value <> excluded.value;

-- name: select_settings
-- All stored settings.
select key, value from settings;

-- name: get_memory
-- One memory by id, whatever its status.
select
  id, domain, namespace, content, content_hash, importance, tags, status, source, session_id,
  created_at, updated_at, successor_id, seq
from memories
where id = :id;

-- name: list_memories
-- Memories of a namespace/domain/status, newest first.
select
  id, domain, namespace, content, content_hash, importance, tags, status, source, session_id,
  created_at, updated_at, successor_id, seq
from memories
where (:namespace is null or namespace = :namespace)
  and (:domain is null or domain = :domain)
  and (:status is null or status = :status)
order by created_at desc, seq desc
limit :limit;

-- name: log_decision
-- One row of the decision log.
insert into dedup_log (
  decided_at, domain, namespace, policy, decision, new_content, new_hash, matched_memory_id,
  matched_content, similarity, memory_id, reasoning, review_status, reviewed_at, undo)
values (
  :decided_at, :domain, :namespace, :policy, :decision, :new_content, :new_hash, :matched_memory_id,
  :matched_content, :similarity, :memory_id, :reasoning, :review_status, :reviewed_at, :undo)
returning id;
