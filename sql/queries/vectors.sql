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

-- name: log_bits
-- Record that a memory's sign bits (re)entered a scope (db/bitcache.py brings its caches up to date from it).
insert into bits_log (memory_seq, namespace, domain)
select memory_seq, namespace, domain
from memory_bits
where memory_seq = :seq;

-- name: bits_log_newest
-- The newest revision (0 when none).
select coalesce(max(rev), 0)
from bits_log;

-- name: bits_log_entry
-- The memory a revision logged, by seq and (random) id: a cache checks the last one it read is still there,
-- the same, which also tells another store file at the same path from the one it read.
select
  l.memory_seq,
  m.id
from bits_log l
left join memories m on m.seq = l.memory_seq
where l.rev = :rev;

-- name: bits_since
-- The sign bits that entered a scope after revision :after, up to :upto (a row removed since has none).
select
  l.rev,
  l.memory_seq,
  b.bits
from bits_log l
join memory_bits b on b.memory_seq = l.memory_seq
where l.namespace = :namespace
  and l.domain = :domain
  and l.rev > :after
  and l.rev <= :upto
order by l.rev;

-- name: scope_bits
-- Every sign bit of a scope (a cache's first load: vec0 reads them row by row, ~3.4 s a million).
select
  memory_seq,
  bits
from memory_bits
where namespace = :namespace
  and domain = :domain;

-- name: scope_size
-- How many memories of a scope are searchable (a cache is kept only for large ones).
select count(*)
from memories
where namespace = :namespace
  and domain = :domain
  and status = 'active';

-- name: rescore_candidates
-- Candidates found in a cache of sign bits (a JSON array of memory seqs), re-scored exactly with their float
-- vectors; the cache may hold rows that have since left the scope, so scope and status are checked here. The
-- cross joins fix the order (candidates first): otherwise the planner walks the scope's index (1.5 s at 100k).
with scored as materialized (
  select
    v.memory_seq,
    vec_distance_l2(v.embedding, :embedding) as distance
  from json_each(:seqs) cand
  cross join memory_vectors v on v.memory_seq = cand.value
)
select
  m.id,
  m.content,
  1.0 - scored.distance * scored.distance / 2.0 as similarity,
  m.seq
from scored
cross join memories m on m.seq = scored.memory_seq
where m.status = 'active'
  and m.namespace = :namespace
  and m.domain = :domain
order by scored.distance
limit :k;

-- name: sign_bits
-- A query vector's sign bits, exactly as memory_bits stores them.
select vec_quantize_binary(:embedding);

-- name: max_memory_seq
-- The newest memory row a check saw (the semantic tier is re-checked, under the write lock, against the rows
-- written after it).
select coalesce(max(seq), 0) from memories;

-- name: new_semantic_neighbours
-- The active memories of a scope written after :after, scored against an embedding (the re-check of the
-- semantic tier under the write lock: a few rows, by rowid range, each vector looked up by its key).
with fresh as materialized (
  select seq, id, content
  from memories
  where seq > :after
    and status = 'active'
    and namespace = :namespace
    and domain = :domain
)
select
  fresh.id,
  fresh.content,
  1.0 - vec_distance_l2(v.embedding, :embedding) * vec_distance_l2(v.embedding, :embedding) / 2.0 as similarity
from fresh
cross join memory_vectors v on v.memory_seq = fresh.seq;

-- name: new_memories_in_scope
-- The active memories of a scope written after :after (the text tier's re-check under the write lock).
select id, content
from memories
where seq > :after
  and status = 'active'
  and namespace = :namespace
  and domain = :domain;

-- name: domain_size
-- How many memories of a domain are searchable (db/vectorcache.py keeps a cache for middle-sized ones).
select count(*)
from memories
where domain = :domain
  and status = 'active';

-- name: domain_vectors
-- Every searchable vector of a domain, every namespace (a vector cache's first load).
select
  memory_seq,
  embedding
from memory_vectors
where domain = :domain;

-- name: domain_vectors_since
-- The vectors that entered a domain after revision :after, up to :upto (a row removed since has none).
select
  l.rev,
  l.memory_seq,
  v.embedding
from bits_log l
join memory_vectors v on v.memory_seq = l.memory_seq
where l.rev > :after
  and l.rev <= :upto
  and l.domain = :domain
order by l.rev;

-- name: rescore_domain_candidates
-- Candidates found in a domain's vector cache (a JSON array of memory seqs), re-scored with vec0's own distance,
-- as search_knn_domain scores them; the cache may hold rows that have since left the domain or search, so domain
-- and status are checked here. The cross joins fix the order (candidates first), as in rescore_candidates.
with scored as materialized (
  select
    v.memory_seq,
    vec_distance_l2(v.embedding, :embedding) as distance
  from json_each(:seqs) cand
  cross join memory_vectors v on v.memory_seq = cand.value
)
select
  m.id,
  1.0 - scored.distance * scored.distance / 2.0 as similarity
from scored
cross join memories m on m.seq = scored.memory_seq
where m.status = 'active'
  and m.domain = :domain
order by scored.distance, scored.memory_seq
limit :k;
