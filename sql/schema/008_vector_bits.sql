-- name: 008_vector_bits
-- One sign bit per dimension of every searchable vector (48 bytes a memory). The semantic tier and batch
-- dedup find candidates by Hamming distance in this table and re-score them exactly with memory_vectors
-- (subcog_store/db/knn.py): a scan ~4x faster than the float one, with the float scan as the fallback
-- whenever the candidates cannot be shown to hold every neighbour at or above the floor.

create virtual table memory_bits using vec0(
  memory_seq integer primary key,      -- = memories.seq = memory_vectors.memory_seq
  namespace text partition key,
  domain text,
  bits bit[384],                       -- vec_quantize_binary(embedding)
  chunk_size=256
);

insert into memory_bits (memory_seq, namespace, domain, bits)
select memory_seq, namespace, domain, vec_quantize_binary(embedding)
from memory_vectors;
