-- name: stats_memories
-- Memories by domain, namespace and status.
select
  domain,
  namespace,
  status,
  memories
from v_namespace_counts
order by domain, namespace, status;

-- name: stats_checks
-- Checks by namespace and result.
select
  namespace,
  result,
  checks
from v_check_counts
order by namespace, result;

-- name: stats_skips
-- Skips by namespace and reason.
select
  namespace,
  reason,
  skips
from v_skip_counts
order by namespace, reason;

-- name: stats_durations
-- Check durations per tier.
select
  tier,
  checks,
  mean_ms,
  p50_ms,
  p95_ms,
  max_ms
from v_check_durations
order by tier;

-- name: stats_recent_window
-- The recent-capture window.
select
  entries,
  window_secs,
  capacity,
  lookups,
  hits,
  hit_rate
from v_recent_window;

-- name: stats_decisions
-- Decisions by kind and review status.
select
  decision,
  review_status,
  count(*) as n
from dedup_log
group by decision, review_status
order by decision;
