-- name: 003_knn_index
-- The semantic check's candidates: one HNSW index (pgvector, inner product of unit vectors) per namespace, so a
-- namespace's search never wades through another's vectors. subcog_store/postgres/knn.py reads the nearest
-- CANDIDATES of them and scans the scope exactly whenever they cannot show that every neighbour at or above the
-- floor is among them. A namespace without an index here is scanned exactly.
create index memory_vectors_hnsw_decisions on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'decisions';
create index memory_vectors_hnsw_patterns on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'patterns';
create index memory_vectors_hnsw_learnings on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'learnings';
create index memory_vectors_hnsw_context on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'context';
create index memory_vectors_hnsw_tech_debt on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'tech-debt';
create index memory_vectors_hnsw_blockers on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'blockers';
create index memory_vectors_hnsw_progress on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'progress';
create index memory_vectors_hnsw_apis on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'apis';
create index memory_vectors_hnsw_config on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'config';
create index memory_vectors_hnsw_security on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'security';
create index memory_vectors_hnsw_performance on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'performance';
create index memory_vectors_hnsw_testing on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'testing';
create index memory_vectors_hnsw_help on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'help';
create index memory_vectors_hnsw_prompts on memory_vectors using hnsw (embedding vector_ip_ops)
  with (m = 16, ef_construction = 64) where namespace = 'prompts';
