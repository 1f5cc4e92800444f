-- Vector retrieval for registered embedding models.
--
-- Generic implementations (ragpg_match_*_impl) take the model's table, dims and label; for each
-- model ragpg_create_model_functions() generates thin, named wrappers (format/%I/%L) that pin
-- search_path and the HNSW settings:
--   match_native_chunks_<name>(query_embedding, similarity_threshold, match_count, filter, ...)
--   match_langchain_chunks_<name>(query_embedding, similarity_threshold, match_count, filter)
--   match_hybrid_chunks_<name>(...), match_hybrid_multi_chunks_<name>(...)   (60_hybrid.sql)
--   match_folders_<name>(query_embedding, vault_ids, match_count)            (70_folders.sql)
-- `similarity` is 1 - cosine distance (higher is better).
--
-- The impl functions set hnsw.ef_search with set_config(..., true); the wrappers carry
-- `set hnsw.ef_search` (and, with pgvector >= 0.8, `set hnsw.iterative_scan = relaxed_order`)
-- clauses, so every such change is undone when the wrapper returns. Call the wrappers.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- 0.8.1 -> 801; null without the extension.
create or replace function ragpg_pgvector_version_num() returns integer
language sql stable parallel safe
set search_path = pg_catalog, pg_temp
return (
    select split_part(extversion, '.', 1)::integer * 10000
           + coalesce(nullif(substring(split_part(extversion, '.', 2) from '^\d+'), ''), '0')::integer * 100
           + coalesce(nullif(substring(split_part(extversion, '.', 3) from '^\d+'), ''), '0')::integer
    from pg_extension where extname = 'vector'
);

create or replace function ragpg_check_match_count(p_match_count integer, p_name text default 'match_count')
returns void
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_match_count is null or p_match_count < 1 or p_match_count > 1000 then
        raise exception using errcode = '22023',
            message = format('%s must be between 1 and 1000, got %s', p_name, coalesce(p_match_count::text, 'null'));
    end if;
end
$$;

-- Validates a vector query: dimensions, a usable vector, threshold and count.
-- (pgvector itself refuses NaN and infinite elements when a vector value is built.)
create or replace function ragpg_check_vector_query(p_query vector, p_dims integer, p_model text,
                                         p_threshold float8, p_match_count integer)
returns void
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if p_query is null then
        raise exception using errcode = '22023', message = 'query embedding is null';
    end if;
    if vector_dims(p_query) <> p_dims then
        raise exception using errcode = '22023',
            message = format('query embedding has %s dimensions, model %s expects %s', vector_dims(p_query), p_model, p_dims);
    end if;
    if vector_norm(p_query) = 0 then
        raise exception using errcode = '22023', message = 'query embedding is all zeros (cosine similarity is undefined)';
    end if;
    if p_threshold is null or p_threshold < -1 or p_threshold > 1 or p_threshold = 'NaN'::float8 then
        raise exception using errcode = '22023',
            message = format('similarity_threshold must be between -1 and 1, got %s', coalesce(p_threshold::text, 'null'));
    end if;
    perform ragpg_check_match_count(p_match_count);
end
$$;

-- The largest share of the chunks a filter may keep and still be scanned exactly (when it also keeps at
-- most exact_scan_max_rows). Above it HNSW answers with ef_search raised to ef_search / share (at most
-- 3.3x). Measured on the two-vault BEIR database (SciFact 59 %, NFCorpus 41 % of the chunks): the exact
-- scan cost compute_context 8 and 4 ms more per question than HNSW, for the same nDCG@10.
create or replace function ragpg_exact_scan_max_fraction() returns float8
language sql immutable parallel safe
return 0.3;

-- A filter that keeps at most this share of the chunks searched would have HNSW search at an ef_search
-- near pgvector's cap of 1000 (ef_search / share), where the walk costs about what an exact scan of
-- ragpg_exact_scan_wide_factor() x exact_scan_max_rows rows does: such a filter is scanned exactly up to
-- that many rows. Measured at 1M chunks over 1,000 vaults, inside the largest vault (131k chunks, hash
-- vectors), a 10 % folder/tag/date filter (~13,000 rows): exact scan 35 ms at recall 1.0 (12 ms to list
-- the rows, 22 ms to score them); the HNSW walk 28-35 ms at ef 200-1000 with recall 0.9, and 47-60 ms
-- as the planner ran it (a parallel nested loop).
create or replace function ragpg_exact_scan_wide_max_fraction() returns float8
language sql immutable parallel safe
return 0.15;

create or replace function ragpg_exact_scan_wide_factor() returns integer
language sql immutable parallel safe
return 2;

-- HNSW's recall at a fixed ef_search falls as the index grows (local model's geometry, m 16, recall@10
-- at ef_search 100: 0.95 at 100k vectors; at 1M 0.73 with ef_construction 64 and 0.80 with 128, where
-- ef_search 800 gives 0.94 and 0.96): ef_search grows by this many per million rows of the model's
-- table (its planner estimate), never below the caller's ef_search, at most pgvector's 1000.
create or replace function ragpg_hnsw_ef_per_million_rows() returns integer
language sql immutable parallel safe
return 800;

-- The ef_search an unfiltered search of p_table runs at: the caller's, or more for a large index.
create or replace function ragpg_hnsw_ef_search(p_table text, p_ef_search integer, p_match_count integer)
returns integer
language sql stable parallel safe
set search_path = public, pg_catalog, pg_temp
return least(1000, greatest(p_ef_search, p_match_count,
                            ceil(greatest(coalesce((select c.reltuples from pg_class c
                                                    where c.oid = to_regclass(quote_ident(p_table))), 0), 0)
                                 * ragpg_hnsw_ef_per_million_rows() / 1e6)::integer));

-- The vaults a search with this filter reads: those it names, or every vault (the caller's policy on
-- vaults applies). Joins to the chunks test `c.vault_id = any(...)` with it, so a search naming a
-- vault reads that vault's partitions only (pruned when the executor starts, 12_vault_partitions.sql).
-- (A string body, not a SQL-standard one: the migrations' downgrade drops functions one by one and
-- must not find this one already gone with ragpg_compile_filter.)
create or replace function ragpg_filter_vault_scope(filter jsonb) returns bigint[]
language sql stable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
    -- (without a top-level "vault" key the filter names none: not compiled again, its scorer did)
    select ragpg_vault_ids(case when filter is null or jsonb_typeof(filter) <> 'object' or not filter ? 'vault'
                                then null
                                else (select f.vaults from ragpg_compile_filter(filter) f) end)
$$;

-- The fields of the given chunks in the given vaults, each chunk found by its key (vault, id): one
-- vault's partition alone for one vault, the vaults' partitions (pruned when the plan runs) for several.
-- (A lookup by id alone has no index to use.)
create or replace function ragpg_chunk_rows(p_chunk_ids bigint[], p_vault_ids bigint[])
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb)
language plpgsql stable rows 10
set search_path = public, pg_catalog, pg_temp
-- (set for each call below: with many vaults, the generic plan Postgres tries at a session's sixth
-- call covers every vault's partitions: with 1,000 vaults ~450 ms to make, in the middle of a search)
set plan_cache_mode = auto
as $$
#variable_conflict use_column
begin
    perform set_config('plan_cache_mode', ragpg_plan_cache_mode_for(p_vault_ids), true);
    if cardinality(p_vault_ids) = 1 then
        -- one vault (a scoped search, or a database of one vault): static SQL, planned for the
        -- vault's partition alone
        return query
        select c.id, v.name, d.source_path, c.ordinal, c.heading_path, c.content, c.metadata
        from chunks c
        join documents d on d.vault_id = c.vault_id and d.id = c.document_id
        join vaults v on v.id = c.vault_id
        where c.vault_id = p_vault_ids[1] and c.id = any(p_chunk_ids);
        return;
    end if;
    -- several: one cached plan over the partitions (a bounded number, 12_vault_partitions.sql), the
    -- arrays behind scalar subqueries so the planner estimates none of their values, each chunk's
    -- document read by its key. Planned per call with the vaults as constants (the layout of a
    -- partition per vault wanted that), a search naming no vault over 1,000 vaults spent 16 ms
    -- planning (each value estimated) and read every document to hash-join them: 9-30 ms a call
    -- at 100k chunks, where this takes ~1 ms.
    perform set_config('plan_cache_mode', 'force_generic_plan', true);
    return query
    select c.id, v.name, d.source_path, c.ordinal, c.heading_path, c.content, c.metadata
    from chunks c
    cross join lateral (select d.source_path from documents d
                        where d.vault_id = c.vault_id and d.id = c.document_id
                        offset 0) d  -- (a lookup per chunk, never a join over every document)
    join vaults v on v.id = c.vault_id
    where c.vault_id = any((select coalesce(p_vault_ids, '{}'))::bigint[])
      and c.id = any((select coalesce(p_chunk_ids, '{}'))::bigint[]);
end
$$;

-- The exact nearest of the given chunks (ragpg_vector_scores' exact scan): every one at least as
-- similar as the match_count-th, at or above the threshold (ties at the cut are kept for the caller's
-- tie-break). cosine_distance() rather than <=>, so the scan is never turned into an index scan;
-- each distance is computed once, in the CTE. The vectors are read by id: joining the chunks and
-- testing the filter again on them was a third of a 10k-row scan.
-- p_vault_ids (null: every vault) are the vaults the chunks are in: their partitions are the ones read.
-- The ids reach the plan behind a scalar subquery ((select $4)::bigint[]): a constant array makes the
-- planner estimate each of its values against the column's statistics, 4 ms of planning for the 13k
-- ids of a 10 % filter at 1M chunks, for the same index scan (the executor sorts the array itself).
drop function if exists ragpg_vector_exact_scores(text, vector, integer, float8, bigint[]);
create or replace function ragpg_vector_exact_scores(p_table text, query_embedding vector, match_count integer,
                                                     similarity_threshold float8, p_chunk_ids bigint[],
                                                     p_vault_ids bigint[])
returns table (chunk_id bigint, similarity float8)
language plpgsql stable rows 60
set search_path = public, pg_catalog, pg_temp
as $$
begin
    -- As in ragpg_vector_scores: a role bound by row-level security scores only the ids of chunks it reads.
    return query execute format(
        'with d as materialized (
             select e.chunk_id, cosine_distance(e.embedding, $1) as distance
             from %I e %s where e.chunk_id = any((select $4)::bigint[]) %s)
         select d.chunk_id, 1 - d.distance
         from d
         where 1 - d.distance >= $3
           and d.distance <= (select max(x.distance)
                              from (select d2.distance from d d2 where 1 - d2.distance >= $3
                                    order by d2.distance limit $2) x)',
        p_table, case when row_security_active('public.chunks'::regclass)
                      then 'join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id' else '' end,
        case when p_vault_ids is not null then 'and e.vault_id = any($5)' else '' end)
        using query_embedding, match_count, similarity_threshold, coalesce(p_chunk_ids, '{}'), p_vault_ids;
end
$$;

-- Nearest chunks of one model's embedding table, ids and similarities only (the hybrid functions
-- fuse these lists and fetch each chunk's fields once, at the end), with filter-aware planning:
--   * no filter: HNSW index scan (ef_search raised to match_count, and for a large index by
--     ragpg_hnsw_ef_search);
--   * a filter matching at most exact_scan_max_rows chunks (a count that stops one row past that
--     bound, through the filter's indexes): exact scan over just those chunks, returning every
--     chunk at least as similar as the match_count-th (ties at the cut are kept for the caller's
--     tie-break);
--   * a broader filter: HNSW with iterative scans (pgvector >= 0.8, set by the wrapper), sized to
--     the filter. It keeps a fraction s of the chunks (exactly known for a vault restriction, else
--     estimated from a fixed block sample of the table), so the filtered top-k lies among about the
--     unfiltered top-(k/s): ef_search is raised to ef_search/s (at most pgvector's 1000) so the scan
--     is as accurate that deep as an unfiltered one is at ef_search, and hnsw.max_scan_tuples to
--     10*ef/s so it can get that far. Measured at 100k chunks, 10% folder filter, hash vectors:
--     recall 0.50 at ef_search 100, 0.89 at 1000 (unfiltered at 100: 0.45). When ef_search/s is
--     beyond 1000, the exact-scan bound grows by that shortfall (see below). Should the scan still
--     stop short of match_count rows, the exact scan over the matching rows answers instead (unless
--     exact_scan_max_rows is 0, which means "never scan exactly").
-- p_listed / p_listed_vaults: the filter's chunks as ragpg_filter_listing listed them for this search
-- (45_filter_listing.sql), or null to list them here; used only by a caller row-level security does
-- not bind.
drop function if exists ragpg_vector_scores(text, integer, text, vector, float8, integer, jsonb, integer, integer);
create or replace function ragpg_vector_scores(p_table text, p_dims integer, p_model text,
                                    query_embedding vector, similarity_threshold float8, match_count integer,
                                    filter jsonb, exact_scan_max_rows integer, ef_search integer,
                                    p_listed bigint[] default null, p_listed_vaults bigint[] default null)
returns table (chunk_id bigint, similarity float8)
language plpgsql stable rows 60
set search_path = public, pg_catalog, pg_temp
as $$
declare
    f record;
    v_where text;
    v_filtered boolean;
    v_rows bigint;
    v_total bigint;
    v_vault_ids bigint[];
    v_fraction float8;
    v_ef integer := ragpg_hnsw_ef_search(p_table, ef_search, match_count);
    v_ids bigint[];
    v_distances float8[];
    v_matched bigint[];
    v_matched_vaults bigint[];  -- the vaults the matched chunks are in: the exact scan reads their partitions
    v_exact boolean;
    v_limit bigint;  -- the most matching rows an exact scan reads (exact_scan_max_rows, wider for a narrow share)
begin
    perform ragpg_check_vector_query(query_embedding, p_dims, p_model, similarity_threshold, match_count);
    if exact_scan_max_rows is null or exact_scan_max_rows < 0 then
        raise exception using errcode = '22023',
            message = format('exact_scan_max_rows must be >= 0, got %s', coalesce(exact_scan_max_rows::text, 'null'));
    end if;
    if ef_search is null or ef_search < 1 or ef_search > 1000 then
        raise exception using errcode = '22023',
            message = format('ef_search must be between 1 and 1000, got %s', coalesce(ef_search::text, 'null'));
    end if;
    select * into f from ragpg_compile_filter(filter);
    perform ragpg_check_vault_names(f.vaults);
    v_filtered := f.containment <> '{}'::jsonb or f.predicate is not null or f.vaults is not null;
    -- Parameters of every query below: $1 query, $2 match_count, $3 threshold, $4 row limit,
    -- $5 containment, $6 predicate, $7 vars, $8 vault names, $9 their ids, $10 sample percentage.
    -- v_where holds only fixed text. Vaults are matched by id, as a value the planner can see:
    -- behind a subquery it guessed a few rows, scanned exactly and took 20 ms where the HNSW index
    -- takes 3.
    v_vault_ids := case when f.vaults is not null then ragpg_vault_ids(f.vaults) end;
    v_where := ragpg_filter_sql('c', 'metadata', f.containment, f.predicate, 5)
               || case when f.vaults is not null then ' and c.vault_id = any($9)' else '' end;
    perform set_config('hnsw.ef_search', v_ef::text, true);

    if v_filtered and f.containment = '{}'::jsonb and f.predicate is null then
        -- Only a vault restriction (what compute_context sends): the per-vault chunk counts tell
        -- how many chunks it keeps, and one that keeps every chunk is no filter at all.
        select coalesce(sum(s.chunk_count) filter (where v.name = any(f.vaults)), 0), coalesce(sum(s.chunk_count), 0)
        into v_rows, v_total
        from bm25_vault_stats s join vaults v on v.id = s.vault_id;
        if v_rows = v_total then
            v_filtered := false;
            v_where := '';
        elsif exists (select from unnest(v_vault_ids) as u (id) where not ragpg_vault_has_own_partition(u.id)) then
            -- A named vault shares the default partition with every other small vault
            -- (12_vault_partitions.sql): its graph is theirs too, so its rows are searched as a
            -- filter's, exactly when they are few (a small vault always is: it has at most the
            -- exact-scan bound), on the graph with an iterative scan otherwise.
            v_limit := ragpg_exact_scan_limit(v_total, exact_scan_max_rows);
            v_fraction := v_rows::float8 / greatest(v_total, 1);
        else
            -- A large vault has its own partition and HNSW graph (12_vault_partitions.sql): the search
            -- reads the named vaults' graphs only, as an unfiltered search of a table of their size
            -- (ef_search sized by the largest), and nothing else filters it but the caller's policy.
            select coalesce(max(ragpg_hnsw_ef_search(ragpg_vault_partition_name(p_table, u.id), ef_search,
                                                     match_count)), v_ef)
            into v_ef from unnest(v_vault_ids) as u (id);
            perform set_config('hnsw.ef_search', v_ef::text, true);
            return query execute format(
                'select nn.chunk_id, 1 - nn.distance
                 from (select e.chunk_id, e.embedding <=> $1 as distance
                       from %I e join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id
                       where e.vault_id = any($9) and c.vault_id = any($9)
                       order by e.embedding <=> $1
                       limit $2) nn
                 where 1 - nn.distance >= $3', p_table)
                using query_embedding, match_count, similarity_threshold, null::bigint,
                      f.containment, f.predicate, f.vars, f.vaults, v_vault_ids;
            return;
        end if;
    elsif v_filtered then
        -- the chunks the search reads: the named vaults' (their partitions), or every vault's
        v_total := greatest(ragpg_vaults_chunk_count(v_vault_ids), 1);
        v_limit := ragpg_exact_scan_limit(v_total, exact_scan_max_rows);
        -- The matching chunks' ids, one past the bound: how many there are, and, when few, the rows
        -- the exact scan reads without visiting the chunks again (the hybrid search's list, when it
        -- made one).
        if p_listed is not null and not row_security_active('public.chunks'::regclass) then
            v_matched := p_listed;
            v_matched_vaults := p_listed_vaults;
        else
            select l.ids, l.vault_ids into v_matched, v_matched_vaults
            from ragpg_filter_list_ids(v_where, f.containment, f.predicate, f.vars, f.vaults, v_vault_ids,
                                       v_limit + 1) l;
        end if;
        v_rows := cardinality(v_matched);
    end if;

    if v_filtered then
        -- A filter that keeps a large share of the chunks (a vault of two) is cheap and exact enough on
        -- HNSW (ef_search / share); scanning its rows exactly would read thousands of vectors.
        v_exact := (v_rows <= exact_scan_max_rows
                    and (v_fraction is null or v_fraction < ragpg_exact_scan_max_fraction()))
                   or (v_rows <= v_limit and v_rows <= v_total * ragpg_exact_scan_wide_max_fraction());
        if not v_exact and v_fraction is null then
            v_fraction := ragpg_filter_fraction(v_where, f.containment, f.predicate, f.vars, f.vaults, v_vault_ids,
                                                (v_limit + 1) / v_total::float8, v_total);
        end if;
        -- A filter narrower than ef_search/1000 needs the index searched deeper than pgvector's cap
        -- of 1000, and the index path loses recall the narrower it gets (1M chunks, a 1% folder
        -- filter, 10.2k rows: recall 0.56 in 59 ms at ef 1000, where an exact scan of 10k rows took
        -- 52 ms at 1.0). The exact scan's bound grows by the factor the depth falls short.
        v_exact := v_exact or (exact_scan_max_rows > 0 and ef_search / v_fraction > 1000
                               and v_fraction * v_total <= exact_scan_max_rows * (ef_search / v_fraction) / 1000);
        if not v_exact then
            v_ef := least(1000, greatest(v_ef, ceil(ef_search / v_fraction)::integer));
            perform set_config('hnsw.ef_search', v_ef::text, true);
            perform set_config('hnsw.max_scan_tuples',
                               least(2147483647::float8, greatest(20000, ceil(10 * v_ef / v_fraction)))::bigint::text, true);
            -- Unsorted first (relaxed_order returns nearly, not exactly, by distance), sorted by the caller.
            execute format(
                'select array_agg(nn.chunk_id), array_agg(nn.distance)
                 from (select e.chunk_id, e.embedding <=> $1 as distance
                       from %I e join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id where true %s
                       order by e.embedding <=> $1
                       limit $2) nn', p_table,
                v_where || case when f.vaults is not null then ' and e.vault_id = any($9)' else '' end)
                into v_ids, v_distances
                using query_embedding, match_count, similarity_threshold, null::bigint,
                      f.containment, f.predicate, f.vars, f.vaults, v_vault_ids;
            -- should the scan stop short of match_count rows, the exact scan answers
            if coalesce(cardinality(v_ids), 0) >= match_count or exact_scan_max_rows = 0 then
                return query select u.id, 1 - u.distance
                             from unnest(v_ids, v_distances) as u (id, distance)
                             where 1 - u.distance >= similarity_threshold;
                return;
            end if;
        end if;
        -- The exact scan reads the vectors of the matching chunks' ids (all of them, when the first
        -- statement stopped at the bound); a vault restriction lists its chunks by vault.
        if v_matched is null or cardinality(v_matched) > v_limit then
            select l.ids, l.vault_ids into v_matched, v_matched_vaults
            from ragpg_filter_list_ids(v_where, f.containment, f.predicate, f.vars, f.vaults, v_vault_ids, null) l;
        end if;
        return query select * from ragpg_vector_exact_scores(p_table, query_embedding, match_count,
                                                             similarity_threshold, v_matched,
                                                             coalesce(v_matched_vaults, '{}'));
        return;
    end if;

    if exists (select from pg_inherits h join pg_class c on c.oid = h.inhrelid
               where h.inhparent = to_regclass(quote_ident(p_table)) and c.relname <> ragpg_shared_partition_name(p_table)) then
        -- large vaults' graphs beside the shared one: each searched on its own (12_vault_partitions.sql)
        return query select * from ragpg_vector_scores_by_graph(p_table, query_embedding, similarity_threshold,
                                                                match_count, ef_search);
        return;
    end if;
    -- A role bound by row-level security reads a vector only with its chunk: the server's reader sees every
    -- embedding row (its policy leaves the check to this join), the owner skips the join.
    return query execute format(
        'select nn.chunk_id, 1 - nn.distance
         from (select e.chunk_id, e.embedding <=> $1 as distance
               from %I e %s
               order by e.embedding <=> $1
               limit $2) nn
         where 1 - nn.distance >= $3',
        p_table, case when row_security_active('public.chunks'::regclass)
                      then 'join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id' else '' end)
        using query_embedding, match_count, similarity_threshold;
end
$$;

-- An unfiltered search over the shared graph and every large vault's (12_vault_partitions.sql): each
-- graph searched on its own with ef_search sized by its own rows (ragpg_hnsw_ef_search), then the
-- nearest match_count of them all. In one statement over the parent, every graph was walked at the
-- ef_search the whole table's size asks for (800 at 1M chunks), small graphs as deep as the largest.
-- Each statement names its graph's vaults as values (a vault's id; for the shared partition, every
-- large vault's id left out), so the plan opens that partition alone.
create or replace function ragpg_vector_scores_by_graph(p_table text, query_embedding vector,
                                                        similarity_threshold float8, match_count integer,
                                                        ef_search integer)
returns table (chunk_id bigint, similarity float8)
language plpgsql stable rows 60
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_own bigint[];
    v_id bigint;
    v_ids bigint[] := '{}';
    v_distances float8[] := '{}';
    v_more_ids bigint[];
    v_more_distances float8[];
    v_join text := case when row_security_active('public.chunks'::regclass)
                        then 'join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id and %s' else '' end;
begin
    select coalesce(array_agg(substring(c.relname from '_p([0-9]+)$')::bigint), '{}') into v_own
    from pg_inherits h join pg_class c on c.oid = h.inhrelid
    where h.inhparent = to_regclass(quote_ident(p_table)) and c.relname <> ragpg_shared_partition_name(p_table);
    -- (null: the shared partition, every large vault left out)
    foreach v_id in array v_own || array[null::bigint] loop
        perform set_config('hnsw.ef_search', ragpg_hnsw_ef_search(
            case when v_id is null then ragpg_shared_partition_name(p_table) else ragpg_vault_partition_name(p_table, v_id) end,
            ef_search, match_count)::text, true);
        execute format(
            'select array_agg(nn.chunk_id), array_agg(nn.distance)
             from (select e.chunk_id, e.embedding <=> $1 as distance
                   from %I e %s
                   where %s
                   order by e.embedding <=> $1
                   limit $2) nn',
            p_table,
            format(v_join, case when v_id is null then 'c.vault_id <> all($4)' else 'c.vault_id = $3' end),
            case when v_id is null then 'e.vault_id <> all($4)' else 'e.vault_id = $3' end)
            into v_more_ids, v_more_distances
            using query_embedding, match_count, v_id, v_own;
        v_ids := v_ids || coalesce(v_more_ids, '{}');
        v_distances := v_distances || coalesce(v_more_distances, '{}');
    end loop;
    return query
    select u.id, 1 - u.distance
    from unnest(v_ids, v_distances) as u (id, distance)
    where 1 - u.distance >= similarity_threshold
    order by u.distance, u.id
    limit match_count;
end
$$;

-- The fraction of chunks a compiled filter keeps (p_where as ragpg_filter_sql built it, on alias
-- c), estimated from a block sample of about 1000 chunks: ragpg_vector_scores sizes ef_search as
-- ef_search / fraction, capped at 1000, so only fractions above ef_search/1000 (0.1 at the default
-- 100) need telling apart, and 1000 rows hold ~100 matches of such a filter. REPEATABLE: the same
-- filter on the same table gets the same estimate, hence the same plan and results. Never below
-- p_at_least (what the caller's count already proved) nor one sampled row's worth.
-- p_total: how many chunks the filter's vaults hold (the sample is drawn from their partitions only).
drop function if exists ragpg_filter_fraction(text, jsonb, jsonpath, jsonb, text[], bigint[], float8);
create or replace function ragpg_filter_fraction(p_where text, p_containment jsonb, p_predicate jsonpath,
                                      p_vars jsonb, p_vaults text[], p_vault_ids bigint[], p_at_least float8,
                                      p_total float8)
returns float8
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_total float8 := greatest(p_total, 1);
    v_hits bigint;
    v_seen bigint;
begin
    -- (the vaults in the sample's own condition: planned with them as values, only their partitions
    -- are sampled; in the filter alone, every vault's were, 125 ms with 1,000 vaults, and the share
    -- came out relative to every vault's chunks)
    execute 'select count(*) filter (where true' || p_where || '), count(*)
             from chunks c tablesample system ($10) repeatable (0)'
             || case when p_vault_ids is not null then ' where c.vault_id = any($9)' else '' end
        into v_hits, v_seen
        using null::vector, null::integer, null::float8, null::bigint,
              p_containment, p_predicate, p_vars, p_vaults, p_vault_ids,
              least(100, 100 * 1000 / greatest(v_total, 1))::float4;
    return least(1, greatest(v_hits::float8 / greatest(v_seen, 1), 1::float8 / greatest(v_seen, 1), p_at_least));
end
$$;

-- Nearest chunks with their fields (the implementation of match_native_chunks_<model>).
-- Ties: source_path, chunk_ordinal, chunk_id.
create or replace function ragpg_match_native_impl(p_table text, p_dims integer, p_model text,
                                        query_embedding vector, similarity_threshold float8, match_count integer,
                                        filter jsonb, exact_scan_max_rows integer, ef_search integer)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, similarity float8)
language sql stable rows 10
set search_path = public, pg_catalog, pg_temp
-- a string body, not begin atomic: the migrations' downgrade drops functions one by one and
-- must not find this one already gone with its scorer
as $$
    with sc as materialized (
        select * from ragpg_vector_scores(p_table, p_dims, p_model, query_embedding, similarity_threshold,
                                          match_count, filter, exact_scan_max_rows, ef_search)
    )
    select c.chunk_id, c.vault, c.source_path, c.chunk_ordinal, c.heading_path, c.content, c.metadata, sc.similarity
    from sc
    join ragpg_chunk_rows((select array_agg(s2.chunk_id) from sc s2), ragpg_filter_vault_scope(filter)) c
      on c.chunk_id = sc.chunk_id
    order by sc.similarity desc, c.source_path, c.chunk_ordinal, c.chunk_id
    -- (never limit 0: the scorer, which rejects a bad match_count, would not even be called)
    limit greatest(match_count, 1)
$$;

-- A stable bigint for a LangChain row id (LangChain ids are strings).
create or replace function ragpg_langchain_chunk_id(p_id text) returns bigint
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return ('x' || left(md5(p_id), 16))::bit(64)::bigint;

-- The same contract over the tables LangChain's PGVector store writes
-- (langchain_pg_collection(uuid, name, cmetadata), langchain_pg_embedding(id, collection_id,
-- embedding, document, cmetadata)): vault = collection name, source_path = cmetadata.source (or the
-- row id), chunk_ordinal = cmetadata.chunk_ordinal (or 0), heading_path = cmetadata.heading_path
-- (or ''), content = document, chunk_id = ragpg_langchain_chunk_id(id). The filter applies to
-- cmetadata; its top-level "vault" to the collection name. Only rows of the model's dimension are
-- searched. Without LangChain's tables the result is empty.
create or replace function ragpg_match_langchain_impl(p_dims integer, p_model text, query_embedding vector,
                                           similarity_threshold float8, match_count integer, filter jsonb)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, similarity float8)
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
declare
    f record;
    v_where text;
begin
    perform ragpg_check_vector_query(query_embedding, p_dims, p_model, similarity_threshold, match_count);
    select * into f from ragpg_compile_filter(filter);
    if to_regclass('langchain_pg_embedding') is null or to_regclass('langchain_pg_collection') is null then
        return;
    end if;
    v_where := ragpg_filter_sql('e', 'cmetadata', f.containment, f.predicate, 5)
               || case when f.vaults is not null then ' and col.name = any($8)' else '' end;
    return query execute
        'select ragpg_langchain_chunk_id(e.id::text), col.name::text,
                coalesce(e.cmetadata ->> ''source'', e.id::text),
                case when e.cmetadata ->> ''chunk_ordinal'' ~ ''^[0-9]{1,9}$''
                     then (e.cmetadata ->> ''chunk_ordinal'')::integer else 0 end,
                coalesce(e.cmetadata ->> ''heading_path'', ''''),
                coalesce(e.document::text, ''''),
                coalesce(e.cmetadata::jsonb, ''{}''::jsonb),
                1 - (e.embedding <=> $1)
         from langchain_pg_embedding e
         join langchain_pg_collection col on col.uuid = e.collection_id
         where e.embedding is not null and vector_dims(e.embedding) = $4
           and 1 - (e.embedding <=> $1) >= $3' || v_where || '
         order by e.embedding <=> $1, 3, 4, e.id
         limit $2'
        using query_embedding, match_count, similarity_threshold, p_dims,
              f.containment, f.predicate, f.vars, f.vaults;
end
$$;

-- Creates or replaces one generated function (p_definition: everything after `create function`).
-- Versions with other argument types are dropped, so no ambiguous overload is left behind; a
-- version whose result columns or parameter names changed is dropped and recreated.
create or replace function ragpg_define_function(p_name text, p_arg_types text, p_definition text)
returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    r record;
    v_target regprocedure := to_regprocedure(format('%I(%s)', p_name, p_arg_types));
begin
    for r in
        select p.oid::regprocedure as fn
        from pg_proc p
        where p.pronamespace = 'public'::regnamespace and p.proname = p_name
          and p.oid is distinct from v_target::oid
    loop
        execute format('drop function %s', r.fn);
    end loop;
    begin
        execute 'create or replace function ' || p_definition;
    exception when invalid_function_definition then
        execute format('drop function %I(%s)', p_name, p_arg_types);
        execute 'create function ' || p_definition;
    end;
end
$$;

-- Generates the per-model functions (re-run by ragpg_refresh_model_functions() after every upgrade).
create or replace function ragpg_create_model_functions(m embedding_models) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_label text := m.provider || '/' || m.model;
    v_set text := 'set hnsw.ef_search = 100';
    v_chunk_cols text := 'chunk_id bigint, vault text, source_path text, chunk_ordinal integer, '
                         'heading_path text, content text, metadata jsonb';
begin
    if coalesce(ragpg_pgvector_version_num(), 0) >= 800 then
        -- max_scan_tuples: ragpg_vector_scores raises it for broad filters; the clause restores it.
        v_set := v_set || ' set hnsw.iterative_scan = relaxed_order set hnsw.max_scan_tuples = 20000';
    end if;

    perform ragpg_define_function(m.match_function, 'vector, float8, integer, jsonb, integer, integer', format(
        '%I(query_embedding vector, similarity_threshold float8 default 0,
            match_count integer default 10, filter jsonb default %L,
            exact_scan_max_rows integer default 10000, ef_search integer default 100)
         returns table (%s, similarity float8)
         language sql stable
         set search_path = public, pg_catalog, pg_temp %s
         as %L',
        m.match_function, '{}', v_chunk_cols, v_set,
        format('select * from ragpg_match_native_impl(%L, %s, %L, query_embedding, similarity_threshold,
                                                      match_count, filter, exact_scan_max_rows, ef_search)',
               m.embedding_table, m.dims, v_label)));
    execute format('comment on function %I(vector, float8, integer, jsonb, integer, integer) is %L',
                   m.match_function,
                   format('Nearest chunks for model %s (%s dims); similarity = 1 - cosine distance.', v_label, m.dims));

    perform ragpg_define_function(m.langchain_function, 'vector, float8, integer, jsonb', format(
        '%I(query_embedding vector, similarity_threshold float8 default 0,
            match_count integer default 10, filter jsonb default %L)
         returns table (%s, similarity float8)
         language sql stable
         set search_path = public, pg_catalog, pg_temp
         as %L',
        m.langchain_function, '{}', v_chunk_cols,
        format('select * from ragpg_match_langchain_impl(%s, %L, query_embedding, similarity_threshold,
                                                         match_count, filter)',
               m.dims, v_label)));
    execute format('comment on function %I(vector, float8, integer, jsonb) is %L',
                   m.langchain_function,
                   format('Nearest rows of LangChain''s PGVector tables for model %s (%s dims).', v_label, m.dims));

    perform ragpg_create_hybrid_functions(m, v_set, v_chunk_cols);
    perform ragpg_create_folder_functions(m, v_set);
end
$$;
