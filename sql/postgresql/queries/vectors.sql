-- name: find_semantic_neighbours
-- The k nearest active memories of a scope, exact: every vector of the scope is compared (pgvector's inner
-- product over the scope's rows, found through memory_vectors_scope), so no neighbour at or above any floor
-- is missed (subcog_store/postgres/knn.py: the fallback when the HNSW candidates cannot show it).
select m.id, m.content, n.similarity, m.seq
from (
  select memory_seq, -(embedding <#> %(embedding)s) as similarity
  from memory_vectors
  where namespace = %(namespace)s and domain = %(domain)s
  order by (embedding <#> %(embedding)s) + 0   -- "+ 0": never the HNSW index's order, which may miss one
  limit %(k)s
) n
join memories m on m.seq = n.memory_seq
order by n.similarity desc, m.seq;

-- name: set_hnsw_candidates
-- How many candidates an HNSW search of this connection returns (pgvector's hnsw.ef_search, at most 1000).
select set_config('hnsw.ef_search', %(candidates)s::text, false);

-- name: find_semantic_candidates
-- The nearest vectors of a namespace by its HNSW index (every domain's: the caller sees how far the search
-- went), nearest first, with the id and text of those in the scope's domain.
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
