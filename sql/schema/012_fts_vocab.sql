-- How many memories hold each word of the full-text index (fts5vocab, read-only, no data of its own): the
-- inverse document frequency recall weighs a prompt's words by (recall/search.py, "coverage").
create virtual table memories_fts_vocab using fts5vocab(memories_fts, 'row');
