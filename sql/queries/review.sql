-- name: get_decision
-- One decision-log row by id.
select id, decided_at, domain, namespace, policy, decision, new_content, new_hash, matched_memory_id,
  matched_content, similarity, memory_id, reasoning, review_status, reviewed_at, undo
from dedup_log
where id = :id;

-- name: list_decisions
-- Unreviewed decisions (or all with :all = 1), newest first; plain 'stored' decisions need no review.
select id, decided_at, domain, namespace, policy, decision, new_content, new_hash, matched_memory_id,
  matched_content, similarity, memory_id, reasoning, review_status, reviewed_at, undo
from dedup_log
where :all = 1 or (review_status = 'unreviewed' and decision <> 'stored')
order by id desc
limit :limit;

-- name: set_review_status
-- Mark a decision confirmed or reversed.
update dedup_log set review_status = :status, reviewed_at = :now where id = :id;

-- name: restore_memory
-- Put a memory's row back as it was before a replace or merge retired it.
update memories
set status = :status, updated_at = :updated_at, successor_id = :successor_id, importance = :importance, tags = :tags
where id = :id;
