-- name: search_knn_domain
-- The k nearest active memories of a domain, every namespace (vec0 scans each partition, domain filtered);
-- equal distances in memory order, as db/vectorcache.py's answer (query rescore_domain_candidates).
with knn as materialized (
  select
    memory_seq,
    distance
  from memory_vectors
  where embedding match :embedding
    and k = :k
    and domain = :domain
)
select
  m.id,
  1.0 - knn.distance * knn.distance / 2.0 as similarity
from knn
join memories m on m.seq = knn.memory_seq
where m.status = 'active'
order by knn.distance, knn.memory_seq;

-- name: domain_searchable
-- 1 when a domain holds a memory search can return: an active one, or any with :all = 1 (index memories_ranking).
select exists (
  select 1
  from memories
  where domain = :domain
    and (:all = 1 or status = 'active')
) as searchable;

-- name: search_text
-- BM25 over the FTS5 index of a domain (active memories, or every status with :all = 1); lower is better.
select
  m.id,
  bm25(memories_fts) as bm25
from memories_fts
join memories m on m.seq = memories_fts.rowid
where memories_fts match :query
  and m.domain = :domain
  and (:namespace is null or m.namespace = :namespace)
  and (:all = 1 or m.status = 'active')
order by bm25
limit :k;

-- name: memories_by_ids
-- Several memories by id (a JSON array), whatever their status.
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
where id in (select value from json_each(:ids));

-- name: search_candidates
-- What the ranking reads of several memories by id (a JSON array), whatever their status.
select
  id,
  content,
  status,
  successor_id
from memories
where id in (select value from json_each(:ids));

-- name: top_memories
-- The active memories of a domain most worth an index: most important first, then newest.
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
where domain = :domain
  and status = 'active'
order by importance desc, created_at desc
limit :limit;

-- name: vector_of
-- The stored vector of a memory by id (searchable, else parked).
select coalesce(
  (select v.embedding from memory_vectors v where v.memory_seq = m.seq),
  (select r.embedding from retired_vectors r where r.memory_seq = m.seq)) as embedding
from memories m
where m.id = :id;

-- name: vectors_of
-- The stored vectors of several memories by id (a JSON array): searchable, else parked; none for a memory without.
select
  m.id,
  coalesce(
    (select v.embedding from memory_vectors v where v.memory_seq = m.seq),
    (select r.embedding from retired_vectors r where r.memory_seq = m.seq)) as embedding
from memories m
where m.id in (select value from json_each(:ids));

-- name: term_document_counts
-- How many memories hold each of the words (a JSON array), and how many memories the index holds in all.
select
  t.value as term,
  coalesce((select v.doc from memories_fts_vocab v where v.term = t.value), 0) as documents,
  (select count(*) from memories) as total
from json_each(:terms) t;
