-- name: insert_vector
-- The searchable vector of a memory (a unit vector: the inner product is the cosine).
insert into memory_vectors (memory_seq, namespace, domain, embedding)
values (%(memory_seq)s, %(namespace)s, %(domain)s, %(embedding)s);

-- name: find_semantic_neighbours
-- The k nearest active memories of a scope, exact: every vector of the scope is compared (pgvector's inner
-- product over the scope's rows, found through memory_vectors_scope), so no neighbour at or above any floor
-- is missed. An approximate index (HNSW) is not used: it can miss one (bench/bench_postgres.py measures both).
select m.id, m.content, n.similarity, m.seq
from (
  select memory_seq, -(embedding <#> %(embedding)s) as similarity
  from memory_vectors
  where namespace = %(namespace)s and domain = %(domain)s
  order by embedding <#> %(embedding)s
  limit %(k)s
) n
join memories m on m.seq = n.memory_seq
order by n.similarity desc, m.seq;
