-- The SQL console from psql alone: text search that needs no Python, and views for the common
-- questions about what is indexed.
--
--   select * from search_hybrid('how do I sync my vault');   -- vector + BM25 when the question's
--                                                            -- embedding is cached, BM25 alone otherwise
--   select * from search_lexical('sync conflict');           -- BM25 only
--   select * from ragpg_indexed_folders;  ragpg_indexed_vaults;  ragpg_index_runs_recent;
--   select * from ragpg_largest_notes;    ragpg_most_retrieved_notes;
--
-- The query-embedding cache (table query_embeddings, migration 0007) is written by every `ask`,
-- `search` and `context` and by `ragpg embed "text"`; ragpg_cached_query_embeddings reads one question
-- of it at a time. Each row records the role that cached it (`cached_by`, migration 0012): a role
-- reads only its own rows, the owner all of them (row-level security, 80_security.sql), so nobody can
-- confirm another's exact question or when it was asked. Every view runs as the invoker
-- (security_invoker), so row-level security applies to the rows behind it.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- The cache key of a question: md5 of the trimmed text (the text Python embeds is trimmed too).
create or replace function ragpg_query_key(p_query text) returns text
language sql immutable parallel safe strict
return md5(btrim(p_query));

-- The cached embeddings of exactly this question, one per model, most recently used first: the
-- caller's own (a console role's) or, for the owner, anyone's.
create or replace function ragpg_cached_query_embeddings(p_query text)
returns table (model_id integer, provider text, model text, sql_name text, embedding vector,
               last_used_at timestamptz)
language sql stable
set search_path = public, pg_catalog, pg_temp
as $$
    select q.model_id, m.provider, m.model, m.sql_name, q.embedding, q.last_used_at
    from query_embeddings q
    join embedding_models m on m.id = q.model_id
    where q.query_key = ragpg_query_key(p_query)
    order by q.cached_by = current_user desc, q.last_used_at desc, q.model_id
$$;

-- Called by `ragpg embed` (retrieval records through ragpg_record_queries, below), on the owner's
-- connection only: caches the question's embedding for its model (when given) as p_cached_by's (a
-- console role, for `ragpg embed --role`; null: the caller's own) and counts one retrieval for each
-- note among p_chunk_ids.
drop function if exists ragpg_record_query(integer, text, vector, bigint[]);
create or replace function ragpg_record_query(p_model_id integer, p_query text, p_embedding vector,
                                              p_chunk_ids bigint[], p_cached_by name default null)
returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if p_model_id is not null and p_embedding is not null and p_query ~ '[^[:space:]]' then
        insert into query_embeddings as q (model_id, query_key, query_text, embedding, cached_by)
        values (p_model_id, ragpg_query_key(p_query), btrim(p_query), p_embedding, coalesce(p_cached_by, current_user))
        on conflict (model_id, query_key, cached_by) do update
            set embedding = excluded.embedding, uses = q.uses + 1, last_used_at = now();
    end if;
    if cardinality(p_chunk_ids) > 0 then
        insert into document_retrievals as r (vault_id, document_id, retrievals, last_retrieved_at)
        select distinct c.vault_id, c.document_id, 1, now() from chunks c where c.id = any(p_chunk_ids)
        order by 1, 2  -- one lock order for concurrent callers
        on conflict (vault_id, document_id) do update set retrievals = r.retrievals + 1, last_retrieved_at = now();
    end if;
end
$$;
revoke all on function ragpg_record_query(integer, text, vector, bigint[], name) from public;

-- Many questions in one call: the query log's background writer (rag/store/query_log.py) sends what
-- it has queued as one statement, with the same effect as one ragpg_record_query per question:
-- question i is (p_model_ids[i], p_queries[i], p_embeddings[i]); hit j counts one retrieval of the
-- note holding chunk p_hit_chunks[j] for question p_hit_queries[j] (a 1-based index into the
-- questions). Repeats within the batch are added up first, since one insert ... on conflict may
-- not touch a row twice, and rows are written in key order, so two server processes writing
-- batches at once take their row locks in the same order (no deadlock).
create or replace function ragpg_record_queries(p_model_ids integer[], p_queries text[], p_embeddings vector[],
                                                p_hit_queries integer[], p_hit_chunks bigint[])
returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    insert into query_embeddings as q (model_id, query_key, query_text, embedding, uses)
    select distinct on (s.model_id, s.query_key) s.model_id, s.query_key, btrim(s.query_text), s.embedding,
           count(*) over (partition by s.model_id, s.query_key)
    from (select u.model_id, ragpg_query_key(u.query_text) as query_key, u.query_text, u.embedding, u.i
          from unnest(p_model_ids, p_queries, p_embeddings) with ordinality as u(model_id, query_text, embedding, i)
          where u.model_id is not null and u.embedding is not null and u.query_text ~ '[^[:space:]]') s
    order by s.model_id, s.query_key, s.i desc  -- a question asked twice keeps its latest embedding
    on conflict (model_id, query_key, cached_by) do update
        set embedding = excluded.embedding, uses = q.uses + excluded.uses, last_used_at = now();
    insert into document_retrievals as r (vault_id, document_id, retrievals, last_retrieved_at)
    select c.vault_id, c.document_id, count(distinct h.question), now()
    from unnest(p_hit_queries, p_hit_chunks) as h(question, chunk_id)
    join chunks c on c.id = h.chunk_id
    group by c.vault_id, c.document_id
    order by 1, 2
    on conflict (vault_id, document_id) do update
        set retrievals = r.retrievals + excluded.retrievals, last_retrieved_at = now();
end
$$;
-- Only the owner: the writer records on its own unscoped connection, never as a scoped reader.
revoke all on function ragpg_record_queries(integer[], text[], vector[], integer[], bigint[]) from public;

-- BM25 over the question text alone; `legs` says which searches ran ('lexical').
create or replace function search_lexical(question text, match_count integer default 10, filter jsonb default '{}')
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, score float8, similarity float8, bm25_score float8,
               vector_rank integer, lexical_rank integer, legs text)
language sql stable
set search_path = public, pg_catalog, pg_temp
as $$
    select l.chunk_id, l.vault, l.source_path, l.chunk_ordinal, l.heading_path, l.content, l.metadata,
           l.bm25_score, null::float8, l.bm25_score, null::integer,
           (row_number() over (order by l.bm25_score desc, l.source_path, l.chunk_ordinal, l.chunk_id))::integer,
           'lexical'
    from match_lexical_chunks(question, match_count, filter) l
    order by l.bm25_score desc, l.source_path, l.chunk_ordinal, l.chunk_id
$$;

-- Hybrid search over the question text alone, passage by passage (search_hybrid below groups it by
-- note). With a cached embedding of this exact question (for `model`, given as 'provider/model' or
-- its sql_name, or else the most recently used one) it runs match_hybrid_chunks_<model> (RRF of
-- vector and BM25; score = rrf_score, legs = 'vector+lexical'); without one, BM25 alone (score =
-- bm25_score, legs = 'lexical'). Cache a question with `ragpg embed "question"` (or ask it once
-- through ragpg).
drop function if exists search_hybrid(text, integer, jsonb, text);
create or replace function ragpg_search_hybrid_passages(question text, match_count integer, filter jsonb, model text)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, score float8, similarity float8, bm25_score float8,
               vector_rank integer, lexical_rank integer, legs text)
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_fn text;
    v_embedding vector;
begin
    if question is null or question !~ '[^[:space:]]' then
        raise exception using errcode = '22023', message = 'question is empty';
    end if;
    if model is not null and not exists (select 1 from embedding_models m
                                         where m.provider || '/' || m.model = model or m.sql_name = model) then
        raise exception using errcode = '42704', message = format('unknown embedding model %L (see embedding_models)', model);
    end if;
    select m.hybrid_function, c.embedding into v_fn, v_embedding
    from ragpg_cached_query_embeddings(question) c
    join embedding_models m on m.id = c.model_id
    where model is null or c.provider || '/' || c.model = model or c.sql_name = model
    order by c.last_used_at desc
    limit 1;
    if v_embedding is null then
        return query select * from search_lexical(question, match_count, filter);
        return;
    end if;
    return query execute format(
        'select h.chunk_id, h.vault, h.source_path, h.chunk_ordinal, h.heading_path, h.content, h.metadata,
                h.rrf_score, h.similarity, h.bm25_score, h.vector_rank, h.lexical_rank, %L::text
         from %I($1, $2, match_count => $3, filter => $4) h', 'vector+lexical', v_fn)
        using question, v_embedding, match_count, filter;
end
$$;

-- A notes search ranks notes: by_note (the default) lists the match_count best distinct notes, each
-- with at most passages_per_note of its passages (best first), note_rank numbering the notes in the
-- order of their best passage; enough passages are fetched for that (match_count x passages_per_note x
-- 4, at most 1000). by_note => false lists the match_count best passages, note_rank grouping them.
create or replace function search_hybrid(question text, match_count integer default 10, filter jsonb default '{}',
                                         model text default null, by_note boolean default true,
                                         passages_per_note integer default 3)
returns table (chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text,
               content text, metadata jsonb, score float8, similarity float8, bm25_score float8,
               vector_rank integer, lexical_rank integer, legs text, note_rank integer)
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
    if match_count is null or match_count < 1 or passages_per_note is null or passages_per_note < 1 then
        raise exception using errcode = '22023', message = 'match_count and passages_per_note must be at least 1';
    end if;
    return query
    with found as (
        select p.*,
               min(p.pos) over (partition by p.vault, p.source_path) as note_first,
               row_number() over (partition by p.vault, p.source_path order by p.pos) as in_note
        from ragpg_search_hybrid_passages(question,
                 case when by_note then least(match_count::numeric * passages_per_note * 4, 1000)::integer else match_count end,
                 filter, model) with ordinality as p(chunk_id, vault, source_path, chunk_ordinal, heading_path,
                 content, metadata, score, similarity, bm25_score, vector_rank, lexical_rank, legs, pos)
    ), numbered as (
        select f.*, dense_rank() over (order by f.note_first)::integer as n_rank from found f
    )
    select n.chunk_id, n.vault, n.source_path, n.chunk_ordinal, n.heading_path, n.content, n.metadata, n.score,
           n.similarity, n.bm25_score, n.vector_rank, n.lexical_rank, n.legs, n.n_rank
    from numbered n
    where not by_note or (n.n_rank <= match_count and n.in_note <= passages_per_note)
    order by case when by_note then n.n_rank end, n.pos;
end
$$;

-- What is indexed, per vault.
create or replace view ragpg_indexed_vaults with (security_invoker = true) as
select v.name as vault, v.root_path,
       (select count(*) from documents d where d.vault_id = v.id) as documents,
       (select count(*) from chunks c where c.vault_id = v.id) as chunks,
       (select coalesce(sum(d.size_bytes), 0) from documents d where d.vault_id = v.id) as bytes,
       v.last_indexed_at
from vaults v;

-- What is indexed, per vault and folder ('' is the vault's top level).
create or replace view ragpg_indexed_folders with (security_invoker = true) as
select v.name as vault, d.folder, count(*) as documents, sum(cc.chunks)::bigint as chunks,
       sum(cc.tokens)::bigint as tokens, sum(d.size_bytes)::bigint as bytes, max(d.indexed_at) as last_indexed_at
from documents d
join vaults v on v.id = d.vault_id
cross join lateral (select count(*) as chunks, coalesce(sum(c.token_count), 0) as tokens
                    from chunks c where c.document_id = d.id) cc
group by v.name, d.folder;

-- The last index runs, newest first, with their outcome (HTTP `POST /v1/index` and CLI runs).
-- index_runs is the owner's table: other roles get a permission error here.
create or replace view ragpg_index_runs_recent with (security_invoker = true) as
select r.id, r.origin, r.vaults, r.status, r.error,
       (r.progress ->> 'files_seen')::bigint as files_seen,
       (r.progress ->> 'files_indexed')::bigint as files_indexed,
       (r.progress ->> 'files_skipped')::bigint as files_skipped,
       (r.progress ->> 'chunks_written')::bigint as chunks_written,
       r.created_at, r.finished_at, r.finished_at - r.created_at as duration
from index_runs r
order by r.created_at desc;

-- The largest notes (by bytes), with their passage and token counts.
create or replace view ragpg_largest_notes with (security_invoker = true) as
select v.name as vault, d.source_path, d.title, d.size_bytes, cc.chunks, cc.tokens, d.indexed_at
from documents d
join vaults v on v.id = d.vault_id
cross join lateral (select count(*) as chunks, coalesce(sum(c.token_count), 0)::bigint as tokens
                    from chunks c where c.document_id = d.id) cc
order by d.size_bytes desc, v.name, d.source_path;

-- The notes most often among the first candidates of a question (ask, search, context).
create or replace view ragpg_most_retrieved_notes with (security_invoker = true) as
select v.name as vault, d.source_path, d.title, r.retrievals, r.last_retrieved_at
from document_retrievals r
join documents d on d.id = r.document_id
join vaults v on v.id = d.vault_id
order by r.retrievals desc, r.last_retrieved_at desc, v.name, d.source_path;

-- The views run as the invoker, so granting them to everyone grants nothing the tables do not.
grant select on ragpg_indexed_vaults, ragpg_indexed_folders, ragpg_index_runs_recent, ragpg_largest_notes,
    ragpg_most_retrieved_notes to public;
