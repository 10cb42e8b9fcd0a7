-- name: 005_one_writer
-- One row per memory a decision touched (batch merges name every member); in-batch skips, forget and
-- maintenance decisions in the log; the pruning trigger reads a per-process override of the window settings.

-- The decision kinds grow: rebuild dedup_log (SQLite cannot alter a CHECK), the views that read it first.
drop view v_unreviewed;
drop view v_decisions;

create table dedup_log_new (
  id integer primary key,
  decided_at text not null,
  domain text not null,
  namespace text not null,
  policy text,                   -- skip | verify | replace | merge | batch | in_batch | forget | maintenance
  decision text not null check (decision in (
    'hash_exact', 'semantic_skip', 'recent_capture', 'auto_reject', 'verifier_reject', 'verifier_keep',
    'fallback_reject', 'fallback_keep', 'replaced', 'merged', 'changed_fact', 'stored', 'in_batch', 'forgotten',
    'moved', 'redacted')),
  new_content text,
  new_hash text,
  matched_memory_id text,        -- the one memory matched; a batch merge names its members in decision_members
  matched_content text,
  similarity real,
  memory_id text,                -- the memory this decision stored or produced, if any
  reasoning text,                -- the verifier's or the guard's words
  review_status text not null default 'unreviewed'
    check (review_status in ('unreviewed', 'confirmed', 'reversed')),
  reviewed_at text,
  undo text                      -- JSON: the rows as they were, for reverse / unmerge
);
insert into dedup_log_new select * from dedup_log;
drop table dedup_log;
alter table dedup_log_new rename to dedup_log;
create index dedup_log_review on dedup_log (review_status, decision);
create index dedup_log_memory on dedup_log (memory_id);

create table decision_members (
  decision_id integer not null references dedup_log (id),
  memory_id text not null,
  role text not null check (role in ('matched', 'merged', 'retired', 'outdated')),
  primary key (decision_id, memory_id)
);

-- Batch merges used to keep their members comma-joined in matched_memory_id: one row each now.
insert into decision_members (decision_id, memory_id, role)
with recursive split (decision_id, memory_id, rest) as (
  select id, '', matched_memory_id || ','
  from dedup_log
  where policy = 'batch' and matched_memory_id is not null
  union all
  select decision_id, substr(rest, 1, instr(rest, ',') - 1), substr(rest, instr(rest, ',') + 1)
  from split
  where rest <> ''
)
select decision_id, memory_id, 'merged' from split where memory_id <> '';
update dedup_log set matched_memory_id = null where policy = 'batch' and matched_memory_id like '%,%';

-- Every decision with the URNs of what it touched; a batch merge lists one URN per member.
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
  (select group_concat('subcog://' || l.domain || '/' || l.namespace || '/' || dm.memory_id, ' ')
   from decision_members dm where dm.decision_id = l.id) as member_urns,
  l.matched_content,
  case when l.memory_id is not null
    then 'subcog://' || l.domain || '/' || l.namespace || '/' || l.memory_id end as memory_urn,
  l.reasoning
from dedup_log l;

-- Decisions still waiting for a person (exact-hash decisions are confirmed automatically).
create view v_unreviewed as
select * from v_decisions where review_status = 'unreviewed' and decision not in ('stored', 'in_batch');

-- One row per memory a decision touched, with its URN.
create view v_decision_members as
select
  dm.decision_id,
  dm.role,
  dm.memory_id,
  'subcog://' || l.domain || '/' || l.namespace || '/' || dm.memory_id as urn
from decision_members dm
join dedup_log l on l.id = dm.decision_id;

-- The window and capacity: this process's override (subcog_setting(), registered on every connection this
-- package opens), else the settings table, else the default.
drop trigger recent_captures_prune;
create trigger recent_captures_prune after insert on recent_captures begin
  delete from recent_captures
  where captured_at < new.captured_at - coalesce(
    subcog_setting('dedup_time_window_secs'),
    (select cast(value as real) from settings where key = 'dedup_time_window_secs'), 300);
  delete from recent_captures
  where id in (
    select id from recent_captures
    order by captured_at desc, id desc
    limit -1 offset coalesce(
      subcog_setting('dedup_cache_capacity'),
      (select cast(value as integer) from settings where key = 'dedup_cache_capacity'), 1000));
end;
