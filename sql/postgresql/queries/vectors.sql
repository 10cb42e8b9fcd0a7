-- name: find_semantic_neighbours
-- The k nearest active memories of a scope, exact: every vector of the scope is compared (pgvector's inner
-- product over the scope's rows, found through memory_vectors_scope), so no neighbour at or above any floor
-- is missed (subcog_store/postgres/knn.py: the semantic check's KNN).
select m.id, m.content, n.similarity, m.seq
from (
  select memory_seq, -(embedding <#> %(embedding)s) as similarity
  from memory_vectors
  where namespace = %(namespace)s and domain = %(domain)s
  order by (embedding <#> %(embedding)s) + 0   -- "+ 0": never an HNSW index's order (a bench builds one)
  limit %(k)s
) n
join memories m on m.seq = n.memory_seq
order by n.similarity desc, m.seq;

-- name: find_semantic_candidates
-- The check's candidates from sign bits (memory_bits, migration 012), as SQLite's query of this name: the
-- %(candidates)s nearest of the scope by Hamming distance (none beyond %(max_hamming)s), re-scored exactly with
-- their vectors; each row also carries how many candidates there were and the Hamming distance of the farthest,
-- which tell db/knn.py whether the answer is complete. ("offset 0": the distance is counted once a row.)
with query as (
  select subcog_sign_bits(%(embedding)s) as bits
), cand as (
  select memory_seq, hamming
  from (
    select b.memory_seq, bit_count(b.bits # query.bits) as hamming
    from memory_bits b cross join query
    where b.namespace = %(namespace)s and b.domain = %(domain)s
    offset 0
  ) counted
  where hamming <= %(max_hamming)s
  order by hamming, memory_seq
  limit %(candidates)s
), scored as (
  select cand.memory_seq, -(v.embedding <#> %(embedding)s) as similarity,
         count(*) over () as n_candidates, max(cand.hamming) over () as max_hamming
  from cand
  join memory_vectors v on v.memory_seq = cand.memory_seq
)
select m.id, m.content, scored.similarity, scored.n_candidates, scored.max_hamming, m.seq
from scored
join memories m on m.seq = scored.memory_seq
where m.status = 'active'
order by scored.similarity desc, m.seq
limit %(k)s;

-- name: vector_log_newest
-- A scope's newest committed revision and the memory it logged (seq, id): where a cache's first load starts
-- (db/bitcache.py). Read before the scope's vectors: each of its revisions up to here is in what they read.
select l.rev, l.memory_seq, m.id
from vector_log l
left join memories m on m.seq = l.memory_seq
where l.namespace = %(namespace)s and l.domain = %(domain)s
order by l.rev desc
limit 1;

-- name: scope_vectors
-- Every vector of a scope (a cache's first load computes their sign bits).
select memory_seq, embedding
from memory_vectors
where namespace = %(namespace)s and domain = %(domain)s;

-- name: vectors_since
-- The vectors that entered a scope from revision %(after)s on, in commit order, with the memory each logged (seq,
-- id): the first row must be the revision the cache read last, the same memory (else the log was pruned past it,
-- or this is another database), and the rest are new. A vector removed or moved since has none (null).
select l.rev, l.memory_seq, m.id, v.embedding
from vector_log l
left join memories m on m.seq = l.memory_seq
left join memory_vectors v
  on v.memory_seq = l.memory_seq and v.namespace = l.namespace and v.domain = l.domain
where l.namespace = %(namespace)s and l.domain = %(domain)s and l.rev >= %(after)s
order by l.rev;

-- name: rescore_candidates
-- Candidates found in a cache of sign bits (a JSON array of memory seqs), re-scored exactly with their vectors;
-- the cache may hold rows that have since left the scope, so scope and status are checked here.
select m.id, m.content, -(v.embedding <#> %(embedding)s) as similarity, m.seq
from memory_vectors v
join memories m on m.seq = v.memory_seq
where v.memory_seq in (select value::bigint from jsonb_array_elements_text(%(seqs)s::jsonb) as value)
  and m.status = 'active'
  and m.namespace = %(namespace)s
  and m.domain = %(domain)s
order by similarity desc, m.seq
limit %(k)s;
