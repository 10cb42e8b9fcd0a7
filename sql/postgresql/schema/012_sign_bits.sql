-- name: 012_sign_bits
-- One sign bit per dimension of every searchable vector (48 bytes a memory), as SQLite's memory_bits (008): a
-- check in a process that keeps no sign bits in memory (a hook without the warm worker, a command) finds its
-- candidates by Hamming distance in this narrow table and re-scores them exactly with memory_vectors, with the
-- same passes and proofs as on SQLite (subcog_store/db/knn.py: find_semantic_candidates), and the exact scan of
-- the scope whenever the candidates cannot be shown to hold every neighbour at or above the floor. Comparing
-- every vector of a large scope exactly costs pgvector's per-row call (~300 ms at 100,000); counting 384 bits
-- of a row costs a fraction of it. Kept by triggers on memory_vectors (every writer, `copy` included).

create function subcog_sign_bits(v vector) returns bit(384)
language sql immutable parallel safe
as $$
  -- bit i is set when dimension i is positive (an explicit cast pads a shorter vector with zeros)
  select coalesce(string_agg(case when x > 0 then '1' else '0' end, '' order by i), '')::bit(384)
  from unnest(v::real[]) with ordinality as t(x, i)
$$;

create table memory_bits (
  memory_seq bigint primary key references memory_vectors (memory_seq) on delete cascade,
  namespace text not null,
  domain text not null,
  bits bit(384) not null
);

create index memory_bits_scope on memory_bits (namespace, domain);

create function memory_bits_write() returns trigger
language plpgsql as $$
begin
  insert into memory_bits (memory_seq, namespace, domain, bits)
  values (new.memory_seq, new.namespace, new.domain, subcog_sign_bits(new.embedding))
  on conflict (memory_seq) do update
    set namespace = excluded.namespace, domain = excluded.domain, bits = excluded.bits;
  return null;
end;
$$;

create trigger memory_bits_insert after insert on memory_vectors
for each row execute function memory_bits_write();

create trigger memory_bits_move after update of namespace, domain, embedding on memory_vectors
for each row execute function memory_bits_write();

insert into memory_bits (memory_seq, namespace, domain, bits)
select memory_seq, namespace, domain, subcog_sign_bits(embedding)
from memory_vectors;
