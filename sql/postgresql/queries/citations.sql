-- Issue 28's queries (sql/queries/citations.sql, memories.sql) in PostgreSQL's words, where SQLite's do not run
-- there (INSERT/UPDATE OR IGNORE, json_each): subcog_store/postgres/adapter.py runs these by name.

-- name: insert_citation
-- One thing a memory cites (never checked yet).
insert into citations (memory_id, domain, kind, path, name, value)
values (%(memory_id)s, %(domain)s, %(kind)s, %(path)s, %(name)s, %(value)s)
on conflict do nothing;

-- name: citations_at_paths
-- The citations of some files of a domain (a JSON array of paths), with their memory's status and commit.
select c.id, c.memory_id, c.kind, c.path, c.name, c.value, c.problem, m.status, mc.commit_sha
from citations c
join memories m on m.id = c.memory_id
left join memory_code mc on mc.memory_id = c.memory_id
where c.domain = %(domain)s
  and c.path in (select jsonb_array_elements_text(%(paths)s::jsonb))
order by c.id;

-- name: set_citation_path
-- A symbol found in another file of the project now: the citation follows it (unless the memory cites it there
-- already: SQLite's UPDATE OR IGNORE).
update citations c
set path = %(path)s
where c.id = %(id)s
  and not exists (
    select 1 from citations o
    where o.id <> c.id and o.memory_id = c.memory_id and o.kind = c.kind and o.path = %(path)s
      and coalesce(o.name, '') = coalesce(c.name, '') and coalesce(o.value, '') = coalesce(c.value, ''));

-- name: problems_of_memories
-- What no longer holds of some memories (a JSON array of ids), in citation order.
select memory_id, problem
from citations
where memory_id in (select jsonb_array_elements_text(%(ids)s::jsonb))
  and problem is not null
order by memory_id, id;

-- name: code_marks
-- The marks of some memories (a JSON array of ids): those the code no longer bears out.
select memory_id, outdated
from memory_code
where memory_id in (select jsonb_array_elements_text(%(ids)s::jsonb))
  and outdated is not null;

-- name: outdated_by_any
-- The active memories marked as outdated by one of these memories (a JSON array of ids).
select id
from memories
where status = 'active'
  and successor_id in (select jsonb_array_elements_text(%(ids)s::jsonb))
order by seq;

-- name: memories_citing_path
-- The current memories of a domain that cite a file (or a symbol or value in it), most citations of it first:
-- active, not outdated by a newer memory, not marked by the code (grouped by the primary key, as PostgreSQL
-- requires for the other columns).
select m.id, m.domain, m.namespace, m.content, m.content_hash, m.importance, m.tags, m.status, m.source,
  m.session_id, m.created_at, m.updated_at, m.successor_id, m.seq, count(*) as cites
from citations c
join memories m on m.id = c.memory_id
left join memory_code mc on mc.memory_id = c.memory_id
where c.domain = %(domain)s
  and c.path = %(path)s
  and m.status = 'active'
  and m.successor_id is null
  and mc.outdated is null
group by m.seq
order by cites desc, m.importance desc, m.created_at desc
limit %(limit)s;
