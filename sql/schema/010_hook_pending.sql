-- name: 010_hook_pending
-- A capture the warm worker answered for before it had finished (it finishes after the answer, see
-- hook/capture.py): recorded before the answer, removed in the transaction that saves the run's offset. One left
-- behind (the worker died mid-way) is redone from the saved offset by a later capture hook on this store.

create table hook_pending (
  session_id text not null,        -- '' when the hook input had none (as in hook_offsets)
  transcript_path text not null,
  payload text not null,           -- the hook input's session_id, transcript_path, cwd, trigger, hook_event_name
  queued_at text not null,
  primary key (session_id, transcript_path)
) without rowid;
