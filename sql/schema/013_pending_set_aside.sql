-- name: 013_pending_set_aside
-- A pending capture record that cannot be read (a torn payload, one that is not a hook input) is moved here by
-- the hook that meets it, so the records beside it are still redone; `doctor` reports what is here. Its
-- session's next capture reads the transcript from the saved offset all the same.

create table hook_pending_set_aside (
  session_id text not null,
  transcript_path text not null,
  payload text not null,           -- as it was found
  queued_at text not null,
  set_aside_at text not null,
  reason text not null,            -- why it could not be read
  primary key (session_id, transcript_path, queued_at)
) without rowid;
