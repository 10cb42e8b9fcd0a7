-- name: 007_parked_vectors
-- The data layer on PostgreSQL (subcog_store/postgres/adapter.py): parked vectors (retired_vectors) as pgvector's
-- `vector`, like the searchable ones, so both cross the wire alike (float32 bytes in Python, as SQLite's blobs).
-- Before this step nothing wrote retired_vectors on PostgreSQL: the table is made again, empty.

drop table retired_vectors;
create table retired_vectors (
  memory_seq bigint primary key references memories (seq) on delete cascade,
  embedding vector(384) not null
);
