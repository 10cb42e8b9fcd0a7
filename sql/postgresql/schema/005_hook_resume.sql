-- name: 005_hook_resume
-- Issue 22 / 29.8 on PostgreSQL (as SQLite's 015): where a capture stopped inside one piece of a long record (how
-- many of its candidates were handled, the fingerprint of the last one), and a capture its budget stopped early
-- kept in hook_pending as deferred, for the next capture hook of any session to finish.

alter table hook_offsets add column piece_done integer not null default 0;
alter table hook_offsets add column piece_mark text;
alter table hook_pending add column deferred integer not null default 0;
