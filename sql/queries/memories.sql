-- name: get_memory
-- One memory by id, whatever its status.
select
  id,
  domain,
  namespace,
  content,
  content_hash,
  importance,
  tags,
  status,
  source,
  session_id,
  created_at,
  updated_at,
  successor_id,
  seq
from memories
where id = :id;

-- name: list_memories
-- Memories of a namespace/domain/status, newest first.
select
  id,
  domain,
  namespace,
  content,
  content_hash,
  importance,
  tags,
  status,
  source,
  session_id,
  created_at,
  updated_at,
  successor_id,
  seq
from memories
where (:namespace is null or namespace = :namespace)
  and (:domain is null or domain = :domain)
  and (:status is null or status = :status)
order by created_at desc, seq desc
limit :limit;

-- name: scope_memories
-- The active memories of one (namespace, domain) scope, oldest first (batch dedup).
select
  id,
  domain,
  namespace,
  content,
  content_hash,
  importance,
  tags,
  status,
  source,
  session_id,
  created_at,
  updated_at,
  successor_id,
  seq
from memories
where namespace = :namespace
  and domain = :domain
  and status = 'active'
order by created_at, seq;

-- name: predecessors
-- Memories that point at one memory as their successor (what a hard delete removes with it).
select id
from memories
where successor_id = :id;

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

-- name: active_scopes
-- The (namespace, domain) scopes that hold active memories; a batch run never mixes two scopes.
select
  namespace,
  domain,
  count(*) as n
from memories
where status = 'active'
  and (:namespace is null or namespace = :namespace)
  and (:domain is null or domain = :domain)
group by namespace, domain
order by namespace, domain;

-- name: count_active
-- Active memories, optionally of one namespace and/or domain.
select count(*)
from memories
where status = 'active'
  and (:namespace is null or namespace = :namespace)
  and (:domain is null or domain = :domain);

-- name: active_in_domain
-- How many active memories a domain holds (the prompt gate's store size; the index memories_ranking counts them).
select count(*)
from memories
where domain = :domain
  and status = 'active';

-- name: insert_memory
-- A new active memory; content_hash is computed by the database.
insert into memories (
  id, domain, namespace, content, importance, tags, status, source, session_id, created_at, updated_at)
values (
  :id, :domain, :namespace, :content, :importance, :tags, 'active', :source, :session_id, :created_at, :now)
returning seq, content_hash;

-- name: set_memory_status
-- Retire (superseded, merged, deleted) or reactivate a memory, with the memory that took its place.
update memories
set status = :status,
    successor_id = :successor_id,
    updated_at = :now
where id = :id;

-- name: set_successor
-- Link a memory to the one that replaced, absorbed or updated it (status unchanged).
update memories
set successor_id = :successor_id,
    updated_at = :now
where id = :id;

-- name: touch_memory
-- A repeat brought new tags or a higher importance: keep them on the existing memory.
update memories
set tags = :tags,
    importance = :importance,
    updated_at = :now
where id = :id;

-- name: rewrite_memory
-- A batch survivor takes the merged text, the highest importance, the union of tags and the newest time.
update memories
set content = :content,
    importance = :importance,
    tags = :tags,
    created_at = :created_at,
    updated_at = :now
where id = :id;

-- name: restore_memory
-- Put every stored column of a memory back as it was (content_hash is generated from content).
update memories
set domain = :domain,
    namespace = :namespace,
    content = :content,
    importance = :importance,
    tags = :tags,
    status = :status,
    source = :source,
    session_id = :session_id,
    created_at = :created_at,
    updated_at = :updated_at,
    successor_id = :successor_id
where seq = :seq
  and id = :id;

-- name: reinsert_memory
-- Re-insert a hard-deleted memory with its original rowid (seq), so vectors and FTS line up again.
insert into memories (
  seq, id, domain, namespace, content, importance, tags, status, source, session_id, created_at, updated_at,
  successor_id)
values (
  :seq, :id, :domain, :namespace, :content, :importance, :tags, :status, :source, :session_id, :created_at,
  :updated_at, :successor_id);

-- name: delete_memory
-- Hard delete (retired_vectors follow by ON DELETE CASCADE, memories_fts by trigger).
delete from memories
where id = :id;

-- name: move_memory
-- A memory moves to another domain (its project's, from the shared `project` of older stores).
update memories
set domain = :domain,
    updated_at = :now
where id = :id;

-- name: domain_memory_ids
-- Every memory of a domain, whatever its status, oldest first.
select id
from memories
where domain = :domain
order by seq;

-- name: purge_fts
-- Merge the full-text index into one segment, so the terms of replaced texts are gone from it, not only marked.
insert into memories_fts (memories_fts) values ('optimize');

-- name: vacuum
-- Rewrite the file: pages that held replaced texts are dropped, not left as free pages.
vacuum;

-- name: checkpoint_truncate
-- Copy the WAL into the database and empty it.
pragma wal_checkpoint(truncate);

-- name: salvage_memories
-- Memories after :after in seq order, :limit at most (`salvage` of a damaged file: a block that cannot be read
-- is read again row by row with salvage_memory).
select seq, id, domain, namespace, content, importance, tags, status, source, session_id, created_at
from memories
where seq > :after
order by seq
limit :limit;

-- name: salvage_memory
-- One memory by seq (`salvage`, row by row).
select seq, id, domain, namespace, content, importance, tags, status, source, session_id, created_at
from memories
where seq = :seq;

-- name: produced_by
-- The active memories of a domain one session or one source produced (either may be null: any), oldest first.
select
  id,
  namespace
from memories
where domain = :domain
  and status = 'active'
  and (:session_id is null or session_id = :session_id)
  and (:source is null or source = :source)
order by seq;

-- name: outdated_by_any
-- The active memories marked as outdated by one of these memories (a JSON array of ids).
select id
from memories
where status = 'active'
  and successor_id in (select value from json_each(:ids))
order by seq;

-- name: namespaces_in_use
-- The namespaces (of those given, a JSON array) holding an active memory of the domain: a project-wide check
-- looks in them (one index probe each).
select n.value as namespace
from json_each(:namespaces) as n
where exists (
  select 1
  from memories as m
  where m.namespace = n.value
    and m.domain = :domain
    and m.status = 'active'
);
