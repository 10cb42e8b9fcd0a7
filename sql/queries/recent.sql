-- name: find_recent_capture
-- Captures of this content in the scope stamped since the window opened (recent tier), by the lookup index
-- alone: the caller orders them by insertion (id), usually one row, cheaper than a sort here (no ORDER BY: SQLite
-- would build a temporary b-tree for it), and ignores those stamped after now (a clock that went back).
select
  id,
  memory_id,
  captured_at
from recent_captures
where content_hash = :content_hash
  and namespace = :namespace
  and domain = :domain
  and captured_at >= :since;

-- name: insert_recent_capture
-- Remember a capture for the recent window; the trigger prunes by age and capacity.
insert into recent_captures (content_hash, memory_id, namespace, domain, captured_at)
values (:content_hash, :memory_id, :namespace, :domain, :captured_at);

-- name: recent_captures_of
-- Recent-capture rows that point at a memory (undo data of a hard delete).
select
  id,
  content_hash,
  memory_id,
  namespace,
  domain,
  captured_at
from recent_captures
where memory_id = :id;

-- name: delete_recent_captures_of
-- Drop the recent-capture rows that point at a memory.
delete from recent_captures
where memory_id = :id;

-- name: reinsert_recent_capture
-- Put a recent-capture row back with its original id.
insert or ignore into recent_captures (id, content_hash, memory_id, namespace, domain, captured_at)
values (:id, :content_hash, :memory_id, :namespace, :domain, :captured_at);

-- name: move_recent_captures
-- Recent-capture rows follow their memory to another domain.
update recent_captures
set domain = :domain
where memory_id = :id;
