-- name: 001_store
-- The store: memories, their vectors, the recent-capture window, the check log, settings.
-- Needs the functions subcog_content_hash() (registered by subcog_store.db) and the vec0 module.

create table settings (
  key text primary key,          -- setting name, e.g. dedup_time_window_secs (env: SUBCOG_DEDUP_TIME_WINDOW_SECS)
  value text not null,
  updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
insert into settings (key, value) values
  ('dedup_time_window_secs', '300'),
  ('dedup_cache_capacity', '1000');

create table memories (
  id text not null unique check (length(id) = 12 and id not glob '*[^0-9a-f]*'),  -- 12 hex
  domain text not null default 'project',
  namespace text not null,
  content text not null,
  -- SHA256 hex of trim + Unicode lower case + whitespace runs folded to one space
  content_hash text generated always as (subcog_content_hash(content)) stored,
  importance real not null default 0.5 check (importance between 0.0 and 1.0),
  tags text not null default '[]' check (json_valid(tags) and json_type(tags) = 'array'),
  status text not null default 'active' check (status in ('active', 'superseded', 'merged', 'deleted')),
  source text,
  session_id text,
  created_at text not null,      -- ISO-8601 UTC
  updated_at text not null,
  successor_id text references memories (id),  -- the memory that superseded or absorbed this one
  seq integer primary key        -- stable rowid: the key of memory_vectors and memories_fts
);
-- At most one active memory per scope and normalized content: concurrent captures store a text once.
create unique index memories_one_active_hash on memories (domain, namespace, content_hash) where status = 'active';
create index memories_scope on memories (namespace, domain, status);

create virtual table memory_vectors using vec0(
  memory_seq integer primary key,      -- = memories.seq
  namespace text partition key,        -- partition key: a KNN scans only its namespace
  domain text,                         -- metadata column: filtered inside the KNN
  embedding float[384] distance_metric=l2,  -- unit vectors: cosine similarity = 1 - distance * distance / 2
  chunk_size=256
);

-- Vectors of memories that left search (superseded, merged), kept so an undo restores them exactly.
create table retired_vectors (
  memory_seq integer primary key references memories (seq) on delete cascade,
  embedding blob not null
);

create virtual table memories_fts using fts5(content, content='memories', content_rowid='seq');
create trigger memories_fts_insert after insert on memories begin
  insert into memories_fts (rowid, content) values (new.seq, new.content);
end;
create trigger memories_fts_delete after delete on memories begin
  insert into memories_fts (memories_fts, rowid, content) values ('delete', old.seq, old.content);
end;
create trigger memories_fts_update after update of content on memories begin
  insert into memories_fts (memories_fts, rowid, content) values ('delete', old.seq, old.content);
  insert into memories_fts (rowid, content) values (new.seq, new.content);
end;

create table recent_captures (
  id integer primary key,
  content_hash text not null,
  memory_id text,                -- the memory captured (null when recorded on its own)
  namespace text not null,
  domain text not null,
  captured_at real not null      -- unix seconds
);
create index recent_captures_lookup on recent_captures (content_hash, namespace, domain, captured_at);
create index recent_captures_time on recent_captures (captured_at);
-- Keep only the window (dedup_time_window_secs) and at most dedup_cache_capacity rows.
create trigger recent_captures_prune after insert on recent_captures begin
  delete from recent_captures
  where captured_at < new.captured_at - coalesce(
    (select cast(value as real) from settings where key = 'dedup_time_window_secs'), 300);
  delete from recent_captures
  where id in (
    select id from recent_captures
    order by captured_at desc, id desc
    limit -1 offset coalesce(
      (select cast(value as integer) from settings where key = 'dedup_cache_capacity'), 1000));
end;

-- One row per duplicate check: the counters of the original design are views over it.
create table dedup_checks (
  id integer primary key,
  checked_at text not null,
  domain text not null,
  namespace text not null,
  result text not null check (result in ('duplicate', 'unique', 'disabled')),
  reason text check (reason in ('exact_match', 'semantic_similar', 'recent_capture')),
  method text,                   -- hash | embedding | text | recent: what matched
  similarity real,
  matched_memory_id text,
  duration_ms real not null,
  exact_ms real,
  semantic_ms real,
  recent_ms real,
  tiers_run text not null default '[]',     -- JSON list, in order
  tier_errors text not null default '{}',   -- JSON object: tier -> error, for tiers that failed open
  content_fingerprint text not null         -- first 16 hex of the content hash, never the content
);
create index dedup_checks_scope on dedup_checks (namespace, result);
