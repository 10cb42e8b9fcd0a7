-- name: 002_decisions
-- The decision log of store-time policies and batch runs, with review status and undo data.

create table dedup_log (
  id integer primary key,
  decided_at text not null,
  domain text not null,
  namespace text not null,
  policy text,                   -- skip | verify | replace | merge | batch
  decision text not null check (decision in (
    'hash_exact', 'semantic_skip', 'recent_capture', 'auto_reject', 'verifier_reject', 'verifier_keep',
    'fallback_reject', 'fallback_keep', 'replaced', 'merged', 'changed_fact', 'stored')),
  new_content text,
  new_hash text,
  matched_memory_id text,
  matched_content text,
  similarity real,
  memory_id text,                -- the memory this decision stored or produced, if any
  reasoning text,                -- the verifier's or the guard's words
  review_status text not null default 'unreviewed'
    check (review_status in ('unreviewed', 'confirmed', 'reversed')),
  reviewed_at text,
  undo text                      -- JSON: the rows as they were, for reverse / unmerge
);
create index dedup_log_review on dedup_log (review_status, decision);
create index dedup_log_memory on dedup_log (memory_id);

create table dedup_runs (
  id integer primary key,
  started_at text not null,
  finished_at text,
  dry_run integer not null default 0,
  status text not null default 'running' check (status in ('running', 'finished', 'interrupted')),
  memories_before integer,
  memories_after integer,
  clusters integer,
  removed integer,
  removal_rate real,
  duration_s real,
  warnings text not null default '[]'
);
