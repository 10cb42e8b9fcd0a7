-- name: 007_hook_progress
-- Where a capture stopped inside one long transcript record: the characters of its text already handled (the
-- record is read again from there, in paragraph-aligned pieces), so a record of any size is captured over
-- successive runs.

alter table hook_offsets add column record_chars integer not null default 0;
