-- name: insert_check
-- One row per duplicate check.
insert into dedup_checks (
  checked_at, domain, namespace, result, reason, method, similarity, matched_memory_id,
  duration_ms, exact_ms, semantic_ms, recent_ms, tiers_run, tier_errors, content_fingerprint)
values (
  :checked_at, :domain, :namespace, :result, :reason, :method, :similarity, :matched_memory_id,
  :duration_ms, :exact_ms, :semantic_ms, :recent_ms, :tiers_run, :tier_errors, :content_fingerprint);
