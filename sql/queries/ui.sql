-- name: ui_projects
-- Every project (domain) with its current, outdated and retired memories, the most recently written first.
select
  domain,
  sum(case when status = 'active' and successor_id is null then 1 else 0 end) as current,
  sum(case when status = 'active' and successor_id is not null then 1 else 0 end) as outdated,
  sum(case when status <> 'active' then 1 else 0 end) as retired,
  max(created_at) as latest
from memories
group by domain
order by latest desc;

-- name: ui_namespaces
-- A project's namespaces with their current, outdated and retired memories.
select
  namespace,
  sum(case when status = 'active' and successor_id is null then 1 else 0 end) as current,
  sum(case when status = 'active' and successor_id is not null then 1 else 0 end) as outdated,
  sum(case when status <> 'active' then 1 else 0 end) as retired
from memories
where domain = :domain
group by namespace
order by namespace;

-- name: ui_memories
-- A page of a project's memories (a namespace or all; current, outdated, retired or all), newest first.
select
  id,
  domain,
  namespace,
  content,
  content_hash,
  importance,
  tags,
  status,
  source,
  session_id,
  created_at,
  updated_at,
  successor_id,
  seq
from memories
where domain = :domain
  and (:namespace is null or namespace = :namespace)
  and (:state = 'all'
       or (:state = 'current' and status = 'active' and successor_id is null)
       or (:state = 'outdated' and status = 'active' and successor_id is not null)
       or (:state = 'retired' and status <> 'active'))
order by created_at desc, seq desc
limit :limit offset :offset;

-- name: ui_memory_decisions
-- Every decision that touched a memory (stored, matched, outdated, merged, retired, moved or forgot it), oldest
-- first: the memory's history.
select
  id,
  decided_at,
  decision,
  policy,
  review_status,
  similarity,
  memory_id,
  matched_memory_id,
  new_content,
  matched_content,
  reasoning
from dedup_log
where memory_id = :id
   or matched_memory_id = :id
   or id in (select decision_id from decision_members where memory_id = :id)
order by id;

-- name: ui_predecessors
-- The memories a memory replaced (outdated, superseded or merged into it).
select
  id,
  namespace,
  content,
  status,
  created_at
from memories
where successor_id = :id
order by created_at desc;

-- name: ui_decisions
-- A page of the decision log, newest first: the ones waiting for review, or every one.
select
  id,
  decided_at,
  domain,
  namespace,
  decision,
  policy,
  review_status,
  similarity,
  memory_id,
  matched_memory_id,
  new_content,
  matched_content,
  reasoning
from dedup_log
where (:all or review_status = 'unreviewed')
  and (:domain is null or domain = :domain)
order by id desc
limit :limit offset :offset;

-- name: ui_sessions
-- Per session, the most recent first: what the hooks captured from it (memories, characters) and injected into
-- it (recalls, memories, tokens).
with captured as (
  select
    session_id,
    max(domain) as domain,
    count(*) as memories,
    sum(length(content)) as chars,
    max(created_at) as last_at
  from memories
  where session_id is not null
  group by session_id
),
injected as (
  select
    session_id,
    max(domain) as domain,
    count(*) as recalls,
    sum(json_array_length(memory_ids)) as memories,
    sum(tokens) as tokens,
    max(recalled_at) as last_at
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
  max(coalesce(c.last_at, ''), coalesce(i.last_at, '')) as last_at
from sessions s
left join captured c on c.session_id = s.session_id
left join injected i on i.session_id = s.session_id
order by last_at desc
limit :limit;
