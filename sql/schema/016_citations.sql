-- name: 016_citations
-- What a memory cites in its project's code (files, symbols, values), the commit it was cited at, and whether
-- the code still bears it out (subcog_store/code/: mentions, resolve, verify; db/citations.py owns the queries).

-- One row per cited memory: where and when it was cited, and its mark.
create table memory_code (
  memory_id text primary key references memories (id) on delete cascade,
  domain text not null,
  root text,                     -- the project's directory when cited
  commit_sha text,               -- the repository's HEAD when cited (null: not a git repository, or no commit)
  cited_at text not null,        -- ISO-8601 UTC
  cited_by text not null,        -- capture | cite (the `cite` command, for a memory stored before)
  outdated text,                 -- null: the code bears it out (as last checked); else why it may be outdated
  outdated_at text,
  confirmed_at text              -- the user said it is still true (the claims the code contradicted were dropped)
);
create index memory_code_outdated on memory_code (domain, outdated_at) where outdated is not null;

create table citations (
  id integer primary key,
  memory_id text not null references memories (id) on delete cascade,
  domain text not null,
  kind text not null check (kind in ('file', 'symbol', 'value')),
  path text not null,            -- the file, relative to the project's root, '/'-separated
  name text,                     -- symbol: its name; value: the key
  value text,                    -- value: what the memory says the key is
  problem text,                  -- null: the file bears it out (as last checked); else what no longer holds
  checked_size integer,          -- the file when this citation was last checked: size, mtime (ns), and when
  checked_mtime_ns integer,      -- (unix ns); null: never checked. A file modified within 2 s of a check is
  checked_ns integer             -- read again next time (a same-size edit in the same clock tick)
);
create index citations_path on citations (domain, path, checked_size, checked_mtime_ns, checked_ns);
create index citations_memory on citations (memory_id);
create unique index citations_one on citations (memory_id, kind, path, coalesce(name, ''), coalesce(value, ''));

-- Every citation with its memory's URN and the commit it was cited at.
create view v_citations as
select
  'subcog://' || m.domain || '/' || m.namespace || '/' || m.id as urn,
  m.status,
  c.kind,
  c.path,
  c.name,
  c.value,
  c.problem,
  mc.commit_sha,
  mc.cited_at
from citations c
join memories m on m.id = c.memory_id
left join memory_code mc on mc.memory_id = c.memory_id;

-- Active memories the code no longer bears out, for review (`subcog-store verify`).
create view v_outdated_by_code as
select
  'subcog://' || m.domain || '/' || m.namespace || '/' || m.id as urn,
  m.domain,
  m.namespace,
  m.content,
  mc.outdated as reason,
  mc.outdated_at,
  mc.commit_sha
from memory_code mc
join memories m on m.id = mc.memory_id
where mc.outdated is not null
  and m.status = 'active';
