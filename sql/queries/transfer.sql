-- name: export_memories
-- Memories to export, oldest first (an import in this order meets each changed fact after the fact it changes,
-- so it links them again): the active ones, or every one with :all.
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
where (:domain is null or domain = :domain)
  and (:all or status = 'active')
order by created_at, seq;

-- name: count_export_memories
-- How many memories `export_memories` gives (the progress bar's total).
select count(*)
from memories
where (:domain is null or domain = :domain)
  and (:all or status = 'active');

-- name: export_current
-- The current facts for the memory document: active and outdated by nothing, by domain and namespace, the most
-- important first.
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
where (:domain is null or domain = :domain)
  and status = 'active'
  and successor_id is null
order by domain, namespace, importance desc, created_at desc, seq;

-- name: export_outdated
-- The facts a newer memory outdated (still active, marked) or superseded, each with its successor: the memory
-- document lists them under the fact that replaced them.
select
  id,
  namespace,
  content,
  created_at,
  successor_id,
  status
from memories
where (:domain is null or domain = :domain)
  and successor_id is not null
  and status in ('active', 'superseded')
order by successor_id, created_at desc;
