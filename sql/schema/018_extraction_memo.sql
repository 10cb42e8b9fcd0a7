-- name: 018_extraction_memo
-- The transcript texts a capture extracted and found no candidate in, by a fingerprint of what decides that
-- answer: the text, its kind, the probability floor and the extraction code itself (extraction/memo.py). A capture
-- that reads such a text again (a resumed session's copied history, import-history over transcripts the hooks
-- read, a long record's piece read again) does not extract it again: it would find nothing again. A 64-bit number
-- a text, never the text. Rows a capture added more than a window ago are pruned by the capture that adds rows.

create table extraction_memo (
  fingerprint integer primary key,   -- extraction/memo.py: blake2b of (code, floor, kind, text), 8 bytes, signed
  seen_at integer not null           -- when a capture found the text empty (unix seconds, the store's clock)
);
create index extraction_memo_age on extraction_memo (seen_at);
