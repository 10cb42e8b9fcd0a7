-- name: 011_vector_log
-- Which vectors entered which scope, in commit order per scope: a long-lived process (the warm worker, the MCP
-- server) keeps a large scope's sign bits in memory (subcog_store/db/bitcache.py) and brings them up to date from
-- here before each semantic check. One row per vector written to memory_vectors (a new one, a rewritten one, one
-- moved to another domain); removals are not logged (a superset of candidates stays correct: each is re-scored
-- against the memory as it is). Revisions come from one sequence, so they interleave across scopes in any order;
-- within a scope they follow commit order, because the trigger takes the scope's write lock (lock_scope, which
-- every writer of the scope already holds: then it costs nothing) before it takes a revision, and holds it until
-- commit. A cache that has read a scope's revisions up to R has every committed one: any revision of the scope
-- not yet committed is above R. A scope keeps its revisions of the last 16,384 or so (a cache further behind
-- loads again): a writer whose revision is a multiple of 1,024 prunes its own scope's older rows, so writers of
-- different scopes never wait for each other here.

create table vector_log (
  rev bigint generated always as identity primary key,
  memory_seq bigint not null,
  namespace text not null,
  domain text not null
);

create index vector_log_scope on vector_log (namespace, domain, rev);

create function vector_log_write() returns trigger
language plpgsql as $$
declare
  taken bigint;
begin
  perform pg_advisory_xact_lock(1398096453, hashtext(new.domain || '/' || new.namespace));
  insert into vector_log (memory_seq, namespace, domain)
  values (new.memory_seq, new.namespace, new.domain)
  returning rev into taken;
  if taken % 1024 = 0 then
    delete from vector_log
    where namespace = new.namespace and domain = new.domain and rev <= taken - 16384;
  end if;
  return null;
end;
$$;

create trigger vector_log_insert after insert on memory_vectors
for each row execute function vector_log_write();

create trigger vector_log_move after update of namespace, domain, embedding on memory_vectors
for each row execute function vector_log_write();

insert into vector_log (memory_seq, namespace, domain)
select memory_seq, namespace, domain
from memory_vectors
order by memory_seq;
