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
-- The HNSW candidates the check read before migration 010 (bench/bench_postgres.py's baseline, on the index it
-- builds): the nearest vectors of a namespace by pgvector's graph, every domain's, nearest first.
select n.memory_seq, n.domain, n.similarity, m.id, case when n.domain = %(domain)s then m.content end
from (
  select memory_seq, domain, -(embedding <#> %(embedding)s) as similarity
  from memory_vectors
  where namespace = %(namespace)s
  order by embedding <#> %(embedding)s
  limit %(candidates)s
) n
join memories m on m.seq = n.memory_seq
order by n.similarity desc, n.memory_seq;
