-- name: log_decision
-- One row of the decision log.
insert into dedup_log (
  decided_at, domain, namespace, policy, decision, new_content, new_hash, matched_memory_id,
  matched_content, similarity, memory_id, reasoning, review_status, reviewed_at, undo)
values (
  :decided_at, :domain, :namespace, :policy, :decision, :new_content, :new_hash, :matched_memory_id,
  :matched_content, :similarity, :memory_id, :reasoning, :review_status, :reviewed_at, :undo)
returning id;

-- name: add_decision_member
-- A memory a decision touched (the members of a batch merge, one row each).
insert or ignore into decision_members (decision_id, memory_id, role)
values (:decision_id, :memory_id, :role);

-- name: get_decision
-- One decision-log row by id.
select
  id,
  decided_at,
  domain,
  namespace,
  policy,
  decision,
  new_content,
  new_hash,
  matched_memory_id,
  matched_content,
  similarity,
  memory_id,
  reasoning,
  review_status,
  reviewed_at,
  undo
from dedup_log
where id = :id;

-- name: list_decisions
-- Unreviewed decisions (or all with :all = 1), newest first; plain 'stored' decisions need no review.
select
  id,
  decided_at,
  domain,
  namespace,
  policy,
  decision,
  new_content,
  new_hash,
  matched_memory_id,
  matched_content,
  similarity,
  memory_id,
  reasoning,
  review_status,
  reviewed_at,
  undo
from dedup_log
where :all = 1
  or (review_status = 'unreviewed' and decision not in ('stored', 'in_batch'))
order by id desc
limit :limit;

-- name: set_review_status
-- Mark a decision confirmed or reversed.
update dedup_log
set review_status = :status,
    reviewed_at = :now
where id = :id;

-- name: decision_texts
-- The text columns of every decision (redact: secrets in texts logged before a rule existed).
select id, new_content, matched_content, reasoning, undo
from dedup_log
order by id;

-- name: redact_decision
-- A decision's texts with the secrets replaced (its undo snapshots included).
update dedup_log
set new_content = :new_content,
    matched_content = :matched_content,
    reasoning = :reasoning,
    undo = :undo
where id = :id;

-- name: status_logged
-- A status line already logged for the domain (a transcript read again logs it once).
select id from dedup_log where domain = :domain and new_hash = :hash and policy = 'status' limit 1;
