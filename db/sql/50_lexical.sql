-- Lexical retrieval: Okapi BM25 computed in SQL (Lucene's formula, as used by Pyserini).
--
--   idf(t)  = ln(1 + (N - df + 0.5) / (df + 0.5))
--   bm25    = sum over query lexemes t of qtf(t) * idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
--
-- tf is the number of positions of t in the chunk's tsvector, dl the chunk's lexeme_count, N and
-- avgdl come from bm25_vault_stats and df from bm25_term_stats, all per vault (maintained by the
-- triggers in 20_bm25_stats.sql). qtf is how often t occurs in the query (Anserini's bag-of-words
-- query weights repeated terms the same way). Query lexemes come from to_tsvector(<config>, query)
-- for each text search configuration of the vaults searched, and every chunk is scored with the
-- lexemes of its own config. Candidates come from the GIN index (content_tsv @@ 'a' | 'b' | ...).
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

create or replace function ragpg_check_bm25_params(k1 float8, b float8) returns void
language plpgsql immutable parallel safe
set search_path = pg_catalog
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
set search_path = public, pg_catalog
begin atomic
    select cfg.c, u.lexeme, coalesce(cardinality(u.positions), 1)
    from (select distinct v.text_search_config as c
          from vaults v
          where vault_names is null or v.name = any(vault_names)) cfg
    cross join lateral unnest(to_tsvector(cfg.c, coalesce(query_text, ''))) u
    order by 1, 2;
end;

-- 'a' | 'b' | ... from lexemes, each quoted (quotes and backslashes doubled); null for none.
create or replace function ragpg_lexemes_tsquery(p_lexemes text[]) returns tsquery
language sql immutable parallel safe strict
set search_path = pg_catalog
return (
    select string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery
    from unnest(p_lexemes) l
);

-- Chunks ranked by BM25 (the implementation; the hybrid functions call it directly). Empty,
-- stopword-only or punctuation-only query text gives an empty result here.
create or replace function ragpg_match_lexical_impl(query_text text, match_count integer, filter jsonb,
                                         k1 float8, b float8)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, bm25_score float8)
language plpgsql stable
set search_path = public, pg_catalog
as $$
declare
    f record;
    v_lexemes text[];
    v_where text;
begin
    perform ragpg_check_match_count(match_count);
    perform ragpg_check_bm25_params(k1, b);
    select * into f from ragpg_compile_filter(filter);
    perform ragpg_check_vault_names(f.vaults);
    if query_text is null or query_text !~ '[^[:space:]]' then
        return;
    end if;
    select array_agg(distinct q.lexeme) into v_lexemes from ragpg_query_lexemes(query_text, f.vaults) q;
    if v_lexemes is null then
        return;
    end if;
    -- Parameters: $1 query text, $2 match_count, $3 k1, $4 b, $5 containment, $6 predicate, $7 vars,
    -- $8 vault names, $9 the OR tsquery, $10 the lexemes. v_where holds only fixed text.
    v_where := ragpg_filter_sql('c', 'metadata', f.containment, f.predicate, 5)
               || case when f.vaults is not null
                       then ' and c.vault_id in (select vv.id from vaults vv where vv.name = any($8))' else '' end;
    return query execute
        'with ql as (
             select q.text_search_config as cfg, q.lexeme, q.query_frequency as qtf
             from ragpg_query_lexemes($1, $8) q
         ),
         -- candidates from the GIN index, each with the tf of the query lexemes it holds (setweight
         -- marks the query lexemes, ts_filter keeps only them); materialized so every tsvector is
         -- read once
         hits as materialized (
             select c.id, c.vault_id, c.text_search_config as cfg, c.lexeme_count as dl, u.lexeme,
                    coalesce(cardinality(u.positions), 1) as tf
             from chunks c
             cross join lateral unnest(ts_filter(setweight(c.content_tsv, ''A'', $10), ''{a}'')) u
             where c.content_tsv @@ $9' || v_where || '
         ),
         scored as materialized (
             select h.id,
                    sum(ql.qtf * ln(1 + (s.chunk_count - t.chunk_frequency + 0.5::float8) / (t.chunk_frequency + 0.5::float8))
                        * (h.tf * ($3 + 1))
                        / (h.tf + $3 * (1 - $4 + $4 * h.dl / (s.total_length::float8 / s.chunk_count)))
                    ) as bm25_score
             from hits h
             join ql on ql.cfg = h.cfg and ql.lexeme = h.lexeme
             join bm25_vault_stats s on s.vault_id = h.vault_id
             join bm25_term_stats t on t.vault_id = h.vault_id and t.lexeme = h.lexeme
             group by h.id
         ),
         -- the match_count-th best score: only chunks at or above it need their fields and tie-breaks
         cut as (
             select min(x.bm25_score) as score
             from (select sc.bm25_score from scored sc order by sc.bm25_score desc limit $2) x
         )
         select c.id, v.name, d.source_path, c.ordinal, c.heading_path, c.content, c.metadata, sc.bm25_score
         from scored sc
         join chunks c on c.id = sc.id
         join documents d on d.id = c.document_id
         join vaults v on v.id = c.vault_id
         where sc.bm25_score >= (select cut.score from cut)
         order by sc.bm25_score desc, d.source_path, c.ordinal, c.id
         limit $2'
        using query_text, match_count, k1, b, f.containment, f.predicate, f.vars, f.vaults,
              ragpg_lexemes_tsquery(v_lexemes), v_lexemes;
end
$$;

-- Chunks ranked by BM25, for the console and rag.retrieve.match_lexical. Empty (or blank) query
-- text is an error (22023); text without a searchable word (stopwords, punctuation) gives an
-- empty result.
create or replace function match_lexical_chunks(query_text text, match_count integer default 10, filter jsonb default '{}',
                                     k1 float8 default 0.9, b float8 default 0.4)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, bm25_score float8)
language plpgsql stable
set search_path = public, pg_catalog
as $$
begin
    if query_text is null or query_text !~ '[^[:space:]]' then
        raise exception using errcode = '22023', message = 'query_text is empty';
    end if;
    return query select * from ragpg_match_lexical_impl(query_text, match_count, filter, k1, b);
end
$$;
