-- name: outdated_candidates
-- The k nearest current memories of a domain, every namespace (the changed-facts-by-subject detector's
-- candidates): active, not already outdated by a successor.
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
