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
