-- name: 004_faults
-- Issue 29 on PostgreSQL (as SQLite's 013 and 014): a pending-capture record that cannot be read is set aside
-- here (doctor reports it); the recent window's capacity prune keeps the newest rows by insertion order (id),
-- not by a clock that can jump back, and the age prune drops rows stamped more than a window ahead too.

create table hook_pending_set_aside (
  session_id text not null,
  transcript_path text not null,
  payload text not null,           -- as it was found
  queued_at text not null,
  set_aside_at text not null,
  reason text not null,            -- why it could not be read
  primary key (session_id, transcript_path, queued_at)
);

create or replace function recent_captures_prune() returns trigger
language plpgsql as $$
begin
  delete from recent_captures
  where abs(captured_at - new.captured_at) > coalesce(subcog_setting('dedup_time_window_secs'), 300);
  delete from recent_captures
  where id in (
    select id from recent_captures
    order by id desc
    offset coalesce(subcog_setting('dedup_cache_capacity'), 1000)::bigint);
  return null;
end;
$$;
