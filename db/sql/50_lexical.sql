-- Lexical retrieval: Okapi BM25 computed in SQL (Lucene's formula, as used by Pyserini).
--
--   idf(t)  = ln(1 + (N - df + 0.5) / (df + 0.5))
--   bm25    = sum over query lexemes t of qtf(t) * idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
--
-- tf is the number of positions of t in the chunk's tsvector, dl the chunk's lexeme_count, N and
-- avgdl come from bm25_vault_stats and df from bm25_term_stats, all per vault (maintained by the
-- triggers in 20_bm25_stats.sql), summed over the confidentiality levels the caller may read: a
-- caller bound by row-level security (a console role, the server's scoped reader) scores with the
-- statistics of the chunks it can see, the owner with those of every chunk. qtf is how often t occurs in the query (Anserini's bag-of-words
-- query weights repeated terms the same way). Query lexemes come from to_tsvector(<config>, query)
-- for each text search configuration of the vaults searched, and every chunk is scored with the
-- lexemes of its own config. tf and dl come from bm25_postings (one row per vault, lexeme and
-- chunk, maintained by the same triggers), read index-only for just the query lexemes: unnesting
-- every candidate's tsvector instead cost tens of milliseconds, as OR queries match much of a corpus.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- The per-term constants every scorer needs, so that a posting costs one multiply-add and one
-- division: bm25 = sum of wk * tf / (tf + c1 + c2 * dl), with wk = qtf * idf * (k1 + 1),
-- c1 = k1 * (1 - b), c2 = k1 * b / avgdl (the formula above, rearranged). Evaluating the formula
-- as written for every posting cost 0.3 of 1.9 ms on a SciFact query (~2,000 postings).
create or replace function ragpg_bm25_term_constants(vault_ids bigint[], cfgs regconfig[], lexemes text[],
                                                     weights float8[], avgdls float8[], k1 float8, b float8)
returns table (vault_id bigint, cfg regconfig, lexeme text, wk float8, c1 float8, c2 float8)
language plpgsql immutable parallel safe rows 8
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select u.vault_id, u.cfg, u.lexeme, u.w * (k1 + 1), k1 * (1 - b), k1 * b / u.avgdl
    from unnest(vault_ids, cfgs, lexemes, weights, avgdls) as u (vault_id, cfg, lexeme, w, avgdl);
end
$$;

-- How many vaults a search must leave out before its statements are planned for the vaults it names.
-- Each content table has a partition per vault (12_vault_partitions.sql). A plan made for the named
-- vaults' ids opens only their partitions but costs ~0.2 ms to make on every call; one cached plan
-- prunes at run time yet opens and locks every partition on every call (1,000 vaults: 11 ms where
-- the per-call plan took 1.6). Below this many left out, the cached plan is the cheaper.
create or replace function ragpg_plan_per_call_min_vaults_left_out() returns integer
language sql immutable parallel safe
return 16;

-- The plan_cache_mode for a search of these vaults: a plan per call when it leaves out many vaults,
-- else the cached plan. Its caller sets it for the rest of its own call (`perform
-- set_config('plan_cache_mode', ..., true)` in a function that declares `set plan_cache_mode`).
create or replace function ragpg_plan_cache_mode_for(p_vault_ids bigint[]) returns text
language sql stable parallel safe
set search_path = public, pg_catalog, pg_temp
as $$
    select case when (select count(*) from vaults) - coalesce(cardinality(p_vault_ids), 0)
                     >= ragpg_plan_per_call_min_vaults_left_out()
                then 'force_custom_plan' else 'force_generic_plan' end
$$;

create or replace function ragpg_check_bm25_params(k1 float8, b float8) returns void
language plpgsql immutable parallel safe
set search_path = pg_catalog, pg_temp
as $$
begin
    if k1 is null or k1 < 0 or k1 > 1000 or k1 = 'NaN'::float8 then
        raise exception using errcode = '22023',
            message = format('k1 must be between 0 and 1000, got %s', coalesce(k1::text, 'null'));
    end if;
    if b is null or b < 0 or b > 1 or b = 'NaN'::float8 then
        raise exception using errcode = '22023',
            message = format('b must be between 0 and 1, got %s', coalesce(b::text, 'null'));
    end if;
end
$$;

-- The query's lexemes under each text search configuration in use by the given vaults (null = all):
--   select * from ragpg_query_lexemes('Cats chasing mice');
create or replace function ragpg_query_lexemes(query_text text, vault_names text[] default null)
returns table (text_search_config regconfig, lexeme text, query_frequency integer)
language sql stable parallel safe rows 16
set search_path = public, pg_catalog, pg_temp
begin atomic
    select cfg.c, u.lexeme, coalesce(cardinality(u.positions), 1)
    from (select distinct v.text_search_config as c
          from vaults v
          where vault_names is null or v.name = any(vault_names)) cfg
    cross join lateral unnest(to_tsvector(cfg.c, coalesce(query_text, ''))) u
    order by 1, 2;
end;

-- No longer used (scoring reads bm25_postings instead of the GIN index).
drop function if exists ragpg_lexemes_tsquery(text[]);

-- BM25 scores of the best chunks, ids only (the hybrid functions fuse these lists and fetch each
-- chunk's fields once, at the end). Every chunk scoring at least the candidate_count-th best score
-- is returned, so ties at the cut are kept for the caller's tie-break (source_path, ordinal, id).
-- Empty, stopword-only or punctuation-only query text gives an empty result here.
-- p_listed: every chunk the filter keeps in the vaults searched, as ragpg_filter_listing listed them
-- for a hybrid search (45_filter_listing.sql), or null; used only by a caller row-level security
-- does not bind, whose candidates are then checked against it instead of against their chunk rows.
drop function if exists ragpg_lexical_scores(text, integer, jsonb, float8, float8);
create or replace function ragpg_lexical_scores(query_text text, candidate_count integer, filter jsonb,
                                     k1 float8, b float8, p_listed bigint[] default null)
returns table (chunk_id bigint, bm25_score float8)
language plpgsql stable rows 60
set search_path = public, pg_catalog, pg_temp
set plan_cache_mode = auto  -- (set for each call below: ragpg_plan_cache_mode_for)
as $$
#variable_conflict use_column
declare
    f record;
    t record;
    r record;
    v_filter text;
    v_depth integer;
    v_vault_ids bigint[];  -- the vaults searched (every vault when the filter names none)
    v_term_vaults bigint[];  -- the vaults whose term statistics are read
    v_cand_ids bigint[];  -- the bm25 indexes' candidates, when they pick them, and each one's vault
    v_cand_vaults bigint[];
    -- Only a caller row-level security does not bind (the owner) sees every chunk of a vault: the
    -- bm25 index (which ranks with every chunk's statistics) and the unchecked cut below are its
    -- alone; any other caller's candidates are cut only after its policy on chunks has kept them.
    v_whole boolean := not row_security_active('public.chunks'::regclass);
    v_listed bigint[] := case when v_whole then p_listed end;
begin
    perform ragpg_check_match_count(candidate_count, 'match_count');
    perform ragpg_check_bm25_params(k1, b);
    select * into f from ragpg_compile_filter(filter);
    perform ragpg_check_vault_names(f.vaults);
    if query_text is null or query_text !~ '[^[:space:]]' then
        return;
    end if;
    v_vault_ids := ragpg_vault_ids(f.vaults);
    perform set_config('plan_cache_mode', ragpg_plan_cache_mode_for(v_vault_ids), true);
    v_filter := ragpg_filter_sql('c', 'metadata', f.containment, f.predicate, 4);
    v_term_vaults := v_vault_ids;
    if v_filter = '' and v_whole and ragpg_lexical_backend(f.vaults, null, k1, b) = 'pg_textsearch' then
        -- Every vault searched has a bm25 index (55_bm25_index.sql): it picks the candidates, the
        -- postings score them (the same scores as below, for far fewer chunks), and only the vaults
        -- holding a candidate need their term statistics (naming no vault over 1,000 vaults, the
        -- statistics of every vault were a probe per vault and term).
        select x.ids, x.vault_ids into v_cand_ids, v_cand_vaults
        from ragpg_bm25_index_candidates(query_text, candidate_count, v_vault_ids) x;
        v_term_vaults := array(select distinct u from unnest(v_cand_vaults) u);
    end if;
    -- The query terms first, one row per (vault, config, lexeme) found in that vault: qtf * idf and
    -- the vault's average chunk length, from the statistics of the levels the caller reads. Each pair
    -- is one primary-key range probe of bm25_term_stats (an aggregate, so the lateral subquery is
    -- not flattened into a join on lexeme alone, which reads the whole table). Empty vaults are
    -- skipped: no postings, and avgdl would divide by zero.
    select array_agg(s.vault_id) as vault_ids, array_agg(q.text_search_config) as cfgs,
           array_agg(q.lexeme) as lexemes,
           array_agg(q.query_frequency
                     * ln(1 + (s.chunk_count - ts.chunk_frequency + 0.5::float8) / (ts.chunk_frequency + 0.5::float8))) as weights,
           array_agg(s.total_length::float8 / s.chunk_count) as avgdls,
           sum(ts.chunk_frequency)::bigint as postings
    into t
    from (select sv.vault_id, sum(sv.chunk_count)::bigint as chunk_count, sum(sv.total_length)::bigint as total_length
          from bm25_vault_stats sv
          where sv.vault_id = any(v_term_vaults)
          group by sv.vault_id) s
    cross join ragpg_query_lexemes(query_text, f.vaults) q
    -- (the vaults again as a value: only their partitions of bm25_term_stats are opened)
    cross join lateral (select sum(tt.chunk_frequency)::bigint as chunk_frequency from bm25_term_stats tt
                        where tt.vault_id = s.vault_id and tt.lexeme = q.lexeme and tt.vault_id = any(v_term_vaults)
                        having count(*) > 0) ts
    where s.chunk_count > 0;
    if t.vault_ids is null then
        return;
    end if;
    if v_cand_ids is not null then
        return query
        select s.chunk_id, s.bm25_score
        from ragpg_bm25_exact_scores(v_cand_ids, v_cand_vaults, t.vault_ids, t.cfgs, t.lexemes, t.weights, t.avgdls, k1, b) s
        order by s.bm25_score desc, s.chunk_id
        limit candidate_count;
        return;
    end if;
    if v_filter = '' and v_whole then
        -- The common case (no metadata filter; vaults are already in the term list): static SQL,
        -- so the plan is cached instead of being made again on every call. The terms arrive as
        -- arrays so the planner expects a handful of rows and probes bm25_postings by (vault,
        -- lexeme), index-only; each chunk is scored with the lexemes of its own config.
        -- (The config test sits in the aggregate's filter rather than the join: as a join
        -- condition it made the planner expect a few rows and sort thousands for a group
        -- aggregate, where hashing is twice as fast. A chunk with no posting in its own config
        -- scores null and is left out.)
        return query
        with scored as materialized (
            select p.chunk_id as id,
                   sum(tm.wk * p.tf / (p.tf + tm.c1 + tm.c2 * p.dl)) filter (where p.text_search_config = tm.cfg) as score
            from ragpg_bm25_term_constants(t.vault_ids, t.cfgs, t.lexemes, t.weights, t.avgdls, k1, b) tm
            -- lateral: each term probes its own vault's partition (pruned per term when it runs),
            -- never a merge over every vault's postings
            cross join lateral (select pp.chunk_id, pp.tf, pp.dl, pp.text_search_config from bm25_postings pp
                                where pp.vault_id = tm.vault_id and pp.lexeme = tm.lexeme
                                  and pp.vault_id = any(t.vault_ids)  -- (opens those vaults' partitions only)
                                offset 0) p  -- (a probe per term, never flattened into a scan)
            group by p.chunk_id
        )
        select sc.id, sc.score
        from scored sc
        where sc.score >= (select min(x.score)
                           from (select s2.score from scored s2 where s2.score is not null
                                 order by s2.score desc limit candidate_count) x);
        return;
    end if;
    -- With a metadata filter, every vault's bm25 index read deep enough for the filter's share of
    -- chunks, when it can prove the answer (56_bm25_filtered.sql; the owner's only); else the SQL BM25
    -- below.
    if v_filter <> '' and v_whole then
        v_depth := ragpg_bm25_filtered_depth(f.containment, f.predicate, f.vars, f.vaults, candidate_count, k1, b,
                                             t.postings, cardinality(v_listed));
    end if;
    if v_depth is not null then
        select * into r from ragpg_lexical_scores_indexed_filtered(
            query_text, candidate_count, v_depth, t.vault_ids, t.cfgs, t.lexemes, t.weights, t.avgdls, k1, b,
            f.containment, f.predicate, f.vars, v_listed);
        if r.complete then
            return query select u.id, u.score from unnest(r.chunk_ids, r.scores) as u (id, score);
            return;
        end if;
    end if;
    -- The SQL BM25 with each scored chunk checked before the cut: against a metadata filter, and (for
    -- a caller row-level security binds) against the caller's policy on chunks, so chunks it may not
    -- read take no candidate's place. Parameters $1 k1, $2 b, $3 candidate_count, $4 containment,
    -- $5 predicate, $6 vars, $7..$11 the term arrays, $12 the list (checked in place of the chunk
    -- rows when there is one, after the scores are summed: `offset 0` keeps the planner from
    -- pushing it into the postings read, where it turned a probe per term into a scan of the vault's
    -- postings, 0.5-0.8 s for a 1 % filter at 1M chunks); v_filter holds only fixed text (or nothing).
    return query execute
        'with scored as materialized (
             select r.id, r.score
             from (select p.vault_id, p.chunk_id as id,
                          sum(tm.wk * p.tf / (p.tf + tm.c1 + tm.c2 * p.dl)) as score
                   -- (ragpg_bm25_term_constants inline: its function scan turned the filter
                   -- metadata index into a probe per scored chunk)
                   from (select u.vault_id, u.cfg, u.lexeme, u.w * ($1 + 1) as wk, $1 * (1 - $2) as c1,
                                $1 * $2 / u.avgdl as c2
                         from unnest($7, $8, $9, $10, $11) as u (vault_id, cfg, lexeme, w, avgdl)) tm
                   cross join lateral (select pp.vault_id, pp.chunk_id, pp.tf, pp.dl from bm25_postings pp
                                       where pp.vault_id = tm.vault_id and pp.lexeme = tm.lexeme
                                         and pp.text_search_config = tm.cfg
                                         and pp.vault_id = any($7)) p  -- (a constant here: planned pruned)
                   group by p.vault_id, p.chunk_id' || case when v_listed is not null then '
                   offset 0' else '' end || ') r
             where ' || case when v_listed is not null then 'r.id = any($12)'
                             else 'exists (select from chunks c
                                           where c.vault_id = r.vault_id and c.id = r.id and c.vault_id = any($7)'
                                  || v_filter || ')' end || '
         )
         select sc.id, sc.score
         from scored sc
         where sc.score >= (select min(x.score) from (select s2.score from scored s2 order by s2.score desc limit $3) x)'
        using k1, b, candidate_count, f.containment, f.predicate, f.vars,
              t.vault_ids, t.cfgs, t.lexemes, t.weights, t.avgdls, v_listed;
end
$$;

-- Chunks ranked by BM25 with their fields (the implementation of match_lexical_chunks).
create or replace function ragpg_match_lexical_impl(query_text text, match_count integer, filter jsonb,
                                         k1 float8, b float8)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, bm25_score float8)
language sql stable rows 10
set search_path = public, pg_catalog, pg_temp
-- a string body, not begin atomic: the migrations' downgrade drops functions one by one and
-- must not find this one already gone with its scorer
as $$
    with sc as materialized (select * from ragpg_lexical_scores(query_text, match_count, filter, k1, b))
    select c.chunk_id, c.vault, c.source_path, c.chunk_ordinal, c.heading_path, c.content, c.metadata, sc.bm25_score
    from sc
    join ragpg_chunk_rows((select array_agg(s2.chunk_id) from sc s2), ragpg_filter_vault_scope(filter)) c
      on c.chunk_id = sc.chunk_id
    order by sc.bm25_score desc, c.source_path, c.chunk_ordinal, c.chunk_id
    -- (never limit 0: the scorer, which rejects a bad match_count, would not even be called)
    limit greatest(match_count, 1)
$$;

-- Chunks ranked by BM25, for the console and rag.retrieval.retrieve.match_lexical. Empty (or blank) query
-- text is an error (22023); text without a searchable word (stopwords, punctuation) gives an
-- empty result.
create or replace function match_lexical_chunks(query_text text, match_count integer default 10, filter jsonb default '{}',
                                     k1 float8 default 0.9, b float8 default 0.4)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, bm25_score float8)
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if query_text is null or query_text !~ '[^[:space:]]' then
        raise exception using errcode = '22023', message = 'query_text is empty';
    end if;
    return query select * from ragpg_match_lexical_impl(query_text, match_count, filter, k1, b);
end
$$;

-- How common each of the query's lexemes is in the given vaults (null = all): chunk frequency
-- summed over the vaults and the vaults' chunk count. A question whose rare words the notes never
-- use is one they likely cannot answer (rag.notes.signals). With readable_levels, only chunks of
-- those confidentiality levels count, so the figures say nothing about notes a caller may not read.
-- in_chunks: which of the given chunks (the passages an answer would draw on) hold the lexeme, by
-- the same analysis that indexed them (their heading and content), so the question's words and the
-- passages' are compared by Postgres' analyzer alone:
--   select * from ragpg_query_term_stats('how do I export to epub', array['help']);
drop function if exists ragpg_query_term_stats(text, text[]);
drop function if exists ragpg_query_term_stats(text, text[], text[]);
create or replace function ragpg_query_term_stats(query_text text, vault_names text[] default null,
                                                  readable_levels text[] default null,
                                                  chunk_ids bigint[] default null)
returns table (lexeme text, chunk_frequency bigint, chunk_count bigint, in_chunks bigint[])
language sql stable parallel safe rows 16
set search_path = public, pg_catalog, pg_temp
-- A string body (not `begin atomic`): it must not pin the BM25 tables against a migration downgrade.
as $$
    with v as (
        select id, text_search_config from vaults where vault_names is null or name = any(vault_names)
    ), q as (
        select distinct u.lexeme
        from (select distinct text_search_config as c from v) cfg
        cross join lateral unnest(to_tsvector(cfg.c, coalesce(query_text, ''))) u
    )
    select q.lexeme,
           case when readable_levels is null then
               coalesce((select sum(t.chunk_frequency) from bm25_term_stats t
                         where t.vault_id in (select id from v) and t.lexeme = q.lexeme), 0)
           else
               (select count(*) from bm25_postings p join chunks c on c.id = p.chunk_id
                where p.vault_id in (select id from v) and p.lexeme = q.lexeme
                  and coalesce(c.metadata ->> 'confidentiality', 'restricted') = any(readable_levels))
           end::bigint,
           case when readable_levels is null then
               coalesce((select sum(s.chunk_count) from bm25_vault_stats s
                         where s.vault_id in (select id from v)), 0)
           else
               (select count(*) from chunks c where c.vault_id in (select id from v)
                  and coalesce(c.metadata ->> 'confidentiality', 'restricted') = any(readable_levels))
           end::bigint,
           array(select c.id from chunks c
                 where c.id = any(chunk_ids) and q.lexeme = any(tsvector_to_array(c.content_tsv)) order by c.id)
    from q
    order by q.lexeme;
$$;
