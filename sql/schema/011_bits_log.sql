-- name: 011_bits_log
-- Which sign bits entered which scope, in commit order: a long-lived process (the warm worker, the MCP
-- server) keeps a large scope's sign bits in memory (subcog_store/db/bitcache.py) and brings them up to date
-- from here before each semantic check. One row per row written to memory_bits (a new vector, a rewritten
-- one, a move to another domain); removals are not logged (a superset of candidates stays correct: each is
-- re-scored against the memory as it is). The last 16,384 revisions are kept; a cache further behind
-- rebuilds. Nothing but the caches reads it.

create table bits_log (
  rev integer primary key,          -- commit order: revisions are taken under the write lock
  memory_seq integer not null,
  namespace text not null,
  domain text not null
);

create index bits_log_scope on bits_log (namespace, domain, rev);

create trigger bits_log_prune after insert on bits_log
when new.rev % 1024 = 0
begin
  delete from bits_log where rev <= new.rev - 16384;
end;
