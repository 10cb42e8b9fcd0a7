-- name: outdated_candidates
-- The k nearest current memories of a domain, every namespace (the changed-facts-by-subject detector's
-- candidates): active, not already outdated by a successor. A top-k heuristic, not an exact KNN: the
-- :candidates nearest by sign bits (memory_bits: a Hamming scan ~3x cheaper than vec0's float scan of the
-- domain) re-scored exactly with their float vectors (dedup/outdated.py says how often it misses one of the
-- exact k nearest).
with cand as (
  select
    memory_seq
  from memory_bits
  where bits match vec_quantize_binary(:embedding)
    and k = :candidates
    and domain = :domain
), scored as materialized (
  select
    cand.memory_seq,
    vec_distance_l2(v.embedding, :embedding) as distance
  from cand
  join memory_vectors v on v.memory_seq = cand.memory_seq
)
select
  m.id,
  m.namespace,
  m.content,
  m.created_at,
  1.0 - scored.distance * scored.distance / 2.0 as similarity
from scored
cross join memories m on m.seq = scored.memory_seq
where m.status = 'active'
  and m.successor_id is null
order by scored.distance
limit :k;

-- name: outdated_candidates_exact
-- The same from vec0's exact float scan of the domain (a store without sign bits: opened before migration 008).
with knn as (
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
  m.namespace,
  m.content,
  m.created_at,
  1.0 - knn.distance * knn.distance / 2.0 as similarity
from knn
join memories m on m.seq = knn.memory_seq
where m.status = 'active'
  and m.successor_id is null
order by knn.distance;
