-- Hybrid retrieval: reciprocal rank fusion (RRF) of vector and BM25 rankings in one statement, for
-- one query or several (up to 32) at once.
--
--   rrf_score = sum over the lists holding the chunk of weight / (rrf_k + rank)
--
-- Each query (text, embedding) gives two lists: its vector list (exactly match_native_chunks_<model>'s
-- output) and its lexical list (exactly match_lexical_chunks' output), both candidate_count long. A
-- rank is the 1-based position in that list (ties broken by source_path, chunk_ordinal, chunk_id); a
-- chunk missing from a list gets nothing from it. Per chunk: its best ranks, best similarity, best
-- bm25_score, and in how many lists it appeared. A null embedding leaves that query's vector list
-- out; empty or stopword-only text leaves its lexical list out (one such query: the result is the
-- vector ranking). similarity_threshold applies to the vector lists.
-- match_hybrid_chunks_<model>(query_text, query_embedding, ...) is the one-query case of
-- match_hybrid_multi_chunks_<model>(query_texts, query_embeddings, ...): both call
-- ragpg_match_hybrid_impl.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- The one-query implementation, before the single and multi-query paths became one.
drop function if exists ragpg_match_hybrid_impl(text, integer, text, text, vector, integer, jsonb, float8, integer,
                                                jsonb, integer, float8, float8, integer, integer);
drop function if exists ragpg_match_hybrid_multi_impl(text, integer, text, text[], vector[], integer, jsonb, float8,
                                                      integer, jsonb, integer, float8, float8, integer, integer);

-- Validates the fusion arguments; returns the two weights (a missing weight is 1).
create or replace function ragpg_check_hybrid_args(match_count integer, rrf_k integer, weights jsonb, candidate_count integer,
                                        out vector_weight float8, out lexical_weight float8)
language plpgsql immutable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_key text;
    v_value jsonb;
begin
    perform ragpg_check_match_count(match_count);
    perform ragpg_check_match_count(candidate_count, 'candidate_count');
    if rrf_k is null or rrf_k < 1 then
        raise exception using errcode = '22023',
            message = format('rrf_k must be >= 1, got %s', coalesce(rrf_k::text, 'null'));
    end if;
    vector_weight := 1;
    lexical_weight := 1;
    if weights is null then
        return;
    end if;
    if jsonb_typeof(weights) <> 'object' then
        raise exception using errcode = '22023',
            message = 'weights must be an object like {"vector": 1, "lexical": 1}, got ' || jsonb_typeof(weights);
    end if;
    for v_key, v_value in select key, value from jsonb_each(weights) loop
        if v_key not in ('vector', 'lexical') then
            raise exception using errcode = '22023',
                message = 'unknown weight ' || ragpg_filter_label(v_key) || ' (known: vector, lexical)';
        end if;
        if jsonb_typeof(v_value) <> 'number' or v_value::text::float8 < 0 or v_value::text::float8 > 1e6 then
            raise exception using errcode = '22023',
                message = format('weight %s must be a number between 0 and 1000000', v_key);
        end if;
        if v_key = 'vector' then
            vector_weight := v_value::text::float8;
        else
            lexical_weight := v_value::text::float8;
        end if;
    end loop;
    if vector_weight = 0 and lexical_weight = 0 then
        raise exception using errcode = '22023', message = 'weights must not all be zero';
    end if;
end
$$;

-- Ties between equal scores are broken by the chunks' (source_path, ordinal), read for the tied
-- candidates together with ragpg_chunk_rows in the vaults searched (one lookup a search: one per
-- tied chunk cost ~0.5 ms each with 1,000 vaults, 30 ms a search where hash vectors tie often).
drop function if exists ragpg_chunk_sort_key(bigint);

-- One query with an embedding: its two lists joined directly, the same rows as the general form
-- below with one query, in less time. Interleaved on a SciFact + NFCorpus + help database (300
-- SciFact queries, 5 rounds, 2 shared cores; identical rows in 1500 of 1500 calls), p50: 4.90 ms for
-- the general form, 4.40 through ragpg_match_hybrid_impl to this one, 4.35 for the one-query function
-- before the two paths were one. So ragpg_match_hybrid_impl hands such a query here.
-- Both lists come from the id-only scorers (ragpg_vector_scores, ragpg_lexical_scores). The
-- tie-break fields (source_path, ordinal) decide only between equal scores, so only candidates that
-- share their score with another in the same list read them; the rest of the ranking is by score
-- and id, the same order. The chunk fields are read only for the candidates that can be among the
-- match_count rows returned (declared row counts keep the planner on index lookups: a guess of 1000
-- rows per function had it hash-join whole tables). Reading every candidate's path and ordinal cost
-- 0.2-0.4 ms of a 2.6-3.2 ms SciFact hybrid search (2 cores, 60 candidates a list).
create or replace function ragpg_match_hybrid_one(p_table text, p_dims integer, p_model text,
                                        query_text text, query_embedding vector, match_count integer, filter jsonb,
                                        similarity_threshold float8, rrf_k integer, weights jsonb,
                                        candidate_count integer, k1 float8, b float8,
                                        exact_scan_max_rows integer, ef_search integer)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, vector_rank integer, similarity float8, lexical_rank integer,
               bm25_score float8, rrf_score float8, vector_hits integer, lexical_hits integer)
language plpgsql stable rows 10
set search_path = public, pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    w record;
    v_scope bigint[];  -- the vaults searched, where the tie-break and the chunk fields are read
    l record;  -- the filter's chunks, listed once for both lists (45_filter_listing.sql)
begin
    select * into w from ragpg_check_hybrid_args(match_count, rrf_k, weights, candidate_count);
    v_scope := ragpg_filter_vault_scope(filter);
    select * into l from ragpg_filter_listing(filter, exact_scan_max_rows);
    return query
    with cand as materialized (
        select coalesce(vec.chunk_id, lex.chunk_id) as id, vec.similarity as sim, lex.bm25_score as bm,
               count(vec.chunk_id) over (partition by vec.similarity) > 1 as sim_tied,
               count(lex.chunk_id) over (partition by lex.bm25_score) > 1 as bm_tied
        from ragpg_vector_scores(p_table, p_dims, p_model, query_embedding, similarity_threshold,
                                 candidate_count, filter, exact_scan_max_rows, ef_search, l.ids, l.vault_ids) vec
        full join ragpg_lexical_scores(query_text, candidate_count, filter, k1, b,
                                       case when l.complete then l.ids end) lex
          on lex.chunk_id = vec.chunk_id
    ),
    tied as materialized (
        -- the tied candidates' path and ordinal in one lookup, made only if some row reads it below
        select t.chunk_id, t.source_path, t.chunk_ordinal
        from ragpg_chunk_rows((select array_agg(c2.id) from cand c2 where c2.sim_tied or c2.bm_tied), v_scope) t
    ),
    keyed as (
        select cand.id, cand.sim, cand.bm,
               case when cand.sim_tied or cand.bm_tied
                    then (select row(t.source_path, t.chunk_ordinal) from tied t where t.chunk_id = cand.id) end as k
        from cand
    ),
    vr as (
        select k.id, (row_number() over (order by k.sim desc, k.k, k.id))::integer as r
        from keyed k where k.sim is not null
    ),
    lr as (
        select k.id, (row_number() over (order by k.bm desc, k.k, k.id))::integer as r
        from keyed k where k.bm is not null
    ),
    scored as (
        -- a list is candidate_count long: ties kept at a scorer's cut are dropped here
        select k.id, vr.r as vr, lr.r as lr,
               case when vr.r is not null then k.sim end as sim, case when lr.r is not null then k.bm end as bm,
               coalesce(w.vector_weight / (rrf_k + vr.r), 0) + coalesce(w.lexical_weight / (rrf_k + lr.r), 0) as score
        from keyed k
        left join vr on vr.id = k.id and vr.r <= candidate_count
        left join lr on lr.id = k.id and lr.r <= candidate_count
        where vr.r is not null or lr.r is not null
    ),
    near as materialized (
        -- every candidate that is among the first match_count under some order of equal scores
        select sc.*
        from (select sc.*, rank() over (order by sc.score desc,
                                        least(coalesce(sc.vr, 2147483647), coalesce(sc.lr, 2147483647))) as rk
              from scored sc) sc
        where sc.rk <= match_count
    )
    -- the chunk fields, read once, for the candidates near the cut; the path settles its ties
    select c.chunk_id, c.vault, c.source_path, c.chunk_ordinal, c.heading_path, c.content, c.metadata,
           n.vr, n.sim, n.lr, n.bm, n.score, (n.vr is not null)::integer, (n.lr is not null)::integer
    from near n
    join ragpg_chunk_rows((select array_agg(n2.id) from near n2), v_scope) c
      on c.chunk_id = n.id
    order by n.score desc, least(coalesce(n.vr, 2147483647), coalesce(n.lr, 2147483647)), c.source_path,
             c.chunk_ordinal, n.id
    limit match_count;
end
$$;

-- Any number of queries (one with an embedding goes to ragpg_match_hybrid_one): every list from the
-- id-only scorers, ranked with the same tie-break (the path only for equal scores in one list), fused,
-- and the chunk fields read only near the cut, as above.
create or replace function ragpg_match_hybrid_impl(p_table text, p_dims integer, p_model text,
                                              query_texts text[], query_embeddings vector[], match_count integer,
                                              filter jsonb, similarity_threshold float8, rrf_k integer,
                                              weights jsonb, candidate_count integer, k1 float8, b float8,
                                              exact_scan_max_rows integer, ef_search integer)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, vector_rank integer, similarity float8, lexical_rank integer,
               bm25_score float8, rrf_score float8, vector_hits integer, lexical_hits integer)
language plpgsql stable rows 10
set search_path = public, pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    w record;
    n integer := coalesce(cardinality(query_embeddings), 0);
    v_scope bigint[];  -- the vaults searched, where the tie-break and the chunk fields are read
    l record;  -- the filter's chunks, listed once for every list (45_filter_listing.sql)
begin
    if n < 1 or n > 32 then
        raise exception using errcode = '22023',
            message = format('query_embeddings must hold between 1 and 32 embeddings, got %s', n);
    end if;
    if coalesce(cardinality(query_texts), 0) <> n then
        raise exception using errcode = '22023',
            message = format('query_texts and query_embeddings must have the same length, got %s and %s',
                             coalesce(cardinality(query_texts), 0), n);
    end if;
    if n = 1 and query_embeddings[1] is not null then
        return query select * from ragpg_match_hybrid_one(p_table, p_dims, p_model, query_texts[1], query_embeddings[1],
                                                          match_count, filter, similarity_threshold, rrf_k, weights,
                                                          candidate_count, k1, b, exact_scan_max_rows, ef_search);
        return;
    end if;
    select * into w from ragpg_check_hybrid_args(match_count, rrf_k, weights, candidate_count);
    v_scope := ragpg_filter_vault_scope(filter);
    select * into l from ragpg_filter_listing(filter, exact_scan_max_rows);  -- once for every query's lists
    return query
    with q as (
        select u.t, u.e, u.ord
        from unnest(query_texts, query_embeddings) with ordinality as u(t, e, ord)
    ),
    -- one row per (query, list, chunk): kind 'v' or 'l', with the list's score
    hits as materialized (
        select q.ord, 'v'::text as kind, m.chunk_id as id, m.similarity as s
        from (select * from q where q.e is not null) q  -- a null embedding has no vector list
        cross join lateral ragpg_vector_scores(p_table, p_dims, p_model, q.e, similarity_threshold,
                                               candidate_count, filter, exact_scan_max_rows, ef_search,
                                               l.ids, l.vault_ids) m
        union all
        select q.ord, 'l', m.chunk_id, m.bm25_score
        from q
        cross join lateral ragpg_lexical_scores(q.t, candidate_count, filter, k1, b,
                                                case when l.complete then l.ids end) m
    ),
    tagged as materialized (
        select h.*, count(*) over (partition by h.ord, h.kind, h.s) > 1 as tied from hits h
    ),
    tied as materialized (
        -- the tied chunks' path and ordinal in one lookup, made only if some row reads it below
        select t.chunk_id, t.source_path, t.chunk_ordinal
        from ragpg_chunk_rows((select array_agg(distinct t2.id) from tagged t2 where t2.tied), v_scope) t
    ),
    ranked as (
        -- equal scores in one list take the path tie-break; only they read it (see above)
        select h.id, h.kind, h.s,
               (row_number() over (partition by h.ord, h.kind
                                   order by h.s desc,
                                            case when h.tied then (select row(t.source_path, t.chunk_ordinal)
                                                                   from tied t where t.chunk_id = h.id) end, h.id)
               )::integer as r
        from tagged h
    ),
    fused as (
        -- a list is candidate_count long: ties kept at a scorer's cut are dropped here
        select r.id, min(r.r) filter (where r.kind = 'v') as vr, max(r.s) filter (where r.kind = 'v') as sim,
               min(r.r) filter (where r.kind = 'l') as lr, max(r.s) filter (where r.kind = 'l') as bm,
               sum(case when r.kind = 'v' then w.vector_weight else w.lexical_weight end / (rrf_k + r.r)) as score,
               (count(*) filter (where r.kind = 'v'))::integer as vh,
               (count(*) filter (where r.kind = 'l'))::integer as lh
        from ranked r
        where r.r <= candidate_count
        group by r.id
    ),
    near as materialized (
        select fu.*
        from (select fu.*, rank() over (order by fu.score desc,
                                        least(coalesce(fu.vr, 2147483647), coalesce(fu.lr, 2147483647))) as rk
              from fused fu) fu
        where fu.rk <= match_count
    )
    -- the chunk fields, read once, for the candidates near the cut; the path settles its ties
    select c.chunk_id, c.vault, c.source_path, c.chunk_ordinal, c.heading_path, c.content, c.metadata,
           n.vr, n.sim, n.lr, n.bm, n.score, n.vh, n.lh
    from near n
    join ragpg_chunk_rows((select array_agg(n2.id) from near n2), v_scope) c
      on c.chunk_id = n.id
    order by n.score desc, least(coalesce(n.vr, 2147483647), coalesce(n.lr, 2147483647)), c.source_path,
             c.chunk_ordinal, n.id
    limit match_count;
end
$$;

-- Called by ragpg_create_model_functions (40_model_functions.sql) with the wrapper settings: the
-- one-query and the multi-query function of a model, one template.
create or replace function ragpg_create_hybrid_functions(m embedding_models, p_set text, p_chunk_cols text) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_label text := m.provider || '/' || m.model;
    v_cols text := p_chunk_cols || ', vector_rank integer, similarity float8, lexical_rank integer, '
                   'bm25_score float8, rrf_score float8, vector_hits integer, lexical_hits integer';
    v_options text := 'integer, jsonb, float8, integer, jsonb, integer, float8, float8, integer, integer';
    f record;
begin
    for f in
        select * from (values
            (m.hybrid_function, 'text, vector', 'query_text text, query_embedding vector',
             'array[query_text], array[query_embedding]',
             'Reciprocal rank fusion of vector (model %s) and BM25 rankings.'),
            (ragpg_model_function_name(m, 'hybrid_multi'), 'text[], vector[]',
             'query_texts text[], query_embeddings vector[]', 'query_texts, query_embeddings',
             'Reciprocal rank fusion of the vector (model %s) and BM25 rankings of several queries.')
        ) as t (name, query_types, query_args, impl_args, description)
    loop
        perform ragpg_define_function(f.name, f.query_types || ', ' || v_options, format(
            '%I(%s, match_count integer default 10,
                filter jsonb default %L, similarity_threshold float8 default 0,
                rrf_k integer default 60, weights jsonb default %L, candidate_count integer default 60,
                k1 float8 default 0.9, b float8 default 0.4,
                exact_scan_max_rows integer default 10000, ef_search integer default 100)
             returns table (%s)
             language sql stable
             set search_path = public, pg_catalog, pg_temp %s
             as %L',
            f.name, f.query_args, '{}', '{"vector": 1, "lexical": 1}', v_cols, p_set,
            format('select * from ragpg_match_hybrid_impl(%L, %s, %L, %s, match_count, filter,
                                                           similarity_threshold, rrf_k, weights, candidate_count,
                                                           k1, b, exact_scan_max_rows, ef_search)',
                   m.embedding_table, m.dims, v_label, f.impl_args)));
        execute format('comment on function %I(%s) is %L', f.name, f.query_types || ', ' || v_options,
                       format(f.description, v_label));
    end loop;
end
$$;
