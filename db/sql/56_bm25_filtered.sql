-- The bm25 index under a metadata filter. pg_textsearch filters after its top-k, so a filtered
-- search cannot simply ask it for candidate_count chunks; the SQL BM25 instead reads every posting
-- of the query's terms and checks the filter on every chunk it scored (at 1M chunks, 157-190 ms
-- p50 for a 1% or 10% folder, tag or date filter). Here the index is read deeper instead: about
-- candidate_count / (share of chunks the filter keeps) * ragpg_bm25_filtered_depth_factor() chunks
-- per vault, in index order; the filter is checked on those, and only the ones it keeps are scored
-- exactly from bm25_postings.
--
-- The answer is used only when it is provably the SQL BM25's answer: a vault whose index returned
-- fewer chunks than asked has no others that match the query's terms; for a vault whose index was
-- cut, no chunk below the cut can score more than the chunk ragpg_bm25_index_extra_candidates()
-- places above it (the same margin for pg_textsearch's float4 statistics as in the unfiltered
-- path). So when the candidate_count-th best kept chunk (ties included) scores above every such
-- bound, nothing unseen could enter the list; otherwise ragpg_lexical_scores takes the SQL BM25.
-- When the filter is so selective that the depth would pass ragpg_bm25_filtered_max_depth(), the
-- SQL BM25 is used at once.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- How many more index candidates than candidate_count / share to read: the share is sampled (about
-- a thousand chunks), and chunks near the cut must still leave room for the bound.
create or replace function ragpg_bm25_filtered_depth_factor() returns float8
language sql immutable parallel safe
return 1.5;

-- The deepest a filtered search reads the vaults' indexes (chunks, all vaults together) before it takes the SQL BM25:
-- each candidate costs a chunk lookup and a filter check (about 2 us), so 10,000 is ~20 ms.
create or replace function ragpg_bm25_filtered_max_depth() returns integer
language sql immutable parallel safe
return 10000;

-- Index candidates per vault for a filtered search, or null when the SQL BM25 should answer: no
-- usable index on every vault searched, a filter too selective for the index, or a query whose
-- terms occur in fewer chunks (p_postings, their chunk frequencies summed; null = unknown) than the
-- index would read: the SQL BM25 checks the filter on at most that many chunks.
-- p_listed_count: how many chunks the filter keeps, when a hybrid search listed them (their share is
-- then known, not sampled).
drop function if exists ragpg_bm25_filtered_depth(jsonb, jsonpath, jsonb, text[], integer, float8, float8, bigint);
create or replace function ragpg_bm25_filtered_depth(p_containment jsonb, p_predicate jsonpath, p_vars jsonb,
                                                     p_vaults text[], candidate_count integer, k1 float8, b float8,
                                                     p_postings bigint, p_listed_count bigint default null)
returns integer
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_share float8;
    v_depth float8;
    v_vaults bigint;
    v_vault_ids bigint[];
    v_total bigint;
begin
    if ragpg_lexical_backend(p_vaults, null, k1, b) <> 'pg_textsearch'
       -- the small vaults' shared index ranks with their pooled statistics: it proves no filtered
       -- answer (55_bm25_index.sql)
       or exists (select 1 from bm25_indexes i join vaults v on v.id = i.vault_id
                  where i.table_name = ragpg_bm25_shared_table() and (p_vaults is null or v.name = any(p_vaults)))
       or candidate_count * ragpg_bm25_filtered_depth_factor() + ragpg_bm25_index_extra_candidates() >= p_postings then
        return null;  -- (the depth is at least that, whatever the filter keeps)
    end if;
    -- the metadata part's share among the chunks of the vaults searched, sampled from their partitions
    -- only (a sample of every vault's took 125 ms with 1,000 vaults; each vault's index is read on its own)
    v_vault_ids := case when p_vaults is not null then ragpg_vault_ids(p_vaults) end;
    v_total := ragpg_vaults_chunk_count(v_vault_ids);
    if p_listed_count is not null then
        -- (as the sample does: never below one row's worth)
        v_share := greatest(p_listed_count, 1) / greatest(v_total, 1)::float8;
    else
        v_share := ragpg_filter_fraction(ragpg_filter_sql('c', 'metadata', p_containment, p_predicate, 5)
                                         || case when v_vault_ids is not null then ' and c.vault_id = any($9)' else '' end,
                                         p_containment, p_predicate, p_vars, p_vaults, v_vault_ids, 0, v_total);
    end if;
    v_depth := ceil(candidate_count * ragpg_bm25_filtered_depth_factor() / v_share) + ragpg_bm25_index_extra_candidates();
    -- every vault searched has its own index, read to that depth: the bound and the comparison with
    -- the postings hold for all of them together (100 vaults under a 1 % filter read 150,000
    -- candidates, 5 s, where the SQL BM25 reads the terms' postings once)
    v_vaults := coalesce(cardinality(p_vaults), (select count(*) from bm25_indexes));
    if v_depth * greatest(v_vaults, 1) > ragpg_bm25_filtered_max_depth()
       or v_depth * greatest(v_vaults, 1) >= p_postings then
        return null;
    end if;
    return v_depth::integer;
end
$$;

-- The filtered indexed lexical leg (see the top of this file). `complete` false means the index
-- could not prove the answer and the caller must take the SQL BM25; chunk_ids and scores are then
-- empty. Parameters as ragpg_lexical_scores_indexed, plus the depth per vault, the compiled
-- filter, and the chunks it keeps when a hybrid search listed them (45_filter_listing.sql): each
-- candidate is then looked up in that list instead of in the chunks table.
drop function if exists ragpg_lexical_scores_indexed_filtered(text, integer, integer, bigint[], regconfig[], text[],
                                                              float8[], float8[], float8, float8, jsonb, jsonpath, jsonb);
create or replace function ragpg_lexical_scores_indexed_filtered(
    query_text text, candidate_count integer, depth integer,
    vault_ids bigint[], cfgs regconfig[], lexemes text[], weights float8[], avgdls float8[], k1 float8, b float8,
    p_containment jsonb, p_predicate jsonpath, p_vars jsonb, p_listed bigint[] default null,
    out complete boolean, out chunk_ids bigint[], out scores float8[])
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
declare
    i record;
    v_kept bigint[];
    v_seen bigint;
    v_bound_id bigint;
    v_kept_all bigint[] := '{}';
    v_bound_ids bigint[] := '{}';
    v_scored_vaults bigint[] := '{}';  -- the vault of each chunk in v_kept_all || v_bound_ids, in that order
    v_bound_vaults bigint[] := '{}';
    v_cut float8;
    v_bound float8;
    v_filter text := ragpg_filter_sql('c', 'metadata', p_containment, p_predicate, 4);
    -- (a list counts only for a caller row-level security does not bind: 45_filter_listing.sql)
    v_listed bigint[] := case when not row_security_active('public.chunks'::regclass) then p_listed end;
begin
    complete := false;
    chunk_ids := '{}';
    scores := '{}';
    for i in select x.vault_id, x.table_name, x.index_name from bm25_indexes x
             where x.vault_id in (select distinct u from unnest(vault_ids) u) order by x.vault_id loop
        -- The index scan stays in the main plan (a subquery, not a CTE or array(select ...)), where
        -- pg_textsearch serves the order from the index; the filter reads each candidate's chunk
        -- row by primary key (row-level security applies there too): a scalar subquery with a
        -- limit, which the planner cannot turn into one hashed pass over every chunk as it may an
        -- exists() when thousands of candidates are expected. With a list, membership in it ($7,
        -- hashed: its values are known when the statement is planned).
        execute format(
            'select array_agg(s.chunk_id order by s.pos) filter (where s.kept), count(*),
                    max(s.chunk_id) filter (where s.pos = $3)
             from (select ix.chunk_id, ix.pos, %s as kept
                   from (select t.chunk_id, row_number() over () as pos
                         from (select t.chunk_id from %I t
                               order by t.search_text <@> to_bm25query($1, %L) limit $2) t) ix) s',
            case when v_listed is not null then 'ix.chunk_id = any($7)'
                 else format('(select 1 from chunks c where c.vault_id = %s and c.id = ix.chunk_id %s limit 1) is not null',
                             i.vault_id, v_filter) end,
            i.table_name, i.index_name)
            into v_kept, v_seen, v_bound_id
            using query_text, depth, greatest(depth - ragpg_bm25_index_extra_candidates(), 1),
                  p_containment, p_predicate, p_vars, v_listed;
        v_kept_all := v_kept_all || coalesce(v_kept, '{}');
        v_scored_vaults := v_scored_vaults || array_fill(i.vault_id, array[coalesce(cardinality(v_kept), 0)]);
        if v_seen >= depth then  -- cut: chunks below it are unseen
            v_bound_ids := v_bound_ids || v_bound_id;
            v_bound_vaults := v_bound_vaults || i.vault_id;
        end if;
    end loop;

    with scored as (
        select e.chunk_id as id, e.bm25_score as score
        from ragpg_bm25_exact_scores(v_kept_all || v_bound_ids, v_scored_vaults || v_bound_vaults, vault_ids, cfgs,
                                     lexemes, weights, avgdls, k1, b) e
    )
    select coalesce(array_agg(s.id order by s.score desc, s.id) filter (where s.id = any(v_kept_all)), '{}'),
           coalesce(array_agg(s.score order by s.score desc, s.id) filter (where s.id = any(v_kept_all)), '{}'),
           max(s.score) filter (where s.id = any(v_bound_ids))
    into chunk_ids, scores, v_bound
    from scored s;

    if cardinality(v_bound_ids) = 0 then  -- every index was read to its end: all matches were seen
        complete := true;
    elsif cardinality(scores) >= candidate_count then
        v_cut := scores[candidate_count];
        -- (a bound that could not be scored, e.g. its chunk deleted meanwhile, proves nothing)
        complete := v_bound is not null and v_cut > v_bound;
    end if;
    if not complete then
        chunk_ids := '{}';
        scores := '{}';
        return;
    end if;
    if cardinality(scores) > candidate_count then  -- keep ties at the cut, as the SQL BM25 does
        select array_agg(u.id order by u.ord), array_agg(u.s order by u.ord) into chunk_ids, scores
        from unnest(chunk_ids, scores) with ordinality as u(id, s, ord)
        where u.s >= scores[candidate_count];
    end if;
end
$$;
