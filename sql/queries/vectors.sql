-- name: insert_vector
-- The embedding of an active memory, in its namespace partition.
insert into memory_vectors (memory_seq, namespace, domain, embedding)
values (:seq, :namespace, :domain, :embedding);

-- name: insert_bits
-- The sign bits of a searchable vector (written with it: candidates for the semantic KNN).
insert into memory_bits (memory_seq, namespace, domain, bits)
values (:seq, :namespace, :domain, vec_quantize_binary(:embedding));

-- name: delete_vector
-- Take a memory out of vector search (vec0 has no INSERT OR REPLACE: delete, then insert).
delete from memory_vectors
where memory_seq = :seq;

-- name: delete_bits
-- The sign bits leave with the vector.
delete from memory_bits
where memory_seq = :seq;

-- name: select_vector
-- The searchable embedding of a memory, if it has one.
select embedding
from memory_vectors
where memory_seq = :seq;

-- name: vector_scope_of
-- A searchable vector with its scope (to derive its sign bits again).
select namespace, domain, embedding
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
  1.0 - knn.distance * knn.distance / 2.0 as similarity,
  m.seq
from knn
join memories m on m.seq = knn.memory_seq
where m.status = 'active'
order by knn.distance;

-- name: find_semantic_candidates
-- The same neighbours from sign bits: the :candidates nearest by Hamming distance (none beyond :max_hamming),
-- re-scored exactly with their float vectors; each row also carries how many candidates there were and the
-- Hamming distance of the farthest, which tell db/knn.py whether the answer is complete.
with cand as (
  select
    memory_seq,
    distance as hamming
  from memory_bits
  where bits match vec_quantize_binary(:embedding)
    and k = :candidates
    and namespace = :namespace
    and domain = :domain
    and distance <= :max_hamming
), scored as (
  select
    cand.memory_seq,
    vec_distance_l2(v.embedding, :embedding) as distance,
    count(*) over () as n_candidates,
    max(cand.hamming) over () as max_hamming
  from cand
  join memory_vectors v on v.memory_seq = cand.memory_seq
)
select
  m.id,
  m.content,
  1.0 - scored.distance * scored.distance / 2.0 as similarity,
  scored.n_candidates,
  scored.max_hamming,
  m.seq
from scored
join memories m on m.seq = scored.memory_seq
where m.status = 'active'
order by scored.distance
limit :k;

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

-- name: move_bits
-- The sign bits follow too.
update memory_bits
set domain = :domain
where memory_seq = :seq;
