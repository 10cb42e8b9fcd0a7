-- name: 010_exact_check
-- The semantic check scans its scope exactly (subcog_store/postgres/knn.py): pgvector's HNSW graph, which the
-- check read before, missed 29 of 848 near neighbours >= 0.85 at 100,000 real vectors without its candidates
-- showing it (bench/RESULTS.md), and a check must find every neighbour at or above the guard's floor. Nothing
-- reads the HNSW indexes now, and every insert paid for them.
drop index memory_vectors_hnsw_decisions;
drop index memory_vectors_hnsw_patterns;
drop index memory_vectors_hnsw_learnings;
drop index memory_vectors_hnsw_context;
drop index memory_vectors_hnsw_tech_debt;
drop index memory_vectors_hnsw_blockers;
drop index memory_vectors_hnsw_progress;
drop index memory_vectors_hnsw_apis;
drop index memory_vectors_hnsw_config;
drop index memory_vectors_hnsw_security;
drop index memory_vectors_hnsw_performance;
drop index memory_vectors_hnsw_testing;
drop index memory_vectors_hnsw_help;
drop index memory_vectors_hnsw_prompts;
