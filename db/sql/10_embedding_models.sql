-- Embedding model registration: storage, HNSW cosine index and per-model match functions.
-- Re-applied after every `upgrade head` (create or replace); per-model objects are refreshed too.

create or replace function ragpg_sql_name(p_provider text, p_model text) returns text
language sql immutable parallel safe strict
set search_path = pg_catalog
return (
    with base as (
        select trim(both '_' from regexp_replace(lower(p_provider || '_' || p_model), '[^a-z0-9]+', '_', 'g')) as n
    )
    -- Keep `match_hybrid_multi_chunks_<name>` within Postgres' 63-byte identifier limit.
    select case when length(n) <= 36 then n
                else left(n, 29) || '_' || left(md5(n), 6) end
    from base
);

-- Per-model functions are generated from templates in 40_model_functions.sql.
create or replace function ragpg_register_embedding_model(p_provider text, p_model text, p_dims integer)
returns embedding_models
language plpgsql volatile
set search_path = public, pg_catalog
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

    execute format(
        'create table if not exists %I (
             chunk_id bigint primary key references chunks (id) on delete cascade,
             embedding vector(%s) not null)',
        m.embedding_table, p_dims);
    execute format('create index if not exists %I on %I using hnsw (embedding vector_cosine_ops)',
                   m.embedding_table || '_hnsw_idx', m.embedding_table);
    perform ragpg_secure_content_table(to_regclass(quote_ident(m.embedding_table)));  -- 80_security.sql
    perform ragpg_create_model_functions(m);
    return m;
end
$$;

create or replace function ragpg_refresh_model_functions() returns integer
language plpgsql volatile
set search_path = public, pg_catalog
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
