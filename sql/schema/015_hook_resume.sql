-- name: 015_hook_resume
-- Where a capture stopped inside one piece of a long record: how many of the piece's candidates it handled and the
-- fingerprint of the last one (checked before they are left out), so the next run goes on from there instead of
-- handling the whole piece again: each run makes progress, however little time a busy machine leaves it.
-- A capture its budget stopped early is kept in hook_pending as deferred: the next capture hook on the store (any
-- session) goes on with it, so what a transcript gives does not depend on how busy the machine was.

alter table hook_offsets add column piece_done integer not null default 0;
alter table hook_offsets add column piece_mark text;
alter table hook_pending add column deferred integer not null default 0;
