-- name: 009_scope_writers
-- Writers of different (domain, namespace) scopes at once (postgres/adapter.py: a capture holds its scope's lock,
-- the store's shared). A check's re-check reads each scope's newest row (newest_seq_of_scopes): an index makes
-- that one probe instead of a scan of the scope. The recent window is pruned by one writer at a time: another
-- capture committing meanwhile skips it (the next one prunes), so two prunes never lock each other's rows.

create index memories_scope_seq on memories (namespace, domain, seq);

create or replace function recent_captures_prune() returns trigger
language plpgsql as $$
begin
  if not pg_try_advisory_xact_lock(1398096454, 0) then
    return null;
  end if;
  delete from recent_captures
  where captured_at < new.captured_at - coalesce(subcog_setting('dedup_time_window_secs'), 300);
  delete from recent_captures
  where id in (
    select id from recent_captures
    order by captured_at desc, id desc
    offset coalesce(subcog_setting('dedup_cache_capacity'), 1000)::bigint);
  return null;
end;
$$;
