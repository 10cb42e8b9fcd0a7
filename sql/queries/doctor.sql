-- name: active_without_vector
-- Active memories that have no vector (stored while the model was missing; `subcog-store reembed` fixes it).
select m.id
from memories m
where m.status = 'active'
  and not exists (select 1 from memory_vectors_rowids v where v.rowid = m.seq);

-- name: vector_without_active_memory
-- Vectors whose memory is missing or no longer active.
select v.rowid
from memory_vectors_rowids v
left join memories m on m.seq = v.rowid
where m.seq is null or m.status <> 'active';

-- name: vector_scope_mismatch
-- Vectors filed under another namespace or domain than their memory.
select m.id
from memory_vectors v
join memories m on m.seq = v.memory_seq
where v.namespace <> m.namespace or v.domain <> m.domain;

-- name: all_hashes
-- Every memory's content and stored hash, to recompute in Python.
select id, content, content_hash from memories;

-- name: dangling_successors
-- Retired memories whose successor does not exist.
select m.id
from memories m
where m.successor_id is not null
  and not exists (select 1 from memories s where s.id = m.successor_id);

-- name: duplicate_active_hashes
-- More than one active memory per scope and hash (the unique index forbids it; checked anyway).
select domain, namespace, content_hash, count(*) as n
from memories
where status = 'active'
group by domain, namespace, content_hash
having n > 1;

-- name: quick_check
-- SQLite's own consistency check.
pragma quick_check;

-- name: bits_mismatch
-- Vectors whose sign bits are missing, filed elsewhere or stale, and sign bits left without a vector.
select v.memory_seq
from memory_vectors v
left join memory_bits b on b.memory_seq = v.memory_seq
where b.memory_seq is null
   or b.namespace <> v.namespace
   or b.domain <> v.domain
   or b.bits <> vec_quantize_binary(v.embedding)
union
select b.rowid
from memory_bits_rowids b
where not exists (select 1 from memory_vectors_rowids v where v.rowid = b.rowid);
