-- name: 006_recall
-- Recall: what each hook handed the model (recall_log), and when each session was compacted (the memories it
-- captured before that become recallable in the session itself).

create table recall_log (
  id integer primary key,
  recalled_at text not null,
  session_id text,
  hook text not null,            -- session-start:startup | session-start:compact | user-prompt-submit | mcp-search | ...
  domain text not null,
  query_fingerprint text,        -- first 16 hex of the query's hash, never the query
  method text,                   -- hybrid | text | index
  memory_ids text not null default '[]' check (json_valid(memory_ids)),  -- what was injected, in order
  scores text not null default '[]' check (json_valid(scores)),
  tokens integer not null default 0,   -- injected, estimated (4 characters a token)
  reason text,                   -- why nothing (or less) was injected: abstained, budget, no model, error
  duration_ms real
);
create index recall_log_session on recall_log (session_id, id);

create table session_compactions (
  session_id text not null,
  compacted_at text not null,    -- ISO-8601: memories of the session created up to here are recallable in it
  primary key (session_id, compacted_at)
);

-- Each recall with its memories' URNs; tokens per session.
create view v_recall as
select
  r.id,
  r.recalled_at,
  r.session_id,
  r.hook,
  r.domain,
  r.method,
  json_array_length(r.memory_ids) as memories,
  r.tokens,
  r.reason,
  (select group_concat('subcog://' || m.domain || '/' || m.namespace || '/' || m.id, ' ')
   from json_each(r.memory_ids) j join memories m on m.id = j.value) as urns,
  r.duration_ms
from recall_log r;

create view v_recall_sessions as
select
  session_id,
  count(*) as recalls,
  sum(json_array_length(memory_ids)) as memories,
  sum(tokens) as tokens
from recall_log
group by session_id;
