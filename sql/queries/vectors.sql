-- name: insert_vector
-- The embedding of an active memory, in its namespace partition.
insert into memory_vectors (memory_seq, namespace, domain, embedding)
values (:seq, :namespace, :domain, :embedding);

-- name: delete_vector
-- Take a memory out of vector search (vec0 has no INSERT OR REPLACE: delete, then insert).
delete from memory_vectors
where memory_seq = :seq;

-- name: select_vector
-- The searchable embedding of a memory, if it has one.
select embedding
from memory_vectors
where memory_seq = :seq;

-- name: park_vector
-- Keep a vector that leaves search, so an undo can put it back.
insert or replace into retired_vectors (memory_seq, embedding)
values (:seq, :embedding);

-- name: unpark_vector
-- Forget a parked vector.
delete from retired_vectors
where memory_seq = :seq;

-- name: parked_vector
-- The parked vector of a retired memory, if any.
select embedding
from retired_vectors
where memory_seq = :seq;

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

-- name: knn_seqs
-- The k nearest vectors of a scope, by rowid (batch dedup, one query per memory).
select
  memory_seq,
  1.0 - distance * distance / 2.0 as similarity
from memory_vectors
where embedding match :embedding
  and k = :k
  and namespace = :namespace
  and domain = :domain;

-- name: scope_vectors
-- Every vector of a scope (the vec0 table; domain is a metadata column, filtered here).
select
  memory_seq,
  embedding
from memory_vectors
where namespace = :namespace
  and domain = :domain;

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

-- name: move_vector
-- A searchable vector follows its memory to another domain (domain is a metadata column, not the partition).
update memory_vectors
set domain = :domain
where memory_seq = :seq;
