-- name: 003_hook
-- What the pre-compact hook remembers between runs: where it stopped reading, and each run's report.

create table hook_offsets (
  session_id text not null,
  transcript_path text not null,
  byte_offset integer not null,
  updated_at text not null,
  primary key (session_id, transcript_path)
);

create table hook_runs (
  id integer primary key,
  session_id text,
  transcript_path text,
  trigger text,
  started_at text not null,
  finished_at text,
  status text not null,          -- ok | partial | failed | dry_run
  captured integer not null default 0,
  skipped integer not null default 0,
  redacted integer not null default 0,
  report text not null,          -- JSON: captured and skipped items, errors
  delivered_at text              -- when session-start handed the report to the model
);
create index hook_runs_session on hook_runs (session_id, id);
