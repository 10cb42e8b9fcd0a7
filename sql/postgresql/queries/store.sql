-- The data layer's queries in PostgreSQL's words (subcog_store/postgres/adapter.py): a name here replaces the
-- SQLite query of that name in sql/queries/; every other query runs as written there, its :name parameters
-- rewritten. Parameters are psycopg's %(name)s, bound on the client.

-- name: begin_write
-- A write transaction (SQLite: BEGIN IMMEDIATE), in one round trip: READ COMMITTED, so each statement after the lock
-- sees what the previous writer committed; how long it waits for a lock (ms); then the store's write lock ("SUBC",
-- 1), held until the transaction ends: writers take turns, as on SQLite.
begin isolation level read committed;
select set_config('lock_timeout', %(ms)s::text, true);
select pg_advisory_xact_lock(1398096452, 1);

-- name: begin_scoped_write
-- A write transaction of some scopes only (a capture, a check's log row): as begin_write, but the store's lock is
-- taken shared, so writers of other scopes go on at once; the lock of each scope (lock_scope, sent after this)
-- makes the writers of one scope take turns. A writer of the whole store (begin_write) waits for them all.
begin isolation level read committed;
select set_config('lock_timeout', %(ms)s::text, true);
select pg_advisory_xact_lock_shared(1398096452, 1);

-- name: newest_seq_of_scopes
-- The newest memory row a check saw, as its re-check under the scope lock needs it when writers of other scopes
-- commit meanwhile: the smallest, over the scopes checked, of each scope's newest committed row. A scope's rows
-- are written by one writer at a time (its lock), so every row of a scope at or below it was committed when the
-- check read it; rows of other scopes numbered in between may still have been in flight.
select coalesce(min(newest), 0)
from (select coalesce((select max(m.seq) from memories m where m.namespace = n and m.domain = %(domain)s), 0)
        as newest
      from unnest(%(namespaces)s::text[]) as n) as scopes;

-- name: commit
-- The end of a transaction.
commit;

-- name: set_override
-- A session setting the recent window's trigger reads before the settings table ('' when there is none).
select set_config(%(key)s, %(value)s, false);

-- name: nothing
-- The text of a query with nothing to do on PostgreSQL (the sign bits below): the adapter sends none of them.
select 1 where false;

-- name: insert_vector
-- The searchable vector of a memory (a unit vector: the inner product is the cosine).
insert into memory_vectors (memory_seq, namespace, domain, embedding)
values (%(seq)s, %(namespace)s, %(domain)s, %(embedding)s);

-- name: insert_bits
-- Nothing to do: memory_bits follows memory_vectors by its triggers (migration 012).
select 1 where false;

-- name: delete_bits
-- Nothing to do: memory_bits rows go with their vector (on delete cascade).
select 1 where false;

-- name: move_bits
-- Nothing to do: memory_bits follows memory_vectors by its triggers.
select 1 where false;

-- name: log_bits
-- Nothing to do: the caches read vector_log (migration 011).
select 1 where false;

-- name: bits_mismatch
-- Nothing to do: the triggers keep memory_bits equal to its vectors.
select 1 where false;

-- name: park_vector
-- Keep a vector that leaves search, so an undo can put it back.
insert into retired_vectors (memory_seq, embedding)
values (%(seq)s, %(embedding)s)
on conflict (memory_seq) do update set embedding = excluded.embedding;

-- name: new_semantic_neighbours
-- The active memories of a scope written after %(after)s, scored against an embedding (the re-check of the
-- semantic tier under the write lock).
select m.id, m.content, -(v.embedding <#> %(embedding)s) as similarity
from memories m
join memory_vectors v on v.memory_seq = m.seq
where m.seq > %(after)s
  and m.status = 'active'
  and m.namespace = %(namespace)s
  and m.domain = %(domain)s;

-- name: find_text_neighbours
-- Candidates by full-text rank over the scope (the text tier, when there is no model). The query is the FTS5
-- form the text tier builds ("word" OR "word"), read as a tsquery ('word' | 'word').
select m.id, m.content, ts_rank(m.fts, query) as score
from memories m, to_tsquery('simple', replace(replace(%(query)s, '"', ''''), ' OR ', ' | ')) query
where m.fts @@ query
  and m.domain = %(domain)s
  and m.namespace = %(namespace)s
  and m.status = 'active'
order by score desc, m.seq
limit %(k)s;

-- name: search_text
-- A domain's memories matching the full-text query, best rank first (search's text side).
select m.id, ts_rank(m.fts, query) as score
from memories m, to_tsquery('simple', replace(replace(%(query)s, '"', ''''), ' OR ', ' | ')) query
where m.fts @@ query
  and m.domain = %(domain)s
  and (%(namespace)s::text is null or m.namespace = %(namespace)s)
  and (%(all)s::int = 1 or m.status = 'active')
order by score desc, m.seq
limit %(k)s;

-- name: term_document_counts
-- (term, memories holding it, memories in all) for each term of a JSON array (recall's word weights).
select
  t.term,
  (select count(*) from memories m where m.fts @@ to_tsquery('simple', quote_literal(t.term))) as documents,
  (select count(*) from memories) as total
from jsonb_array_elements_text(%(terms)s::jsonb) t (term);

-- name: search_knn_domain
-- The k nearest active memories of a domain, every namespace (search), exact.
select m.id, -(v.embedding <#> %(embedding)s) as similarity
from memory_vectors v
join memories m on m.seq = v.memory_seq
where v.domain = %(domain)s
  and m.status = 'active'
order by (v.embedding <#> %(embedding)s) + 0, m.seq
limit %(k)s;

-- name: outdated_candidates
-- The k nearest current memories of a domain, every namespace (the changed-facts-by-subject detector's
-- candidates), as SQLite's query of this name: the %(candidates)s nearest by sign bits (memory_bits, migration
-- 012) re-scored exactly, a top-k heuristic (dedup/outdated.py says how often it misses one of the exact k).
with query as (
  select subcog_sign_bits(%(embedding)s) as bits
), cand as (
  select memory_seq
  from (
    select b.memory_seq, bit_count(b.bits # query.bits) as hamming
    from memory_bits b cross join query
    where b.domain = %(domain)s
    offset 0
  ) counted
  order by hamming, memory_seq
  limit %(candidates)s
)
select m.id, m.namespace, m.content, m.created_at, -(v.embedding <#> %(embedding)s) as similarity
from cand
join memory_vectors v on v.memory_seq = cand.memory_seq
join memories m on m.seq = cand.memory_seq
where m.status = 'active'
  and m.successor_id is null
order by similarity desc, m.seq
limit %(k)s;

-- name: outdated_candidates_exact
-- The k nearest current memories of a domain, every namespace, exact (SQLite's fallback for a store without
-- sign bits; bench/bench_outdated_pool.py's baseline).
select m.id, m.namespace, m.content, m.created_at, -(v.embedding <#> %(embedding)s) as similarity
from memory_vectors v
join memories m on m.seq = v.memory_seq
where v.domain = %(domain)s
  and m.status = 'active'
  and m.successor_id is null
order by (v.embedding <#> %(embedding)s) + 0, m.seq
limit %(k)s;

-- name: memories_by_ids
-- The memories with the ids of a JSON array, any status.
select id, domain, namespace, content, content_hash, importance, tags, status, source, session_id, created_at,
  updated_at, successor_id, seq
from memories
where id in (select jsonb_array_elements_text(%(ids)s::jsonb));

-- name: search_candidates
-- What the ranking reads of the memories with the ids of a JSON array, any status.
select id, content, status, successor_id
from memories
where id in (select jsonb_array_elements_text(%(ids)s::jsonb));

-- name: vectors_of
-- The stored vectors of the memories with the ids of a JSON array: searchable, else parked (as SQLite's).
select m.id, coalesce(
    (select v.embedding from memory_vectors v where v.memory_seq = m.seq),
    (select r.embedding from retired_vectors r where r.memory_seq = m.seq)) as embedding
from memories m
where m.id in (select jsonb_array_elements_text(%(ids)s::jsonb));

-- name: purge_fts
-- Nothing to rebuild: the text index is a generated column of each row, gone with the row's old text.
select 1 where false;

-- name: active_without_vector
-- Active memories without a searchable vector.
select m.id
from memories m
where m.status = 'active'
  and not exists (select 1 from memory_vectors v where v.memory_seq = m.seq);

-- name: vector_without_active_memory
-- Searchable vectors whose memory is gone or retired.
select v.memory_seq
from memory_vectors v
left join memories m on m.seq = v.memory_seq
where m.seq is null or m.status <> 'active';

-- name: duplicate_active_hashes
-- Scopes holding the same content active twice (the unique index forbids it; doctor checks anyway).
select domain, namespace, content_hash, count(*) as n
from memories
where status = 'active'
group by domain, namespace, content_hash
having count(*) > 1;

-- name: log_recall_once
-- A deferred recall_log row, unless it is there already.
insert into recall_log (
  recalled_at, session_id, hook, domain, query_fingerprint, method, memory_ids, scores, tokens, reason, duration_ms)
select
  %(recalled_at)s, %(session_id)s, %(hook)s, %(domain)s, %(query_fingerprint)s, %(method)s, %(memory_ids)s,
  %(scores)s, %(tokens)s, %(reason)s, %(duration_ms)s
where not exists (
  select 1 from recall_log
  where session_id is not distinct from %(session_id)s and recalled_at = %(recalled_at)s and hook = %(hook)s
    and memory_ids = %(memory_ids)s);

-- name: injected_in_session
-- The memories handed to a session so far.
select distinct j.value as id
from recall_log r, jsonb_array_elements_text(r.memory_ids::jsonb) j (value)
where r.session_id = %(session_id)s;

-- name: record_compaction
-- A compaction of a session (once).
insert into session_compactions (session_id, compacted_at)
values (%(session_id)s, %(compacted_at)s)
on conflict do nothing;

-- name: add_decision_member
-- A memory a decision matched, merged, retired or outdated (once).
insert into decision_members (decision_id, memory_id, role)
values (%(decision_id)s, %(memory_id)s, %(role)s)
on conflict do nothing;

-- name: reinsert_recent_capture
-- A recent-capture row of an undo snapshot, with its original id.
insert into recent_captures (id, content_hash, memory_id, namespace, domain, captured_at)
values (%(id)s, %(content_hash)s, %(memory_id)s, %(namespace)s, %(domain)s, %(captured_at)s)
on conflict do nothing;

-- name: audit_decisions
-- The demo's view of the decision log.
select namespace, decision, round(similarity::numeric, 3)::double precision as sim,
  substr(new_content, 1, 60) as text
from v_decisions
order by id;

-- name: ui_decisions
-- A page of the decision log, newest first: the ones waiting for review, or every one.
select id, decided_at, domain, namespace, decision, policy, review_status, similarity, memory_id,
  matched_memory_id, new_content, matched_content, reasoning
from dedup_log
where (%(all)s::int = 1 or review_status = 'unreviewed')
  and (%(domain)s::text is null or domain = %(domain)s)
order by id desc
limit %(limit)s offset %(offset)s;

-- name: ui_sessions
-- Per session, the most recent first: what the hooks captured from it (memories, characters) and injected into
-- it (recalls, memories, tokens).
with captured as (
  select session_id, max(domain) as domain, count(*) as memories, sum(length(content)) as chars,
    max(created_at) as last_at
  from memories
  where session_id is not null
  group by session_id
),
injected as (
  select session_id, max(domain) as domain, count(*) as recalls, sum(jsonb_array_length(memory_ids::jsonb)) as memories,
    sum(tokens) as tokens, max(recalled_at) as last_at
  from recall_log
  where session_id is not null
  group by session_id
),
sessions as (
  select session_id from captured
  union
  select session_id from injected
)
select
  s.session_id,
  coalesce(c.domain, i.domain) as domain,
  coalesce(c.memories, 0) as captured,
  coalesce(c.chars, 0) as captured_chars,
  coalesce(i.recalls, 0) as recalls,
  coalesce(i.memories, 0) as injected,
  coalesce(i.tokens, 0) as injected_tokens,
  greatest(coalesce(c.last_at, ''), coalesce(i.last_at, '')) as last_at
from sessions s
left join captured c on c.session_id = s.session_id
left join injected i on i.session_id = s.session_id
order by last_at desc
limit %(limit)s;

-- name: namespaces_in_use
-- The namespaces (of those given, a JSON array) holding an active memory of the domain: a project-wide check
-- looks in them (one index probe each).
select n.value as namespace
from jsonb_array_elements_text(%(namespaces)s::jsonb) n (value)
where exists (
  select 1
  from memories as m
  where m.namespace = n.value
    and m.domain = %(domain)s
    and m.status = 'active'
);

-- name: known_empty_texts
-- As SQLite's (json_each): which of the fingerprints (a JSON array) name texts extraction found nothing in.
select fingerprint
from extraction_memo
where fingerprint in (select (jsonb_array_elements_text(%(fingerprints)s::jsonb))::bigint);

-- name: remember_empty_texts
-- As SQLite's (json_each): texts a capture extracted and found no candidate in.
insert into extraction_memo (fingerprint, seen_at)
select (jsonb_array_elements_text(%(fingerprints)s::jsonb))::bigint, %(now)s
on conflict (fingerprint) do nothing;
