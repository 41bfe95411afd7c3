-- No query reads tools by vector similarity (the selectors keep the vectors in memory), and the HNSW index made
-- storing vectors 30 times slower: 10,000 vector updates took 24.3 s with it, 0.79 s without.
DROP INDEX IF EXISTS tools_embedding_hnsw;
