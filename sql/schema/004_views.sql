-- name: 004_views
-- Audit views: plain SQL, readable from the stock sqlite3 shell without loading any extension.

-- Active memories with their URN and short hash tag.
create view v_memories as
select
  id,
  'subcog://' || domain || '/' || namespace || '/' || id as urn,
  domain,
  namespace,
  content,
  content_hash,
  'hash:sha256:' || substr(content_hash, 1, 16) as hash_tag,
  importance,
  tags,
  source,
  session_id,
  created_at,
  updated_at
from memories
where status = 'active';

-- Checks by namespace and result (dedup_checks_total of the original design).
create view v_check_counts as
select namespace, result, count(*) as checks
from dedup_checks
group by namespace, result;

-- Skips by namespace and reason (dedup_skips_total).
create view v_skip_counts as
select namespace, reason, count(*) as skips
from dedup_checks
where result = 'duplicate'
group by namespace, reason;

-- Check duration distribution per tier, and for the whole check (dedup_check_duration_ms).
create view v_check_durations as
with samples as (
  select 'exact' as tier, exact_ms as ms from dedup_checks where exact_ms is not null
  union all select 'semantic', semantic_ms from dedup_checks where semantic_ms is not null
  union all select 'recent', recent_ms from dedup_checks where recent_ms is not null
  union all select 'total', duration_ms from dedup_checks
),
ranked as (
  select tier, ms, cume_dist() over (partition by tier order by ms) as pr from samples
)
select
  tier,
  count(*) as checks,
  round(avg(ms), 3) as mean_ms,
  round(min(case when pr >= 0.50 then ms end), 3) as p50_ms,
  round(min(case when pr >= 0.95 then ms end), 3) as p95_ms,
  round(max(ms), 3) as max_ms
from ranked
group by tier;

-- The recent-capture window: its size and hit rate (dedup_recent_cache_size, cache hits).
create view v_recent_window as
select
  (select count(*) from recent_captures) as entries,
  (select cast(value as integer) from settings where key = 'dedup_time_window_secs') as window_secs,
  (select cast(value as integer) from settings where key = 'dedup_cache_capacity') as capacity,
  (select count(*) from dedup_checks where tiers_run like '%"recent"%') as lookups,
  (select count(*) from dedup_checks where reason = 'recent_capture') as hits,
  round(
    1.0 * (select count(*) from dedup_checks where reason = 'recent_capture')
    / nullif((select count(*) from dedup_checks where tiers_run like '%"recent"%'), 0), 4) as hit_rate;

-- Every decision with the URNs of what it touched.
create view v_decisions as
select
  l.id,
  l.decided_at,
  l.domain,
  l.namespace,
  l.policy,
  l.decision,
  l.similarity,
  l.review_status,
  l.new_content,
  l.new_hash,
  case when l.matched_memory_id is not null
    then 'subcog://' || l.domain || '/' || l.namespace || '/' || l.matched_memory_id end as matched_urn,
  l.matched_content,
  case when l.memory_id is not null
    then 'subcog://' || l.domain || '/' || l.namespace || '/' || l.memory_id end as memory_urn,
  l.reasoning
from dedup_log l;

-- Decisions still waiting for a person (exact-hash decisions are confirmed automatically).
create view v_unreviewed as
select * from v_decisions where review_status = 'unreviewed' and decision <> 'stored';

-- Memories that left search, and what replaced them.
create view v_retired as
select
  m.id,
  m.namespace,
  m.domain,
  m.status,
  m.content,
  m.successor_id,
  s.content as successor_content,
  m.updated_at
from memories m
left join memories s on s.id = m.successor_id
where m.status in ('superseded', 'merged', 'deleted');

-- Memories by namespace and status.
create view v_namespace_counts as
select domain, namespace, status, count(*) as memories
from memories
group by domain, namespace, status;
