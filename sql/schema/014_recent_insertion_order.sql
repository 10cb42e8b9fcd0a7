-- name: 014_recent_insertion_order
-- The recent window under a clock that jumps: the capacity prune keeps the newest rows by insertion order (id),
-- not by captured_at (after a jump back the newest rows have the oldest stamps and were pruned first); the age
-- prune also drops rows stamped more than a window after the new one (stamped before the clock went back: the
-- check ignores them, and they would count as recent again once the clock caught up).
-- The window and capacity: this process's override (subcog_setting()), else the settings table, else the default.
drop trigger recent_captures_prune;
create trigger recent_captures_prune after insert on recent_captures begin
  delete from recent_captures
  where abs(captured_at - new.captured_at) > coalesce(
    subcog_setting('dedup_time_window_secs'),
    (select cast(value as real) from settings where key = 'dedup_time_window_secs'), 300);
  delete from recent_captures
  where id in (
    select id from recent_captures
    order by id desc
    limit -1 offset coalesce(
      subcog_setting('dedup_cache_capacity'),
      (select cast(value as integer) from settings where key = 'dedup_cache_capacity'), 1000));
end;
