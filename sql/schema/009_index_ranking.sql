-- name: 009_index_ranking
-- The session-start index reads a domain's active memories most important first, then newest
-- (queries/search.sql top_memories): this index hands them over in that order, so the query reads its
-- 200 rows instead of scanning and sorting every memory of the domain (10 ms at 10k memories).

create index memories_ranking on memories (domain, status, importance desc, created_at desc);
