-- name: 017_session_text
-- Every session's text, searchable beside the curated memories: what the user typed, the assistant's text and
-- the compaction summaries, one row per turn (a long turn in paragraph-aligned pieces), secrets redacted, each
-- text once per domain (the same turn read again, or repeated, is not stored twice), linked to its session.
-- Search ranks these below the memories (recall/session_search.py); they are never the memories themselves.

create table session_text (
  id integer primary key,
  domain text not null,
  session_id text,                     -- the hook input's session id
  record_uuid text,                    -- the transcript record the text comes from
  role text not null check (role in ('user', 'assistant', 'summary')),
  piece integer not null default 0,    -- which paragraph-aligned piece of the record's text
  content text not null,               -- redacted
  content_hash text not null,          -- sha256 of the normalized content (as memories.content_hash)
  said_at text,                        -- the record's timestamp
  captured_at text not null,
  embedded integer not null default 0  -- 1 once its vector is in session_text_vectors
);

create unique index session_text_one_per_domain on session_text (domain, content_hash);
create index session_text_session on session_text (session_id, id);
create index session_text_pending on session_text (embedded, id) where embedded = 0;

create virtual table session_text_fts using fts5(content, content='session_text', content_rowid='id');
create trigger session_text_fts_insert after insert on session_text begin
  insert into session_text_fts (rowid, content) values (new.id, new.content);
end;
create trigger session_text_fts_delete after delete on session_text begin
  insert into session_text_fts (session_text_fts, rowid, content) values ('delete', old.id, old.content);
end;

-- How many session texts hold each word (the inverse document frequency of a query's words, as for memories).
create virtual table session_text_fts_vocab using fts5vocab(session_text_fts, 'row');

create virtual table session_text_vectors using vec0(
  text_id integer primary key,         -- = session_text.id
  domain text partition key,           -- partition key: a KNN scans only its project
  embedding float[384] distance_metric=l2  -- unit vectors: cosine similarity = 1 - distance * distance / 2
);
