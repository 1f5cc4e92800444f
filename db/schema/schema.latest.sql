--
-- PostgreSQL database dump
--

--
-- Name: vector; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

--
-- Name: ragpg_bm25_stats_add(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_stats_add() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog'
    AS $$
begin
    insert into bm25_vault_stats as s (vault_id, chunk_count, total_length)
    select vault_id, count(*), sum(lexeme_count) from new_rows group by vault_id
    on conflict (vault_id) do update
        set chunk_count = s.chunk_count + excluded.chunk_count,
            total_length = s.total_length + excluded.total_length;

    -- Ordered so concurrent writers lock term rows in the same order (no deadlocks).
    insert into bm25_term_stats as t (vault_id, lexeme, chunk_frequency)
    select n.vault_id, u.lexeme, count(*)
    from new_rows n cross join lateral unnest(n.content_tsv) as u
    group by n.vault_id, u.lexeme
    order by n.vault_id, u.lexeme
    on conflict (vault_id, lexeme) do update
        set chunk_frequency = t.chunk_frequency + excluded.chunk_frequency;
    return null;
end
$$;

--
-- Name: ragpg_bm25_stats_remove(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_stats_remove() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog'
    AS $$
begin
    update bm25_vault_stats s
    set chunk_count = s.chunk_count - o.n, total_length = s.total_length - o.len
    from (select vault_id, count(*) as n, sum(lexeme_count) as len from old_rows group by vault_id) o
    where s.vault_id = o.vault_id;

    with gone as (
        select o.vault_id, u.lexeme, count(*) as n
        from old_rows o cross join lateral unnest(o.content_tsv) as u
        group by o.vault_id, u.lexeme
    )
    update bm25_term_stats t
    set chunk_frequency = t.chunk_frequency - g.n
    from gone g
    where t.vault_id = g.vault_id and t.lexeme = g.lexeme;

    -- Only the lexemes just touched can have dropped to zero.
    delete from bm25_term_stats t
    using (select distinct o.vault_id, u.lexeme
           from old_rows o cross join lateral unnest(o.content_tsv) as u) g
    where t.vault_id = g.vault_id and t.lexeme = g.lexeme and t.chunk_frequency <= 0;
    return null;
end
$$;

--
-- Name: embedding_models; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.embedding_models (
    id integer NOT NULL,
    provider text NOT NULL,
    model text NOT NULL,
    dims integer NOT NULL,
    sql_name text NOT NULL,
    embedding_table text NOT NULL,
    match_function text NOT NULL,
    hybrid_function text NOT NULL,
    langchain_function text NOT NULL,
    registered_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT embedding_models_dims_check CHECK (((dims > 0) AND (dims <= 2000)))
);

--
-- Name: ragpg_create_model_functions(public.embedding_models); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_model_functions(m public.embedding_models) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog'
    AS $$
begin
    return;
end
$$;

--
-- Name: ragpg_refresh_model_functions(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_refresh_model_functions() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog'
    AS $$
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

--
-- Name: ragpg_register_embedding_model(text, text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_register_embedding_model(p_provider text, p_model text, p_dims integer) RETURNS public.embedding_models
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog'
    AS $$
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
    perform ragpg_create_model_functions(m);
    return m;
end
$$;

--
-- Name: ragpg_sql_name(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_sql_name(p_provider text, p_model text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog'
    RETURN (WITH base AS (SELECT TRIM(BOTH '_'::text FROM regexp_replace(lower(((ragpg_sql_name.p_provider || '_'::text) || ragpg_sql_name.p_model)), '[^a-z0-9]+'::text, '_'::text, 'g'::text)) AS n) SELECT CASE WHEN (length(base.n) <= 36) THEN base.n ELSE (("left"(base.n, 29) || '_'::text) || "left"(md5(base.n), 6)) END AS "case" FROM base);

--
-- Name: ragpg_tsvector_token_count(tsvector); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_tsvector_token_count(tsv tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'public'
    RETURN (SELECT (COALESCE(sum(cardinality(u.positions)), (0)::bigint))::integer AS "coalesce" FROM unnest(ragpg_tsvector_token_count.tsv) u(lexeme, positions, weights));

--
-- Name: alembic_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);

--
-- Name: bm25_term_stats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_term_stats (
    vault_id bigint NOT NULL,
    lexeme text NOT NULL,
    chunk_frequency integer NOT NULL,
    CONSTRAINT bm25_term_stats_chunk_frequency_check CHECK ((chunk_frequency >= 0))
);

--
-- Name: bm25_vault_stats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_vault_stats (
    vault_id bigint NOT NULL,
    chunk_count bigint DEFAULT 0 NOT NULL,
    total_length bigint DEFAULT 0 NOT NULL
);

--
-- Name: chunks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.chunks (
    id bigint NOT NULL,
    document_id bigint NOT NULL,
    vault_id bigint NOT NULL,
    ordinal integer NOT NULL,
    heading_path text DEFAULT ''::text NOT NULL,
    content text NOT NULL,
    token_count integer DEFAULT 0 NOT NULL,
    start_line integer,
    end_line integer,
    start_byte integer,
    end_byte integer,
    risk_flags text[] DEFAULT '{}'::text[] NOT NULL,
    risk_score real DEFAULT 0 NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    text_search_config regconfig DEFAULT 'english'::regconfig NOT NULL,
    content_tsv tsvector GENERATED ALWAYS AS (to_tsvector(text_search_config, ((heading_path || ' '::text) || content))) STORED,
    lexeme_count integer GENERATED ALWAYS AS (public.ragpg_tsvector_token_count(to_tsvector(text_search_config, ((heading_path || ' '::text) || content)))) STORED,
    CONSTRAINT chunks_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT chunks_risk_score_check CHECK (((risk_score >= (0)::double precision) AND (risk_score <= (1)::double precision)))
);

--
-- Name: chunks_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.chunks ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.chunks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: documents; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.documents (
    id bigint NOT NULL,
    vault_id bigint NOT NULL,
    source_path text NOT NULL,
    folder text DEFAULT ''::text NOT NULL,
    title text,
    url text,
    doc_type text,
    persona text,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    project text,
    confidentiality text DEFAULT 'public'::text NOT NULL,
    doc_date date,
    document_version text NOT NULL,
    size_bytes bigint NOT NULL,
    indexed_at timestamp with time zone DEFAULT now() NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL
);

--
-- Name: documents_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.documents ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.documents_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: embedding_models_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.embedding_models ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.embedding_models_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: vaults; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vaults (
    id bigint NOT NULL,
    name text NOT NULL,
    root_path text NOT NULL,
    text_search_config regconfig DEFAULT 'english'::regconfig NOT NULL,
    denylist text[] DEFAULT '{}'::text[] NOT NULL,
    settings jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_indexed_at timestamp with time zone,
    CONSTRAINT vaults_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'::text))
);

--
-- Name: vaults_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.vaults ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.vaults_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);

--
-- Name: bm25_term_stats bm25_term_stats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_term_stats
    ADD CONSTRAINT bm25_term_stats_pkey PRIMARY KEY (vault_id, lexeme);

--
-- Name: bm25_vault_stats bm25_vault_stats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_vault_stats
    ADD CONSTRAINT bm25_vault_stats_pkey PRIMARY KEY (vault_id);

--
-- Name: chunks chunks_document_id_ordinal_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_document_id_ordinal_key UNIQUE (document_id, ordinal);

--
-- Name: chunks chunks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_pkey PRIMARY KEY (id);

--
-- Name: documents documents_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id);

--
-- Name: documents documents_vault_id_source_path_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_vault_id_source_path_key UNIQUE (vault_id, source_path);

--
-- Name: embedding_models embedding_models_embedding_table_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.embedding_models
    ADD CONSTRAINT embedding_models_embedding_table_key UNIQUE (embedding_table);

--
-- Name: embedding_models embedding_models_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.embedding_models
    ADD CONSTRAINT embedding_models_pkey PRIMARY KEY (id);

--
-- Name: embedding_models embedding_models_provider_model_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.embedding_models
    ADD CONSTRAINT embedding_models_provider_model_key UNIQUE (provider, model);

--
-- Name: embedding_models embedding_models_sql_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.embedding_models
    ADD CONSTRAINT embedding_models_sql_name_key UNIQUE (sql_name);

--
-- Name: vaults vaults_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vaults
    ADD CONSTRAINT vaults_name_key UNIQUE (name);

--
-- Name: vaults vaults_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vaults
    ADD CONSTRAINT vaults_pkey PRIMARY KEY (id);

--
-- Name: chunks_metadata_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_metadata_idx ON public.chunks USING gin (metadata jsonb_path_ops);

--
-- Name: chunks_tsv_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_tsv_idx ON public.chunks USING gin (content_tsv);

--
-- Name: chunks_vault_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_vault_idx ON public.chunks USING btree (vault_id);

--
-- Name: documents_vault_folder_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX documents_vault_folder_idx ON public.documents USING btree (vault_id, folder);

--
-- Name: chunks chunks_bm25_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_delete AFTER DELETE ON public.chunks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_stats_remove();

--
-- Name: chunks chunks_bm25_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_insert AFTER INSERT ON public.chunks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_stats_add();

--
-- Name: chunks chunks_bm25_update_add; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_update_add AFTER UPDATE ON public.chunks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_stats_add();

--
-- Name: chunks chunks_bm25_update_remove; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_update_remove AFTER UPDATE ON public.chunks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_stats_remove();

--
-- Name: bm25_term_stats bm25_term_stats_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_term_stats
    ADD CONSTRAINT bm25_term_stats_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: bm25_vault_stats bm25_vault_stats_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_vault_stats
    ADD CONSTRAINT bm25_vault_stats_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: chunks chunks_document_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_document_id_fkey FOREIGN KEY (document_id) REFERENCES public.documents(id) ON DELETE CASCADE;

--
-- Name: chunks chunks_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: documents documents_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- PostgreSQL database dump complete
--
