-- name: delete_citations_of
-- A memory's citations, before they are written again.
delete from citations
where memory_id = :memory_id;

-- name: insert_citation
-- One thing a memory cites (never checked yet).
insert or ignore into citations (memory_id, domain, kind, path, name, value)
values (:memory_id, :domain, :kind, :path, :name, :value);

-- name: upsert_memory_code
-- Where and when a memory was cited (its mark is kept: the next check sets it).
insert into memory_code (memory_id, domain, root, commit_sha, cited_at, cited_by)
values (:memory_id, :domain, :root, :commit_sha, :cited_at, :cited_by)
on conflict (memory_id) do update set
  domain = excluded.domain,
  root = excluded.root,
  commit_sha = excluded.commit_sha,
  cited_at = excluded.cited_at,
  cited_by = excluded.cited_by;

-- name: cited_file_states
-- Each cited file of a domain with every state it was last checked in (one row per file and state; the
-- covering index citations_path answers it without reading the table).
select
  path,
  checked_size,
  checked_mtime_ns,
  checked_ns
from citations
where domain = :domain
group by path, checked_size, checked_mtime_ns, checked_ns;

-- name: citations_at_paths
-- The citations of some files of a domain (a JSON array of paths), with their memory's status and commit.
select
  c.id,
  c.memory_id,
  c.kind,
  c.path,
  c.name,
  c.value,
  c.problem,
  m.status,
  mc.commit_sha
from citations c
join memories m on m.id = c.memory_id
left join memory_code mc on mc.memory_id = c.memory_id
where c.domain = :domain
  and c.path in (select value from json_each(:paths))
order by c.id;

-- name: set_citation_checked
-- A citation checked against its file as it is now.
update citations
set problem = :problem,
    checked_size = :checked_size,
    checked_mtime_ns = :checked_mtime_ns,
    checked_ns = :checked_ns
where id = :id;

-- name: set_citation_path
-- A symbol found in another file of the project now: the citation follows it.
update or ignore citations
set path = :path
where id = :id;

-- name: problems_of_memories
-- What no longer holds of some memories (a JSON array of ids), in citation order.
select
  memory_id,
  problem
from citations
where memory_id in (select value from json_each(:ids))
  and problem is not null
order by memory_id, id;

-- name: set_outdated
-- A memory's mark: why the code no longer bears it out (null: it does). outdated_at is when it was first marked.
update memory_code
set outdated = :outdated,
    outdated_at = case
      when :outdated is null then null
      when outdated is null then :now
      else outdated_at
    end
where memory_id = :memory_id;

-- name: code_marks
-- The marks of some memories (a JSON array of ids): those the code no longer bears out.
select
  memory_id,
  outdated
from memory_code
where memory_id in (select value from json_each(:ids))
  and outdated is not null;

-- name: outdated_memories
-- The active memories of a domain the code no longer bears out, most recently marked first.
select
  m.id,
  m.namespace,
  m.content,
  mc.outdated,
  mc.outdated_at,
  mc.commit_sha
from memory_code mc
join memories m on m.id = mc.memory_id
where mc.domain = :domain
  and mc.outdated is not null
  and m.status = 'active'
order by mc.outdated_at desc, m.id
limit :limit;

-- name: memories_citing_path
-- The current memories of a domain that cite a file (or a symbol or value in it), most citations of it first:
-- active, not outdated by a newer memory, not marked by the code.
select
  m.id,
  m.domain,
  m.namespace,
  m.content,
  m.content_hash,
  m.importance,
  m.tags,
  m.status,
  m.source,
  m.session_id,
  m.created_at,
  m.updated_at,
  m.successor_id,
  m.seq,
  count(*) as cites
from citations c
join memories m on m.id = c.memory_id
left join memory_code mc on mc.memory_id = c.memory_id
where c.domain = :domain
  and c.path = :path
  and m.status = 'active'
  and m.successor_id is null
  and mc.outdated is null
group by m.id
order by cites desc, m.importance desc, m.created_at desc
limit :limit;

-- name: citations_of_memory
-- What one memory cites.
select
  kind,
  path,
  name,
  value,
  problem,
  checked_ns
from citations
where memory_id = :memory_id
order by id;

-- name: memory_code_of
-- Where and when one memory was cited, and its mark.
select
  root,
  commit_sha,
  cited_at,
  cited_by,
  outdated,
  outdated_at,
  confirmed_at
from memory_code
where memory_id = :memory_id;

-- name: memories_to_cite
-- The active memories of a domain without citations yet (:all = 1: every active one), oldest first.
select
  m.id,
  m.content,
  m.created_at
from memories m
where m.domain = :domain
  and m.status = 'active'
  and (:all = 1 or not exists (select 1 from memory_code mc where mc.memory_id = m.id))
order by m.created_at, m.seq
limit :limit;

-- name: drop_failing_citations
-- The user says a memory is still true: the claims the code contradicts are no longer checked.
delete from citations
where memory_id = :memory_id
  and problem is not null;

-- name: confirm_memory_code
-- ... and its mark is cleared.
update memory_code
set outdated = null,
    outdated_at = null,
    confirmed_at = :now
where memory_id = :memory_id;

-- name: move_citations_domain
-- A memory moved to another domain (move-domain): its citations go with it.
update citations
set domain = :domain
where memory_id = :memory_id;

-- name: move_memory_code_domain
-- ... and its citing record.
update memory_code
set domain = :domain
where memory_id = :memory_id;
