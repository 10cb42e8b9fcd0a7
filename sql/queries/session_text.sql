-- name: insert_session_text
-- One turn (or piece of a turn) of a session; the same text already stored in the domain is left alone.
insert into session_text (domain, session_id, record_uuid, role, piece, content, content_hash, said_at, captured_at)
values (:domain, :session_id, :record_uuid, :role, :piece, :content, subcog_content_hash(:content), :said_at, :now)
on conflict (domain, content_hash) do nothing;

-- name: session_text_to_embed
-- Texts stored without their vector yet, oldest first.
select
  id,
  domain,
  content
from session_text
where embedded = 0
order by id
limit :limit;

-- name: session_text_waiting
-- How many texts of the store wait for their vector (embedded off the hook's path, capture/session_text.py).
select count(*) from session_text where embedded = 0;

-- name: insert_session_text_vector
-- The vector of a session text, in its domain's partition.
insert into session_text_vectors (text_id, domain, embedding)
values (:id, :domain, :embedding);

-- name: mark_session_text_embedded
-- Its vector is being stored (no change: another process stored it first).
update session_text
set embedded = 1
where id = :id
  and embedded = 0;

-- name: search_session_text_knn
-- The k session texts of a domain nearest to a query vector.
with knn as (
  select
    text_id,
    distance
  from session_text_vectors
  where embedding match :embedding
    and k = :k
    and domain = :domain
)
select
  t.id,
  1.0 - knn.distance * knn.distance / 2.0 as similarity
from knn
join session_text t on t.id = knn.text_id
order by knn.distance;

-- name: search_session_text_fts
-- BM25 over the session texts of a domain; lower is better.
select
  t.id,
  bm25(session_text_fts) as bm25
from session_text_fts
join session_text t on t.id = session_text_fts.rowid
where session_text_fts match :query
  and t.domain = :domain
order by bm25
limit :k;

-- name: session_text_by_ids
-- Session texts by id (a JSON array).
select
  id,
  domain,
  session_id,
  record_uuid,
  role,
  content,
  said_at
from session_text
where id in (select value from json_each(:ids));

-- name: count_session_text
-- How many session texts a domain holds (and how many wait for their vector).
select
  count(*) as texts,
  coalesce(sum(embedded = 0), 0) as pending
from session_text
where domain = :domain;

-- name: session_text_vector_of
-- The vector of a session text, when it has one.
select embedding
from session_text_vectors
where text_id = :id;

-- name: session_term_document_counts
-- How many session texts hold each of the words (a JSON array), and how many the index holds in all.
select
  t.value as term,
  coalesce((select v.doc from session_text_fts_vocab v where v.term = t.value), 0) as documents,
  (select count(*) from session_text) as total
from json_each(:terms) t;
