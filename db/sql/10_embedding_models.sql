-- Embedding model registration: storage, HNSW cosine index and per-model match functions.
-- Re-applied after every `upgrade head` (create or replace); per-model objects are refreshed too.

create or replace function ragpg_sql_name(p_provider text, p_model text) returns text
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return (
    with base as (
        select trim(both '_' from regexp_replace(lower(p_provider || '_' || p_model), '[^a-z0-9]+', '_', 'g')) as n
    )
    -- Keep `match_hybrid_multi_chunks_<name>` within Postgres' 63-byte identifier limit.
    select case when length(n) <= 36 then n
                else left(n, 29) || '_' || left(md5(n), 6) end
    from base
);

-- The names of a model's functions that embedding_models has no column for (the stored ones are
-- match_function, hybrid_function and langchain_function). Generated here only: the templates in
-- 60_hybrid.sql and 70_folders.sql and the Python registry (rag/store/models.py) read them.
create or replace function ragpg_model_function_name(m embedding_models, p_kind text) returns text
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return case p_kind
    when 'hybrid_multi' then 'match_hybrid_multi_chunks_' || m.sql_name
    when 'folders' then 'match_folders_' || m.sql_name
end;

-- How wide each HNSW insertion searches (pgvector's default is 64). At 1M chunks with the local model's
-- vector geometry (bench/scale_ef.py --vectors model, m 16), 64 never reaches recall@10 0.95 (0.941 at
-- ef_search 800, 0.945 at 1000), 128 does (0.963 at 800, 2.9 ms); the build takes 232 s instead of 131.
create or replace function ragpg_hnsw_ef_construction() returns integer
language sql immutable parallel safe
return 128;

-- A model's HNSW index, defined here only: at registration, and when a bulk load rebuilds it
-- (rag/ingest/hnsw.py), so no index definition is ever read back from a table and executed.
create or replace function ragpg_create_hnsw_index(p_table text) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    if not exists (select from embedding_models where embedding_table = p_table) then
        raise exception using errcode = '42704', message = format('%s is not an embedding table', p_table);
    end if;
    execute format('create index if not exists %I on %I using hnsw (embedding vector_cosine_ops) '
                   'with (m = 16, ef_construction = %s)',
                   p_table || '_hnsw_idx', p_table, ragpg_hnsw_ef_construction());
    -- each vault's graph is named after the model's (<table>_hnsw_idx_p<vault>: 12_vault_partitions.sql)
    perform ragpg_name_partition_indexes(to_regclass(quote_ident(ragpg_vault_partition_name(p_table, v.id))), v.id)
    from vaults v where to_regclass(quote_ident(ragpg_vault_partition_name(p_table, v.id))) is not null;
    perform ragpg_create_shared_partitions();  -- and the shared graph <table>_hnsw_idx_shared
end
$$;

-- Drops an index; returns its qualified name and definition (what deferred_indexes records).
create or replace function ragpg_drop_index_recorded(p_index regclass, out index_name text, out definition text)
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    select format('%I.%I', n.nspname, c.relname), pg_get_indexdef(c.oid) into index_name, definition
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.oid = p_index;
    execute format('drop index %s', index_name);
end
$$;

-- Drops a model's HNSW index before a bulk load; returns its qualified name and definition (kept in
-- deferred_indexes for inspection only: ragpg_create_hnsw_index rebuilds it), or no row when absent.
create or replace function ragpg_drop_hnsw_index(p_table text)
returns table (index_name text, definition text)
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_index regclass;
begin
    if not exists (select from embedding_models where embedding_table = p_table) then
        raise exception using errcode = '42704', message = format('%s is not an embedding table', p_table);
    end if;
    v_index := to_regclass(quote_ident(p_table || '_hnsw_idx'));
    if v_index is null then
        return;
    end if;
    return query select * from ragpg_drop_index_recorded(v_index);
end
$$;

-- Per-model functions are generated from templates in 40_model_functions.sql.
create or replace function ragpg_register_embedding_model(p_provider text, p_model text, p_dims integer)
returns embedding_models
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    v_name text;
    m embedding_models;
begin
    if p_provider is null or p_model is null or btrim(p_provider) = '' or btrim(p_model) = '' then
        raise exception using errcode = '22023', message = 'provider and model must be non-empty';
    end if;
    if p_dims is null or p_dims < 1 or p_dims > 2000 then
        raise exception using errcode = '22023',
            message = format('embedding dims must be between 1 and 2000 (HNSW limit), got %s', p_dims);
    end if;
    select * into m from embedding_models where provider = p_provider and model = p_model;
    if found then
        if m.dims <> p_dims then
            raise exception using errcode = '22023',
                message = format('embedding model %s/%s is registered with %s dims, not %s',
                                 p_provider, p_model, m.dims, p_dims);
        end if;
        perform ragpg_create_model_functions(m);
        return m;
    end if;

    v_name := ragpg_sql_name(p_provider, p_model);
    insert into embedding_models (provider, model, dims, sql_name, embedding_table,
                                  match_function, hybrid_function, langchain_function)
    values (p_provider, p_model, p_dims, v_name, 'embeddings_' || v_name,
            'match_native_chunks_' || v_name, 'match_hybrid_chunks_' || v_name,
            'match_langchain_chunks_' || v_name)
    returning * into m;

    -- partitioned by vault like the chunks (12_vault_partitions.sql), the vault in every key
    execute format(
        'create table if not exists %I (
             vault_id bigint not null,
             chunk_id bigint not null,
             embedding vector(%s) not null,
             primary key (vault_id, chunk_id),
             foreign key (vault_id, chunk_id) references chunks (vault_id, id) on delete cascade
         ) partition by list (vault_id)',
        m.embedding_table, p_dims);
    perform ragpg_create_hnsw_index(m.embedding_table);
    perform ragpg_secure_partitions();  -- the shared partition and each large vault's (12_vault_partitions.sql)
    perform ragpg_secure_content_table(to_regclass(quote_ident(m.embedding_table)));  -- 80_security.sql
    perform ragpg_create_model_functions(m);
    return m;
end
$$;

create or replace function ragpg_refresh_model_functions() returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    m embedding_models;
    n integer := 0;
begin
    for m in select * from embedding_models order by id loop
        perform ragpg_create_model_functions(m);
        n := n + 1;
    end loop;
    return n;
end
$$;
