-- name: 013_extraction_memo
-- The transcript texts a capture extracted and found no candidate in, by fingerprint (as SQLite's 018): a capture
-- that reads one again does not extract it again. A 64-bit number a text, never the text; pruned by age.

create table extraction_memo (
  fingerprint bigint primary key,
  seen_at bigint not null
);
create index extraction_memo_age on extraction_memo (seen_at);
