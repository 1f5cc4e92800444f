-- Confidentiality levels as ranks, shared by the row-level security policies (80_security.sql) and
-- the per-level BM25 statistics (20_bm25_stats.sql), so a chunk is counted at exactly the level its
-- policy reads it at. No SET clause and pg_catalog only: the planner inlines both into the policies
-- and the statistics triggers.

-- Ranks 1 (public) .. 4 (restricted); anything else is null, which callers read as the most restricted.
create or replace function ragpg_level_rank(p_level text) returns integer
language sql immutable parallel safe
return array_position(array['public', 'internal', 'confidential', 'restricted'], p_level);

-- A chunk's level from its metadata: what cannot be read as a level is restricted (4).
create or replace function ragpg_chunk_level(p_metadata jsonb) returns smallint
language sql immutable parallel safe
return coalesce(ragpg_level_rank(p_metadata ->> 'confidentiality'), 4)::smallint;

-- Whether a reader of the levels `p_levels` (null: every level, the top clearance) may read a chunk: its
-- note's level and its own both among them, a level that cannot be read counting as restricted (as in
-- ragpg_chunk_level). The check Python's reads by path add beside row-level security
-- (rag.retrieval.chunks, rag.retrieval.documents).
create or replace function ragpg_chunk_readable(p_document_level text, p_metadata jsonb, p_levels text[])
returns boolean
language sql immutable parallel safe
return p_levels is null
    or (coalesce(p_document_level, 'restricted') = any(p_levels)
        and coalesce(p_metadata ->> 'confidentiality', 'restricted') = any(p_levels));
