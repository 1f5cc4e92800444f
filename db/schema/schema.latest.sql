--
-- PostgreSQL database dump
--

--
-- Name: vector; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

--
-- Name: match_lexical_chunks(text, integer, jsonb, double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.match_lexical_chunks(query_text text, match_count integer DEFAULT 10, filter jsonb DEFAULT '{}'::jsonb, k1 double precision DEFAULT 0.9, b double precision DEFAULT 0.4) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, bm25_score double precision)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    if query_text is null or query_text !~ '[^[:space:]]' then
        raise exception using errcode = '22023', message = 'query_text is empty';
    end if;
    return query select * from ragpg_match_lexical_impl(query_text, match_count, filter, k1, b);
end
$$;

--
-- Name: ragpg_caller_level(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_caller_level() RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    if not pg_catalog.row_security_active('public.link_targets'::regclass) then
        return 4;
    end if;
    return ragpg_scope_clearance_rank(current_user);
end
$$;

--
-- Name: ragpg_note_id(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_note_id(p_vault text, p_path text) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_id bigint;
begin
    perform ragpg_check_vault_names(array[p_vault]);
    select d.id into v_id
    from documents d join vaults v on v.id = d.vault_id
    where v.name = p_vault and d.source_path = p_path;
    if v_id is null then
        raise exception using errcode = 'P0002', message = format('no note %L in vault %L', p_path, p_vault);
    end if;
    return v_id;
end
$$;

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
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    links_indexed boolean DEFAULT false NOT NULL
);

--
-- Name: link_targets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.link_targets (
    vault_id bigint NOT NULL,
    link_id bigint NOT NULL,
    level smallint NOT NULL,
    target_document_id bigint,
    CONSTRAINT link_targets_level_check CHECK (((level >= 1) AND (level <= 4)))
);

--
-- Name: links; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.links (
    id bigint NOT NULL,
    vault_id bigint NOT NULL,
    source_document_id bigint NOT NULL,
    line integer NOT NULL,
    kind text NOT NULL,
    target_text text NOT NULL,
    target_heading text,
    target_is_file boolean DEFAULT false NOT NULL,
    anchor_text text NOT NULL,
    sentence text NOT NULL,
    CONSTRAINT links_kind_check CHECK ((kind = ANY (ARRAY['link'::text, 'embed'::text]))),
    CONSTRAINT links_line_check CHECK ((line >= 1))
);

--
-- Name: ragpg_backlinks(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_backlinks(p_vault text, p_path text) RETURNS TABLE(source_path text, source_title text, link_count integer, line integer, kind text, anchor_text text, target_heading text, sentence text)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT DISTINCT ON (s.source_path) s.source_path,
     s.title,
     (count(*) OVER (PARTITION BY s.source_path))::integer AS count,
     l.line,
     l.kind,
     l.anchor_text,
     l.target_heading,
     l.sentence
    FROM ((public.link_targets r
      JOIN public.links l ON (((l.vault_id = r.vault_id) AND (l.id = r.link_id))))
      JOIN public.documents s ON ((s.id = l.source_document_id)))
   WHERE ((r.target_document_id = public.ragpg_note_id(ragpg_backlinks.p_vault, ragpg_backlinks.p_path)) AND (r.level = ( SELECT public.ragpg_caller_level() AS ragpg_caller_level)))
   ORDER BY s.source_path, l.line, l.id;
END;

--
-- Name: ragpg_bm25_defer(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_defer(p_vault_id bigint) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    insert into bm25_deferred (vault_id, after_chunk_id)
    values (p_vault_id, coalesce(pg_sequence_last_value(pg_get_serial_sequence('chunks', 'id')::regclass), 0))
    on conflict (vault_id) do nothing;
    return found;
end
$$;

--
-- Name: ragpg_bm25_drop_orphan_tables(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_drop_orphan_tables() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    t text;
    n integer := 0;
begin
    for t in select c.relname from pg_class c
             where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace
               and c.relname ~ '^ragpg_bm25_[0-9]+$'
               and c.relname not in (select table_name from bm25_indexes) loop
        execute format('drop table %I', t);
        n := n + 1;
    end loop;
    return n;
end
$_$;

--
-- Name: ragpg_bm25_exact_scores(bigint[], bigint[], bigint[], regconfig[], text[], double precision[], double precision[], double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_exact_scores(p_chunk_ids bigint[], p_chunk_vault_ids bigint[], vault_ids bigint[], cfgs regconfig[], lexemes text[], weights double precision[], avgdls double precision[], k1 double precision, b double precision) RETURNS TABLE(chunk_id bigint, bm25_score double precision)
    LANGUAGE plpgsql STABLE ROWS 60
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'auto'
    AS $$
#variable_conflict use_column
declare
    -- The candidates sorted by (vault, id), and each vault's slice of them: a term's probe reads only
    -- its own vault's candidates. With every vault's candidates in each probe, the index scan sorted
    -- the whole id list once a probe (100 vaults: 1,000 probes of 6,000 ids, 0.75 s of a 0.8 s search
    -- naming no vault).
    v_ids bigint[];
    v_vaults bigint[];
    v_firsts integer[];
    v_lasts integer[];
begin
    -- One cached plan, pruned to the vaults' partitions when it starts: their number is bounded
    -- (12_vault_partitions.sql). Planned per call with the vaults as constants (ragpg_plan_cache_mode_for),
    -- a search naming no vault over 1,000 vaults, whose candidates come from a few hundred small
    -- vaults, spent ~20 ms of its ~150 ms planning this statement (1M chunks; a one-vault search and
    -- the filters inside a vault the same either way).
    perform set_config('plan_cache_mode', 'force_generic_plan', true);
    if row_security_active('public.chunks'::regclass) then
        -- A role bound by row-level security scores only chunks it reads: the server's reader reads
        -- postings by vault alone (its policy leaves the rest to the chunk). The owner skips this.
        select array_agg(c.id), array_agg(c.vault_id) into p_chunk_ids, p_chunk_vault_ids
        from unnest(p_chunk_ids, p_chunk_vault_ids) as u (id, vault_id)
        join chunks c on c.vault_id = u.vault_id and c.id = u.id;
    end if;
    select array_agg(x.id order by x.n), array_agg(x.vault_id order by x.n) filter (where x.first),
           array_agg(x.n order by x.n) filter (where x.first), array_agg(x.n order by x.n) filter (where x.last)
    into v_ids, v_vaults, v_firsts, v_lasts
    from (select u.id, u.vault_id, row_number() over w as n,
                 lag(u.vault_id) over w is distinct from u.vault_id as first,
                 lead(u.vault_id) over w is distinct from u.vault_id as last
          from unnest(p_chunk_ids, p_chunk_vault_ids) as u (id, vault_id)
          window w as (order by u.vault_id, u.id)) x;
    -- (plpgsql for its cached plan: as a SQL function with a SET clause it was planned on every call,
    -- twice the cost of scoring ten chunks)
    return query
    select p.chunk_id, sum(tm.wk * p.tf / (p.tf + tm.c1 + tm.c2 * p.dl))
    from ragpg_bm25_term_constants(vault_ids, cfgs, lexemes, weights, avgdls, k1, b) tm
    -- lateral: each term probes its own vault's partition by (vault, lexeme, chunk); a join let the
    -- planner merge every vault's postings (1 s at 100 vaults). The terms drive the loop, so each
    -- chunk's score is summed in the SQL BM25's order (the same float, to the last bit).
    cross join lateral (select pp.chunk_id, pp.tf, pp.dl from bm25_postings pp
                        where pp.vault_id = tm.vault_id and pp.lexeme = tm.lexeme
                          and pp.chunk_id = any(v_ids[v_firsts[array_position(v_vaults, tm.vault_id)]
                                                      : v_lasts[array_position(v_vaults, tm.vault_id)]])
                          and pp.text_search_config = tm.cfg
                          -- the vaults as a value known when the plan starts: only their partitions
                          -- are opened (pruning on tm.vault_id alone opened all 1,000 of a
                          -- 1,000-vault database on every call: 154 ms of a one-vault search)
                          and pp.vault_id = any(vault_ids)
                        offset 0) p  -- (kept a probe per term: flattened, it became a scan of the vault)
    group by p.chunk_id;
end
$$;

--
-- Name: ragpg_bm25_filtered_depth(jsonb, jsonpath, jsonb, text[], integer, double precision, double precision, bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_filtered_depth(p_containment jsonb, p_predicate jsonpath, p_vars jsonb, p_vaults text[], candidate_count integer, k1 double precision, b double precision, p_postings bigint, p_listed_count bigint DEFAULT NULL::bigint) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: ragpg_bm25_filtered_depth_factor(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_filtered_depth_factor() RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 1.5;

--
-- Name: ragpg_bm25_filtered_max_depth(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_filtered_max_depth() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 10000;

--
-- Name: ragpg_bm25_index_available(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_index_available() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    RETURN ((current_setting('pg_textsearch.library_version'::text, true) IS NOT NULL) AND (EXISTS (SELECT 1 FROM pg_extension WHERE (pg_extension.extname = 'pg_textsearch'::name))));

--
-- Name: ragpg_bm25_index_candidates(text, integer, bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_index_candidates(query_text text, candidate_count integer, p_vault_ids bigint[], OUT ids bigint[], OUT vault_ids bigint[]) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'auto'
    AS $_$
declare
    i record;
    r record;
begin
    ids := '{}';
    vault_ids := '{}';
    -- (the shared table once, whatever number of small vaults it holds: ragpg_lexical_backend sends
    -- here only searches that cover every vault in it)
    for i in select min(x.vault_id) as vault_id, x.table_name, min(x.index_name) as index_name,
                    x.table_name = ragpg_bm25_shared_table() as shared
             from bm25_indexes x
             where x.vault_id in (select distinct u from unnest(p_vault_ids) u)
             group by x.table_name order by 1 loop
        -- A top-level query, read row by row: pg_textsearch's planner hook serves the ORDER BY score
        -- from the index scan only there; inside a subquery (array(select ...)) every row's score is
        -- computed again from its text (about 0.25 ms a row).
        for r in execute format('select t.chunk_id, (%s)::bigint as vault_id from %I t
                                 order by t.search_text <@> to_bm25query($1, %L) limit $2',
                                case when i.shared then 't.vault_id' else i.vault_id::text end,
                                i.table_name, i.index_name)
                 using query_text, (candidate_count + ragpg_bm25_index_extra_candidates())
                                   * case when i.shared then ragpg_bm25_shared_depth_factor() else 1 end loop
            ids := ids || r.chunk_id;
            vault_ids := vault_ids || r.vault_id;
        end loop;
    end loop;
end
$_$;

--
-- Name: ragpg_bm25_index_drop_table(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_index_drop_table() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
begin
    if current_setting('pg_textsearch.library_version', true) is null then
        return old;
    end if;
    if old.table_name = ragpg_bm25_shared_table() then
        -- (the shared table: only this vault's rows go; it goes when no vault is left in it)
        if not exists (select 1 from bm25_indexes x where x.table_name = old.table_name) then
            execute format('drop table if exists %I', old.table_name);
        elsif to_regclass(quote_ident(old.table_name)) is not null then
            execute format('delete from %I where vault_id = $1', old.table_name) using old.vault_id;
        end if;
    else
        execute format('drop table if exists %I', old.table_name);
    end if;
    return old;
end
$_$;

--
-- Name: ragpg_bm25_index_extra_candidates(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_index_extra_candidates() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 20;

--
-- Name: ragpg_bm25_index_sync(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_index_sync() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    i record;
begin
    if not exists (select 1 from bm25_indexes) or ragpg_moving_vault() then
        -- (a vault moving between partitions: its rows come back unchanged, 12_vault_partitions.sql)
        return null;
    end if;
    if current_setting('pg_textsearch.library_version', true) is null then
        -- Started without pg_textsearch: a bm25 index cannot take rows now, and one left behind would
        -- be stale. The touched vaults lose theirs (searches already use the SQL BM25 without the
        -- library); their next index run on a server that has it builds a fresh one.
        if tg_op in ('DELETE', 'UPDATE') then
            delete from bm25_indexes x where x.vault_id in (select o.vault_id from old_rows o);
        end if;
        if tg_op in ('INSERT', 'UPDATE') then
            delete from bm25_indexes x where x.vault_id in (select n.vault_id from new_rows n);
        end if;
        return null;
    end if;
    if tg_op in ('DELETE', 'UPDATE') then
        for i in select x.vault_id, x.table_name from bm25_indexes x
                 where x.vault_id in (select distinct o.vault_id from old_rows o) loop
            execute format('delete from %I t using old_rows o where t.chunk_id = o.id and o.vault_id = $1',
                           i.table_name) using i.vault_id;
        end loop;
    end if;
    if tg_op in ('INSERT', 'UPDATE') then
        for i in select x.vault_id, x.table_name from bm25_indexes x
                 where x.vault_id in (select distinct n.vault_id from new_rows n) loop
            execute format('insert into %I (%s chunk_id, search_text)
                            select %s n.id, ragpg_chunk_search_text(n.heading_path, n.content, n.metadata)
                            from new_rows n
                            where n.vault_id = $1 order by n.id', i.table_name,
                           case when i.table_name = ragpg_bm25_shared_table() then 'vault_id,' else '' end,
                           case when i.table_name = ragpg_bm25_shared_table() then 'n.vault_id,' else '' end)
                using i.vault_id;
        end loop;
    end if;
    return null;
end
$_$;

--
-- Name: ragpg_bm25_lock_down(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_lock_down() RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_fn regprocedure;
begin
    for v_fn in select d.objid::regprocedure from pg_depend d join pg_extension e on e.oid = d.refobjid
                where e.extname = 'pg_textsearch' and d.classid = 'pg_proc'::regclass and d.deptype = 'e' loop
        execute format('revoke all on function %s from public', v_fn);
    end loop;
    return not exists (
        select 1 from pg_depend d join pg_extension e on e.oid = d.refobjid join pg_proc p on p.oid = d.objid
        where e.extname = 'pg_textsearch' and d.classid = 'pg_proc'::regclass and d.deptype = 'e'
          and (p.proacl is null  -- the default: PUBLIC may execute
               or exists (select 1 from aclexplode(p.proacl) a where a.grantee = 0 and a.privilege_type = 'EXECUTE')));
end
$$;

--
-- Name: ragpg_bm25_restore(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_restore(p_vault_id bigint) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_after bigint;
    v_chunks bigint;
begin
    delete from bm25_deferred where vault_id = p_vault_id returning after_chunk_id into v_after;
    if not found then
        return 0;
    end if;
    with n as (
        select ragpg_chunk_level(c.metadata) as level, count(*) as chunk_count,
               coalesce(sum(c.lexeme_count), 0) as total_length
        from chunks c where c.vault_id = p_vault_id and c.id > v_after
        group by 1
    ), added as (
        insert into bm25_vault_stats as s (vault_id, level, chunk_count, total_length)
        select p_vault_id, n.level, n.chunk_count, n.total_length from n
        on conflict (vault_id, level) do update
            set chunk_count = s.chunk_count + excluded.chunk_count,
                total_length = s.total_length + excluded.total_length
    )
    select sum(n.chunk_count) into v_chunks from n;

    insert into bm25_term_stats as t (vault_id, lexeme, level, chunk_frequency)
    select c.vault_id, u.lexeme, ragpg_chunk_level(c.metadata), count(*)
    from chunks c cross join lateral unnest(c.content_tsv) as u
    where c.vault_id = p_vault_id and c.id > v_after
    group by 1, 2, 3
    order by c.vault_id, u.lexeme collate "C", 3
    on conflict (vault_id, lexeme, level) do update
        set chunk_frequency = t.chunk_frequency + excluded.chunk_frequency;

    -- In primary-key order while the key's index exists (its leaf pages then fill left to right);
    -- a bulk load drops it (25_bulk_load.sql) and the rows go in as they come, no sort needed.
    if to_regclass('bm25_postings_pkey') is not null then
        insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config)
        select c.vault_id, u.lexeme, c.id, coalesce(cardinality(u.positions), 1), c.lexeme_count, c.text_search_config
        from chunks c cross join lateral unnest(c.content_tsv) as u
        where c.vault_id = p_vault_id and c.id > v_after
        order by c.vault_id, u.lexeme collate "C", c.id;
    else
        insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config)
        select c.vault_id, u.lexeme, c.id, coalesce(cardinality(u.positions), 1), c.lexeme_count, c.text_search_config
        from chunks c cross join lateral unnest(c.content_tsv) as u
        where c.vault_id = p_vault_id and c.id > v_after;
    end if;
    return coalesce(v_chunks, 0);
end
$$;

--
-- Name: ragpg_bm25_shared_add(bigint, regconfig, double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_shared_add(p_vault_id bigint, p_config regconfig, p_k1 double precision, p_b double precision) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    v_table text := ragpg_bm25_shared_table();
    v_index text := ragpg_bm25_shared_table() || '_idx';
    v_fresh boolean;
    i record;
begin
    select * into i from bm25_indexes x where x.table_name = v_table limit 1;
    if found and (i.k1 <> p_k1 or i.b <> p_b or i.text_search_config <> p_config) then
        return false;
    end if;
    v_fresh := not found or to_regclass(quote_ident(v_table)) is null;
    if v_fresh then
        execute format('drop table if exists %I', v_table);
        execute format('create table %I (vault_id bigint not null, chunk_id bigint not null, search_text text not null,
                                         primary key (vault_id, chunk_id))', v_table);
    end if;
    execute format('insert into %I (vault_id, chunk_id, search_text)
                    select vault_id, id, ragpg_chunk_search_text(heading_path, content, metadata)
                    from chunks where vault_id = $1 order by id', v_table) using p_vault_id;
    if v_fresh then
        execute format('create index %I on %I using bm25 (search_text) with (text_config = %L, k1 = %s, b = %s)',
                       v_index, v_table, p_config::text, p_k1, p_b);
        perform ragpg_secure_content_table(to_regclass(quote_ident(v_table)));  -- 80_security.sql
    end if;
    insert into bm25_indexes (vault_id, table_name, index_name, text_search_config, k1, b)
    values (p_vault_id, v_table, v_index, p_config, p_k1, p_b);
    return true;
end
$_$;

--
-- Name: ragpg_bm25_shared_depth_factor(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_shared_depth_factor() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 4;

--
-- Name: ragpg_bm25_shared_table(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_shared_table() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 'ragpg_bm25_shared'::text;

--
-- Name: ragpg_bm25_stats_sync(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_stats_sync() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    -- A bulk load is deferring some vault's bookkeeping (ragpg_bm25_defer): that vault's rows above
    -- its watermark have no postings and are not counted; ragpg_bm25_restore adds them in one pass.
    -- Looked up once per statement; without a deferral (the usual case) the per-row test in the
    -- statements below is never evaluated. (Inline rather than a function: one the planner can
    -- see into.)
    v_deferring boolean := exists (select from bm25_deferred);
    v_old boolean;
    v_new boolean;
begin
    if ragpg_moving_vault() then
        return null;  -- a vault's rows moving between partitions, unchanged (12_vault_partitions.sql)
    end if;
    v_old := tg_op in ('DELETE', 'UPDATE');
    v_new := tg_op in ('INSERT', 'UPDATE');
    -- A statement of deferred rows only (every batch of a bulk load) has nothing to do here. (Separate
    -- ifs: a transition table exists only for the operations that have one.)
    if v_deferring and v_old then
        v_old := exists (select from old_rows r where not exists (
            select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id));
    end if;
    if v_deferring and v_new then
        v_new := exists (select from new_rows r where not exists (
            select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id));
    end if;

    if v_old then
        update bm25_vault_stats s
        set chunk_count = s.chunk_count - o.n, total_length = s.total_length - o.len
        from (select vault_id, ragpg_chunk_level(metadata) as level, count(*) as n, sum(lexeme_count) as len
              from (select * from old_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) o
              group by 1, 2) o
        where s.vault_id = o.vault_id and s.level = o.level;

        -- By primary key: every posting of an old row is (its vault, one of its lexemes, its id).
        delete from bm25_postings p
        using (select * from old_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) o
              cross join lateral unnest(o.content_tsv) as u
        where p.vault_id = o.vault_id and p.lexeme = u.lexeme and p.chunk_id = o.id;

        with gone as (
            select o.vault_id, u.lexeme, ragpg_chunk_level(o.metadata) as level, count(*) as n
            from (select * from old_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) o
                 cross join lateral unnest(o.content_tsv) as u
            group by 1, 2, 3
        )
        update bm25_term_stats t
        set chunk_frequency = t.chunk_frequency - g.n
        from gone g
        where t.vault_id = g.vault_id and t.lexeme = g.lexeme and t.level = g.level;

        -- Only the lexemes just touched can have dropped to zero.
        delete from bm25_term_stats t
        using (select distinct o.vault_id, u.lexeme, ragpg_chunk_level(o.metadata) as level
               from old_rows o cross join lateral unnest(o.content_tsv) as u) g
        where t.vault_id = g.vault_id and t.lexeme = g.lexeme and t.level = g.level and t.chunk_frequency <= 0;
    end if;

    if v_new then
        insert into bm25_vault_stats as s (vault_id, level, chunk_count, total_length)
        select vault_id, ragpg_chunk_level(metadata), count(*), sum(lexeme_count)
        from (select * from new_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) n
        group by 1, 2
        on conflict (vault_id, level) do update
            set chunk_count = s.chunk_count + excluded.chunk_count,
                total_length = s.total_length + excluded.total_length;

        -- Ordered so concurrent writers lock term rows in the same order (no deadlocks). Sorts here
        -- use collate "C" (byte order): the database's default collation may be a libc one (the
        -- embedded server's C.UTF-8 is), whose strcoll comparisons made sorting a bulk load's
        -- postings ~40% slower; the order only needs to be consistent and close to the btree's.
        insert into bm25_term_stats as t (vault_id, lexeme, level, chunk_frequency)
        select n.vault_id, u.lexeme, ragpg_chunk_level(n.metadata), count(*)
        from (select * from new_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) n
             cross join lateral unnest(n.content_tsv) as u
        group by 1, 2, 3
        order by n.vault_id, u.lexeme collate "C", 3
        on conflict (vault_id, lexeme, level) do update
            set chunk_frequency = t.chunk_frequency + excluded.chunk_frequency;

        -- tf: the lexeme's positions in the chunk (1 when the tsvector holds none). In primary-key
        -- order: the btree then fills leaf pages left to right instead of jumping between them
        -- (a third less time for SciFact's ~490k postings).
        insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config)
        select n.vault_id, u.lexeme, n.id, coalesce(cardinality(u.positions), 1), n.lexeme_count,
               n.text_search_config
        from (select * from new_rows r where not v_deferring or not exists (
                  select from bm25_deferred d where d.vault_id = r.vault_id and r.id > d.after_chunk_id)) n
             cross join lateral unnest(n.content_tsv) as u
        order by n.vault_id, u.lexeme collate "C", n.id;
    end if;
    return null;
end
$$;

--
-- Name: ragpg_bm25_term_constants(bigint[], regconfig[], text[], double precision[], double precision[], double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_bm25_term_constants(vault_ids bigint[], cfgs regconfig[], lexemes text[], weights double precision[], avgdls double precision[], k1 double precision, b double precision) RETURNS TABLE(vault_id bigint, cfg regconfig, lexeme text, wk double precision, c1 double precision, c2 double precision)
    LANGUAGE plpgsql IMMUTABLE ROWS 8 PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    return query
    select u.vault_id, u.cfg, u.lexeme, u.w * (k1 + 1), k1 * (1 - b), k1 * b / u.avgdl
    from unnest(vault_ids, cfgs, lexemes, weights, avgdls) as u (vault_id, cfg, lexeme, w, avgdl);
end
$$;

--
-- Name: ragpg_cached_query_embeddings(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_cached_query_embeddings(p_query text) RETURNS TABLE(model_id integer, provider text, model text, sql_name text, embedding public.vector, last_used_at timestamp with time zone)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select q.model_id, m.provider, m.model, m.sql_name, q.embedding, q.last_used_at
    from query_embeddings q
    join embedding_models m on m.id = q.model_id
    where q.query_key = ragpg_query_key(p_query)
    order by q.cached_by = current_user desc, q.last_used_at desc, q.model_id
$$;

--
-- Name: ragpg_check_bm25_params(double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_check_bm25_params(k1 double precision, b double precision) RETURNS void
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_check_hybrid_args(integer, integer, jsonb, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_check_hybrid_args(match_count integer, rrf_k integer, weights jsonb, candidate_count integer, OUT vector_weight double precision, OUT lexical_weight double precision) RETURNS record
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_check_match_count(integer, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_check_match_count(p_match_count integer, p_name text DEFAULT 'match_count'::text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_match_count is null or p_match_count < 1 or p_match_count > 1000 then
        raise exception using errcode = '22023',
            message = format('%s must be between 1 and 1000, got %s', p_name, coalesce(p_match_count::text, 'null'));
    end if;
end
$$;

--
-- Name: ragpg_check_vault_names(text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_check_vault_names(p_names text[]) RETURNS void
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_missing text;
begin
    if p_names is null then
        return;
    end if;
    select u.n into v_missing
    from unnest(p_names) with ordinality as u(n, i)
    where not exists (select 1 from vaults v where v.name = u.n)
    order by u.i
    limit 1;
    if v_missing is not null then
        raise exception using errcode = '42704',
            message = format('unknown vault %s (known: %s)', ragpg_vault_label(v_missing),
                             coalesce((select string_agg(v.name, ', ' order by v.name) from vaults v), 'none'));
    end if;
end
$$;

--
-- Name: ragpg_check_vector_query(public.vector, integer, text, double precision, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_check_vector_query(p_query public.vector, p_dims integer, p_model text, p_threshold double precision, p_match_count integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_level_rank(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_level_rank(p_level text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN array_position(ARRAY['public'::text, 'internal'::text, 'confidential'::text, 'restricted'::text], p_level);

--
-- Name: ragpg_chunk_level(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_chunk_level(p_metadata jsonb) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (COALESCE(public.ragpg_level_rank((p_metadata ->> 'confidentiality'::text)), 4))::smallint;

--
-- Name: ragpg_chunk_readable(text, jsonb, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_chunk_readable(p_document_level text, p_metadata jsonb, p_levels text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((p_levels IS NULL) OR ((COALESCE(p_document_level, 'restricted'::text) = ANY (p_levels)) AND (COALESCE((p_metadata ->> 'confidentiality'::text), 'restricted'::text) = ANY (p_levels))));

--
-- Name: ragpg_chunk_rows(bigint[], bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_chunk_rows(p_chunk_ids bigint[], p_vault_ids bigint[]) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb)
    LANGUAGE plpgsql STABLE ROWS 10
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'auto'
    AS $$
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

--
-- Name: ragpg_chunk_search_text(text, text, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_chunk_search_text(p_heading_path text, p_content text, p_metadata jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select concat_ws(' ', ragpg_note_names(p_metadata), p_heading_path, p_content)
$$;

--
-- Name: ragpg_chunks_tsvector(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_chunks_tsvector() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    if tg_op = 'UPDATE' and new.heading_path is not distinct from old.heading_path
            and new.content is not distinct from old.content
            and ragpg_note_names(new.metadata) is not distinct from ragpg_note_names(old.metadata)
            and new.text_search_config is not distinct from old.text_search_config then
        new.content_tsv := old.content_tsv;
        new.lexeme_count := old.lexeme_count;
        return new;
    end if;
    new.content_tsv := to_tsvector(new.text_search_config,
                                   ragpg_chunk_search_text(new.heading_path, new.content, new.metadata));
    new.lexeme_count := ragpg_tsvector_token_count(new.content_tsv);
    return new;
end
$$;

--
-- Name: ragpg_close_console_write_paths(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_close_console_write_paths() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_fn regprocedure;
begin
    if exists (select 1 from pg_catalog.pg_database d where d.datname = current_database()
               and (d.datdba = (select oid from pg_catalog.pg_roles where rolname = current_user)
                    or (select rolsuper from pg_catalog.pg_roles where rolname = current_user))) then
        execute format('grant temporary on database %I to %I', current_database(), current_user);
        execute format('revoke temporary on database %I from public', current_database());
    end if;
    if not (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
        return;
    end if;
    for v_fn in select p.oid::regprocedure from pg_catalog.pg_proc p
                where p.pronamespace = 'pg_catalog'::regnamespace
                  and (p.proname like 'lo\_%' or p.proname in ('lowrite', 'loread')
                       or p.proname like 'pg\_%advisory\_%') loop
        execute format('revoke execute on function %s from public', v_fn);
        execute format('grant execute on function %s to %I', v_fn, current_user);
    end loop;
end
$$;

--
-- Name: ragpg_close_partition(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_close_partition(p_partition text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    execute format('revoke all on %I from public', p_partition);
    execute format('alter table %I enable row level security', p_partition);
end
$$;

--
-- Name: ragpg_compile_filter(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_compile_filter(filter jsonb, OUT containment jsonb, OUT predicate jsonpath, OUT vars jsonb, OUT vaults text[]) RETURNS record
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_part record;
begin
    containment := '{}';
    vars := '{}';
    if filter is null or filter = '{}'::jsonb then
        return;
    end if;
    if jsonb_typeof(filter) <> 'object' then
        perform ragpg_invalid_filter('expected a JSON object, got ' || jsonb_typeof(filter));
    end if;
    if octet_length(filter::text) > 65536 then
        perform ragpg_invalid_filter('larger than 64 kB');
    end if;
    -- Just a vault restriction (what compute_context sends): no predicate to build.
    if filter ? 'vault' and (select count(*) from jsonb_object_keys(filter)) = 1 then
        vaults := ragpg_filter_vault_names(filter -> 'vault');
        return;
    end if;
    select * into v_part from ragpg_filter_compile_object(filter, 1, '{}', true);
    containment := v_part.containment;
    vars := v_part.vars;
    vaults := v_part.vaults;
    if v_part.expr is not null then
        predicate := v_part.expr::jsonpath;
    end if;
end
$$;

--
-- Name: ragpg_console_write_paths(name); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_console_write_paths(p_role name) RETURNS text[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce(array_agg(w.path order by w.path), '{}') from (
        select 'large objects (lo_create)' as path
        where pg_catalog.has_function_privilege(p_role, 'pg_catalog.lo_create(oid)', 'execute')
           or pg_catalog.has_function_privilege(p_role, 'pg_catalog.lo_from_bytea(oid, bytea)', 'execute')
        union all
        select 'advisory locks (pg_advisory_lock)'
        where pg_catalog.has_function_privilege(p_role, 'pg_catalog.pg_advisory_lock(bigint)', 'execute')
        union all
        select 'temporary tables (TEMPORARY on the database)'
        where pg_catalog.has_database_privilege(p_role, current_database(), 'temporary')
        union all
        select 'new schemas (CREATE on the database)'
        where pg_catalog.has_database_privilege(p_role, current_database(), 'create')
        union all
        select format('new tables in schema %s', n.nspname) from pg_catalog.pg_namespace n
        where n.nspname not like 'pg\_temp\_%' and n.nspname not like 'pg\_toast\_temp\_%'
          and pg_catalog.has_schema_privilege(p_role, n.oid, 'create')
    ) w
$$;

--
-- Name: ragpg_content_tables(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_content_tables() RETURNS SETOF regclass
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    -- to_regclass: a table a later revision adds is simply absent after a downgrade
    select to_regclass(t) from unnest(array['vaults', 'documents', 'chunks', 'bm25_postings', 'bm25_term_stats',
                                            'bm25_vault_stats', 'embedding_models', 'document_retrievals',
                                            'bm25_indexes', 'bm25_deferred', 'query_embeddings',
                                            'links', 'link_targets', 'note_vectors']) as t
    where to_regclass(t) is not null
    union all
    select to_regclass(quote_ident(embedding_table)) from embedding_models
    where to_regclass(quote_ident(embedding_table)) is not null
    union all
    -- each vault's bm25 index table (55_bm25_index.sql): chunk text, keyed on the chunk
    select to_regclass(quote_ident(table_name)) from bm25_indexes
    where to_regclass(quote_ident(table_name)) is not null
$$;

--
-- Name: ragpg_create_chunk_indexes(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_chunk_indexes() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_missing integer := 0;
begin
    if to_regclass('chunks_metadata_idx') is null then
        create index chunks_metadata_idx on chunks using gin (metadata jsonb_path_ops);
        v_missing := v_missing + 1;
    end if;
    if to_regclass('chunks_folder_idx') is null then
        create index chunks_folder_idx on chunks ((metadata ->> 'folder') text_pattern_ops);
        v_missing := v_missing + 1;
    end if;
    if to_regclass('chunks_date_idx') is null then
        create index chunks_date_idx on chunks (((metadata ->> 'date') collate "C"));
        v_missing := v_missing + 1;
    end if;
    if to_regclass('bm25_postings_pkey') is null then
        alter table bm25_postings add constraint bm25_postings_pkey
            primary key (vault_id, lexeme, chunk_id) include (tf, dl, text_search_config);
        v_missing := v_missing + 1;
    end if;
    perform ragpg_secure_partitions();  -- names each partition's new indexes (12_vault_partitions.sql)
    return v_missing;
end
$$;

--
-- Name: ragpg_create_chunk_triggers(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_chunk_triggers(p_prefix text, p_function text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v record;
begin
    for v in select * from (values ('insert', 'new table as new_rows'), ('delete', 'old table as old_rows'),
                                   ('update', 'old table as old_rows new table as new_rows')) t (event, tables) loop
        execute format('create or replace trigger %I after %s on chunks referencing %s '
                       'for each statement execute function %I()', p_prefix || '_' || v.event, v.event, v.tables,
                       p_function);
    end loop;
end
$$;

--
-- Name: ragpg_create_deferred_indexes(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_deferred_indexes(p_table text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_table = 'chunks' then
        perform ragpg_create_chunk_indexes();
    elsif exists (select from embedding_models m where m.embedding_table = p_table) then
        perform ragpg_create_hnsw_index(p_table);
    else
        perform ragpg_restore_vault_hnsw(p_table);  -- one vault's partition (above)
    end if;
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
-- Name: ragpg_create_folder_functions(public.embedding_models, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_folder_functions(m public.embedding_models, p_set text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_name text := ragpg_model_function_name(m, 'folders');
    v_label text := m.provider || '/' || m.model;
begin
    perform ragpg_define_function(v_name, 'vector, bigint[], integer', format(
        '%I(query_embedding vector, vault_ids bigint[] default null, match_count integer default 50)
         returns table (vault_id bigint, vault text, folder text, chunk_count bigint, similarity float8)
         language sql stable
         set search_path = public, pg_catalog, pg_temp
         as %L',
        v_name,
        format('select * from ragpg_match_folders_impl(%L, %s, %L, query_embedding, vault_ids, match_count)',
               m.embedding_table, m.dims, v_label)));
    execute format('comment on function %I(vector, bigint[], integer) is %L', v_name,
                   format('Folders ranked by similarity to their mean chunk embedding (model %s).', v_label));
end
$$;

--
-- Name: ragpg_create_hnsw_index(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_hnsw_index(p_table text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_create_hybrid_functions(public.embedding_models, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_hybrid_functions(m public.embedding_models, p_set text, p_chunk_cols text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_create_model_functions(public.embedding_models); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_model_functions(m public.embedding_models) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_create_shared_partitions(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_shared_partitions() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_table regclass;
    v_name text;
    v_made integer := 0;
    r record;
begin
    for v_table in select * from ragpg_vault_partitioned_tables() loop
        v_name := ragpg_shared_partition_name((select relname from pg_class where oid = v_table));
        if to_regclass(quote_ident(v_name)) is null then
            execute format('create table %I partition of %s default', v_name, v_table);
            v_made := v_made + 1;
        end if;
        perform ragpg_close_partition(v_name);
        for r in select ci.relname as child, cp.relname as parent
                 from pg_index i
                 join pg_class ci on ci.oid = i.indexrelid
                 join pg_inherits h on h.inhrelid = i.indexrelid
                 join pg_class cp on cp.oid = h.inhparent
                 where i.indrelid = to_regclass(quote_ident(v_name))
                   and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid) loop
            if r.child <> ragpg_shared_partition_name(r.parent)
               and to_regclass(quote_ident(ragpg_shared_partition_name(r.parent))) is null then
                execute format('alter index %I rename to %I', r.child, ragpg_shared_partition_name(r.parent));
            end if;
        end loop;
    end loop;
    return v_made;
end
$$;

--
-- Name: ragpg_create_vault_partitions(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_create_vault_partitions(p_vault_id bigint) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_table regclass;
    v_name text;
    v_made integer := 0;
begin
    for v_table in select * from ragpg_vault_partitioned_tables() loop
        v_name := ragpg_vault_partition_name((select relname from pg_class where oid = v_table), p_vault_id);
        if to_regclass(quote_ident(v_name)) is null then
            execute format('create table %I partition of %s for values in (%s)', v_name, v_table, p_vault_id);
            v_made := v_made + 1;
        end if;
        perform ragpg_close_partition(v_name);
        perform ragpg_name_partition_indexes(to_regclass(quote_ident(v_name)), p_vault_id);
    end loop;
    return v_made;
end
$$;

--
-- Name: ragpg_defer_vault_hnsw(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_defer_vault_hnsw(p_partition text) RETURNS TABLE(index_name text, definition text)
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    p record;
    v_part regclass := to_regclass(quote_ident(p_partition));
begin
    select * into p from ragpg_embedding_partition(p_partition);
    if p.parent is null or v_part is null then
        raise exception using errcode = '42704', message = format('%s is not a vault''s embeddings partition', p_partition);
    end if;
    if exists (select from pg_inherits h where h.inhrelid = v_part) then
        execute format('alter table %I detach partition %I', p.parent, p_partition);
    end if;
    return query
    select d.* from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam
    cross join lateral ragpg_drop_index_recorded(i.indexrelid::regclass) d
    where i.indrelid = v_part and a.amname = 'hnsw';
end
$$;

--
-- Name: ragpg_define_function(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_define_function(p_name text, p_arg_types text, p_definition text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_disable_bm25_index(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_disable_bm25_index(p_vault text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    delete from bm25_indexes i using vaults v where v.id = i.vault_id and v.name = p_vault;
    return found;
end
$$;

--
-- Name: ragpg_drop_chunk_indexes(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_drop_chunk_indexes() RETURNS TABLE(index_name text, definition text)
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_name text;
    v_index regclass;
begin
    foreach v_name in array array['chunks_metadata_idx', 'chunks_folder_idx', 'chunks_date_idx',
                                  'bm25_postings_pkey'] loop
        v_index := to_regclass(v_name);
        continue when v_index is null;
        select format('%I.%I', n.nspname, c.relname), pg_get_indexdef(c.oid) into index_name, definition
        from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.oid = v_index;
        if v_name = 'bm25_postings_pkey' then
            alter table bm25_postings drop constraint bm25_postings_pkey;
        else
            execute format('drop index %s', index_name);
        end if;
        return next;
    end loop;
end
$$;

--
-- Name: ragpg_drop_deferrable_indexes(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_drop_deferrable_indexes(p_table text) RETURNS TABLE(index_name text, definition text)
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    if p_table = 'chunks' then
        return query select * from ragpg_drop_chunk_indexes();
    elsif exists (select from embedding_models m where m.embedding_table = p_table) then
        return query select * from ragpg_drop_hnsw_index(p_table);
    else
        return query select * from ragpg_defer_vault_hnsw(p_table);
    end if;
end
$$;

--
-- Name: ragpg_drop_hnsw_index(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_drop_hnsw_index(p_table text) RETURNS TABLE(index_name text, definition text)
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_drop_index_recorded(regclass); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_drop_index_recorded(p_index regclass, OUT index_name text, OUT definition text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    select format('%I.%I', n.nspname, c.relname), pg_get_indexdef(c.oid) into index_name, definition
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.oid = p_index;
    execute format('drop index %s', index_name);
end
$$;

--
-- Name: ragpg_drop_vault_partitions(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_drop_vault_partitions(p_vault_id bigint) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    r record;
    v_dropped integer := 0;
begin
    if not ragpg_vault_has_own_partition(p_vault_id) then
        perform set_config('ragpg.moving_vault', p_vault_id::text, true);
        for r in select t.oid::regclass as parent
                 from ragpg_vault_partitioned_tables() with ordinality as t (oid, o) order by t.o desc loop
            execute format('delete from %s where vault_id = $1', r.parent) using p_vault_id;
        end loop;
        perform set_config('ragpg.moving_vault', '', true);
    end if;
    for r in select t.oid::regclass as parent, ragpg_vault_partition_name(c.relname, p_vault_id) as part
             from ragpg_vault_partitioned_tables() with ordinality as t (oid, o)
             join pg_class c on c.oid = t.oid
             order by t.o desc loop
        if to_regclass(quote_ident(r.part)) is not null then
            -- (a bulk load may hold an embeddings partition detached: 25_bulk_load.sql)
            if exists (select from pg_inherits h where h.inhrelid = to_regclass(quote_ident(r.part))) then
                execute format('alter table %s detach partition %I', r.parent, r.part);
            end if;
            execute format('drop table %I', r.part);
            v_dropped := v_dropped + 1;
        end if;
    end loop;
    return v_dropped;
end
$_$;

--
-- Name: ragpg_embedding_partition(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_embedding_partition(p_partition text, OUT parent text, OUT vault_id bigint) RETURNS SETOF record
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select m.embedding_table, v.id
    from embedding_models m cross join vaults v
    where ragpg_vault_partition_name(m.embedding_table, v.id) = p_partition
$$;

--
-- Name: ragpg_enable_bm25_index(text, double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_enable_bm25_index(p_vault text, p_k1 double precision, p_b double precision) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    v record;
    i record;
    v_table text;
    v_index text;
    v_shared boolean;
begin
    perform ragpg_check_bm25_params(p_k1, p_b);
    select * into v from vaults where name = p_vault;
    if not found then
        raise exception using errcode = '22023', message = format('unknown vault %s', p_vault);
    end if;
    if current_setting('pg_textsearch.library_version', true) is null then
        return 'sql';
    end if;
    perform ragpg_bm25_drop_orphan_tables();
    if not exists (select 1 from pg_extension where extname = 'pg_textsearch') then
        begin
            create extension pg_textsearch;
        exception when insufficient_privilege or undefined_file or feature_not_supported then
            return 'sql';
        end;
    end if;
    if not ragpg_bm25_lock_down() then
        raise notice 'ragpg: pg_textsearch''s functions stay executable by every role (% does not own the extension): no bm25 index is built', current_user;
        return 'sql';
    end if;
    v_shared := not ragpg_vault_has_own_partition(v.id);
    select * into i from bm25_indexes where vault_id = v.id;
    if found and i.k1 = p_k1 and i.b = p_b and i.text_search_config = v.text_search_config
            and to_regclass(quote_ident(i.table_name)) is not null
            and (i.table_name = ragpg_bm25_shared_table()) = v_shared then
        return 'pg_textsearch';
    end if;
    if found then
        delete from bm25_indexes where vault_id = v.id;  -- its trigger drops the table (or its rows of the shared one)
    end if;
    if v_shared and ragpg_bm25_shared_add(v.id, v.text_search_config, p_k1, p_b) then
        return 'pg_textsearch';
    end if;
    v_table := 'ragpg_bm25_' || v.id;
    v_index := v_table || '_idx';
    execute format('drop table if exists %I', v_table);
    execute format('create table %I (chunk_id bigint primary key, search_text text not null)', v_table);
    execute format('insert into %I (chunk_id, search_text)
                    select id, ragpg_chunk_search_text(heading_path, content, metadata)
                    from chunks where vault_id = $1 order by id', v_table) using v.id;
    -- (k1 and b as numerals: reloptions are text; round-trips exactly through float8's shortest form)
    execute format('create index %I on %I using bm25 (search_text) with (text_config = %L, k1 = %s, b = %s)',
                   v_index, v_table, v.text_search_config::text, p_k1, p_b);
    insert into bm25_indexes (vault_id, table_name, index_name, text_search_config, k1, b)
    values (v.id, v_table, v_index, v.text_search_config, p_k1, p_b);
    perform ragpg_secure_content_table(to_regclass(quote_ident(v_table)));  -- 80_security.sql
    return 'pg_textsearch';
end
$_$;

--
-- Name: ragpg_ensure_console_role(text, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_ensure_console_role(p_clearance text, p_vaults text[]) RETURNS name
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_vaults text[] := (select array_agg(distinct v order by v) from unnest(p_vaults) v);
    v_role name;
begin
    if ragpg_level_rank(p_clearance) is null then
        raise exception using errcode = '22023',
            message = format('unknown clearance %L (use public, internal, confidential or restricted)', p_clearance);
    end if;
    -- The login already made for this scope, else a new one. Its name does not come from the vault names:
    -- pg_roles is open to every role, and such a name would let anyone test guesses at them offline.
    select r.role_name into v_role from ragpg_console_roles r
    where r.clearance = p_clearance and r.vaults is not distinct from v_vaults
    order by r.role_name limit 1;
    if v_role is null then
        v_role := format('ragpg_console_%s_%s', p_clearance,
                         case when v_vaults is null then 'all' else left(md5(gen_random_uuid()::text), 12) end);
    end if;
    if not exists (select 1 from pg_roles where rolname = v_role) then
        execute format('create role %I login nosuperuser nocreatedb nocreaterole noinherit', v_role);
    end if;
    insert into ragpg_console_roles (role_name, clearance, vaults)
    values (v_role, p_clearance, v_vaults)
    on conflict (role_name) do update set clearance = excluded.clearance, vaults = excluded.vaults;
    perform ragpg_grant_console_select(v_role, t) from ragpg_content_tables() t;
    perform ragpg_close_console_write_paths();
    return v_role;
end
$$;

--
-- Name: ragpg_exact_scan_limit(bigint, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_exact_scan_limit(p_total bigint, exact_scan_max_rows integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select case when p_total * ragpg_exact_scan_wide_max_fraction() > exact_scan_max_rows
                then exact_scan_max_rows::bigint * ragpg_exact_scan_wide_factor()
                else exact_scan_max_rows end
$$;

--
-- Name: ragpg_exact_scan_max_fraction(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_exact_scan_max_fraction() RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 0.3;

--
-- Name: ragpg_exact_scan_wide_factor(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_exact_scan_wide_factor() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 2;

--
-- Name: ragpg_exact_scan_wide_max_fraction(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_exact_scan_wide_max_fraction() RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 0.15;

--
-- Name: ragpg_filter_add_var(jsonb, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_add_var(p_vars jsonb, p_value jsonb, OUT name text, OUT vars jsonb) RETURNS record
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT s.n,
     (ragpg_filter_add_var.p_vars || jsonb_build_object(s.n, ragpg_filter_add_var.p_value))
    FROM ( SELECT ('v'::text || ( SELECT count(*) AS count
                    FROM jsonb_object_keys(ragpg_filter_add_var.p_vars) k(k)
                   WHERE (k.k ~ '^v[0-9]+$'::text))) AS n) s;
END;

--
-- Name: ragpg_filter_compile_field(jsonb, text, text, integer, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_compile_field(p_value jsonb, p_path text, p_label text, p_depth integer, p_vars jsonb, OUT expr text, OUT vars jsonb) RETURNS record
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    v_type text := jsonb_typeof(p_value);
    v_keys integer;
    v_ops integer;
    v_key text;
    v_val jsonb;
    v_part record;
    v_var record;
    v_parts text[] := '{}';
begin
    vars := p_vars;
    if p_depth > 8 then
        perform ragpg_invalid_filter('nested deeper than 8 levels');
    end if;
    if v_type = 'object' then
        select count(*), count(*) filter (where left(k, 1) = '$') into v_keys, v_ops
        from jsonb_object_keys(p_value) k;
        if v_keys = 0 then
            expr := '(' || p_path || '.type() == "object")';
        elsif v_ops = v_keys then
            select * into v_part from ragpg_filter_compile_ops(p_value, p_path, p_label, vars);
            expr := v_part.expr;
            vars := v_part.vars;
        elsif v_ops = 0 then
            for v_key, v_val in select key, value from jsonb_each(p_value) loop
                select * into v_part
                from ragpg_filter_compile_field(v_val, p_path || '.' || ragpg_jsonpath_key(v_key),
                                                p_label || '.' || v_key, p_depth + 1, vars);
                vars := v_part.vars;
                v_parts := v_parts || v_part.expr;
            end loop;
            expr := '(' || array_to_string(v_parts, ' && ') || ')';
        else
            perform ragpg_invalid_filter('cannot mix operators and field names under ' || ragpg_filter_label(p_label));
        end if;
    elsif v_type = 'array' then
        if exists (select 1 from jsonb_array_elements(p_value) e where jsonb_typeof(e) in ('object', 'array')) then
            perform ragpg_invalid_filter('a list of objects or lists under ' || ragpg_filter_label(p_label)
                                         || ' can only be matched as top-level containment');
        end if;
        v_parts := array['(' || p_path || '.type() == "array")'];
        for v_val in select e from jsonb_array_elements(p_value) e loop
            select * into v_var from ragpg_filter_add_var(vars, v_val);
            vars := v_var.vars;
            v_parts := v_parts || ('(' || p_path || ' == $' || v_var.name || ')');
        end loop;
        expr := '(' || array_to_string(v_parts, ' && ') || ')';
    else
        select * into v_var from ragpg_filter_add_var(vars, p_value);
        vars := v_var.vars;
        expr := '((' || p_path || ' == $' || v_var.name || ') && !(' || p_path || '.type() == "array"))';
    end if;
end
$_$;

--
-- Name: ragpg_filter_compile_object(jsonb, integer, jsonb, boolean); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_compile_object(p_filter jsonb, p_depth integer, p_vars jsonb, p_top boolean, OUT expr text, OUT vars jsonb, OUT containment jsonb, OUT vaults text[]) RETURNS record
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    v_key text;
    v_val jsonb;
    v_part record;
    v_parts text[] := '{}';
    v_sub text[];
    v_elem jsonb;
begin
    vars := p_vars;
    containment := '{}';
    if p_depth > 8 then
        perform ragpg_invalid_filter('nested deeper than 8 levels');
    end if;
    if jsonb_typeof(p_filter) <> 'object' then
        perform ragpg_invalid_filter('expected a JSON object, got ' || jsonb_typeof(p_filter));
    end if;
    for v_key, v_val in select key, value from jsonb_each(p_filter) loop
        if v_key in ('$and', '$or') then
            if jsonb_typeof(v_val) <> 'array' then
                perform ragpg_invalid_filter(v_key || ' needs an array of filter objects, got ' || jsonb_typeof(v_val));
            end if;
            v_sub := '{}';
            for v_elem in select e from jsonb_array_elements(v_val) e loop
                if jsonb_typeof(v_elem) <> 'object' then
                    perform ragpg_invalid_filter(v_key || ' needs an array of filter objects, got an element of type '
                                                 || jsonb_typeof(v_elem));
                end if;
                select * into v_part from ragpg_filter_compile_object(v_elem, p_depth + 1, vars, false);
                vars := v_part.vars;
                v_sub := v_sub || coalesce(v_part.expr, 'exists($)');
            end loop;
            if cardinality(v_sub) = 0 then
                v_parts := v_parts || case when v_key = '$and' then 'exists($)' else '(!exists($))' end;
            else
                v_parts := v_parts || ('(' || array_to_string(v_sub, case when v_key = '$and' then ' && ' else ' || ' end) || ')');
            end if;
        elsif left(v_key, 1) = '$' then
            perform ragpg_invalid_filter('unknown operator ' || ragpg_filter_label(v_key)
                                         || ' at the top of a filter object (known there: $and $or)');
        elsif p_top and v_key = 'vault' then
            vaults := ragpg_filter_vault_names(v_val);
        elsif p_top and not ragpg_filter_has_operators(v_val) then
            containment := containment || jsonb_build_object(v_key, v_val);
        else
            select * into v_part
            from ragpg_filter_compile_field(v_val, '$.' || ragpg_jsonpath_key(v_key), v_key, p_depth + 1, vars);
            vars := v_part.vars;
            v_parts := v_parts || v_part.expr;
            -- A folder prefix or a date bound at the top level holds for every matching row:
            -- ragpg_filter_sql adds it as an indexed condition beside the predicate (which stays
            -- the rule). String bounds only: jsonpath compares strings by code point, as collate "C".
            if p_top and v_key = 'folder' and jsonb_typeof(v_val -> '$prefix') = 'string' then
                vars := vars || jsonb_strip_nulls(jsonb_build_object(
                    'folder_prefix', v_val -> '$prefix',
                    'folder_prefix_end', ragpg_text_prefix_end(v_val ->> '$prefix')));
            end if;
            if p_top and v_key = 'date' and jsonb_typeof(v_val) = 'object' then
                vars := vars || jsonb_strip_nulls(jsonb_build_object(
                    'date_from', (select e.value from jsonb_each(v_val) e
                                  where e.key in ('$gte', '$gt', '$eq') and jsonb_typeof(e.value) = 'string'
                                  order by e.value desc limit 1),
                    'date_to', (select e.value from jsonb_each(v_val) e
                                where e.key in ('$lte', '$lt', '$eq') and jsonb_typeof(e.value) = 'string'
                                order by e.value limit 1)));
            end if;
        end if;
    end loop;
    if cardinality(v_parts) > 0 then
        expr := array_to_string(v_parts, ' && ');
    end if;
end
$_$;

--
-- Name: ragpg_filter_compile_ops(jsonb, text, text, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_compile_ops(p_ops jsonb, p_path text, p_label text, p_vars jsonb, OUT expr text, OUT vars jsonb) RETURNS record
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    v_op text;
    v_arg jsonb;
    v_type text;
    v_var record;
    v_elem jsonb;
    v_parts text[] := '{}';
    v_sub text[];
    v_test text;
    v_where text := ' for ' || ragpg_filter_label(p_label);
begin
    vars := p_vars;
    for v_op, v_arg in select key, value from jsonb_each(p_ops) loop
        v_type := jsonb_typeof(v_arg);
        if v_op in ('$eq', '$ne') then
            if v_type not in ('string', 'number', 'boolean', 'null') then
                perform ragpg_invalid_filter(v_op || v_where || ' needs a string, number, boolean or null, got ' || v_type);
            end if;
            select * into v_var from ragpg_filter_add_var(vars, v_arg);
            vars := v_var.vars;
            v_test := '(' || p_path || ' == $' || v_var.name || ')';
            v_parts := v_parts || case when v_op = '$eq' then v_test
                                       else '(!' || v_test || ' || ' || v_test || ' is unknown)' end;
        elsif v_op in ('$in', '$nin', '$any', '$all') then
            if v_type <> 'array' then
                perform ragpg_invalid_filter(v_op || v_where || ' needs an array, got ' || v_type);
            end if;
            if exists (select 1 from jsonb_array_elements(v_arg) e where jsonb_typeof(e) in ('object', 'array')) then
                perform ragpg_invalid_filter(v_op || v_where || ' takes an array of strings, numbers, booleans or nulls');
            end if;
            if v_op = '$all' then
                v_sub := '{}';
                for v_elem in select e from jsonb_array_elements(v_arg) e loop
                    select * into v_var from ragpg_filter_add_var(vars, v_elem);
                    vars := v_var.vars;
                    v_sub := v_sub || ('(' || p_path || ' == $' || v_var.name || ')');
                end loop;
                -- all of nothing holds
                v_parts := v_parts || coalesce('(' || array_to_string(nullif(v_sub, '{}'), ' && ') || ')',
                                               'exists($)');
            elsif jsonb_array_length(v_arg) = 0 then
                -- in nothing never holds; not in nothing always does
                v_parts := v_parts || case when v_op = '$nin' then 'exists($)' else '(!exists($))' end;
            else
                select * into v_var from ragpg_filter_add_var(vars, v_arg);
                vars := v_var.vars;
                v_test := '(' || p_path || ' == $' || v_var.name || '[*])';
                v_parts := v_parts || case when v_op = '$nin' then '(!' || v_test || ' || ' || v_test || ' is unknown)'
                                           else v_test end;
            end if;
        elsif v_op in ('$gt', '$gte', '$lt', '$lte') then
            if v_type not in ('string', 'number') then
                perform ragpg_invalid_filter(v_op || v_where || ' needs a string or a number, got ' || v_type);
            end if;
            select * into v_var from ragpg_filter_add_var(vars, v_arg);
            vars := v_var.vars;
            v_parts := v_parts || ('(' || p_path
                                   || case v_op when '$gt' then ' > ' when '$gte' then ' >= '
                                                when '$lt' then ' < ' else ' <= ' end
                                   || '$' || v_var.name || ')');
        elsif v_op = '$prefix' then
            if v_type <> 'string' then
                perform ragpg_invalid_filter('$prefix' || v_where || ' needs a string, got ' || v_type);
            end if;
            select * into v_var from ragpg_filter_add_var(vars, v_arg);
            vars := v_var.vars;
            v_parts := v_parts || ('(' || p_path || ' starts with $' || v_var.name || ')');
        elsif v_op = '$exists' then
            if v_type <> 'boolean' then
                perform ragpg_invalid_filter('$exists' || v_where || ' needs true or false, got ' || v_type);
            end if;
            v_parts := v_parts || case when v_arg = 'true'::jsonb then 'exists(' || p_path || ')'
                                       else '(!exists(' || p_path || '))' end;
        elsif v_op in ('$and', '$or') then
            perform ragpg_invalid_filter(v_op || v_where
                                         || ': $and/$or combine filter objects and belong at the top level or inside $and/$or');
        else
            perform ragpg_invalid_filter('unknown operator ' || ragpg_filter_label(v_op) || v_where
                                         || ' (known: $eq $ne $in $nin $gt $gte $lt $lte $prefix $exists $any $all)');
        end if;
    end loop;
    expr := '(' || array_to_string(v_parts, ' && ') || ')';
end
$_$;

--
-- Name: ragpg_filter_fraction(text, jsonb, jsonpath, jsonb, text[], bigint[], double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_fraction(p_where text, p_containment jsonb, p_predicate jsonpath, p_vars jsonb, p_vaults text[], p_vault_ids bigint[], p_at_least double precision, p_total double precision) RETURNS double precision
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: ragpg_filter_has_operators(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_has_operators(p_value jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN jsonb_path_exists(p_value, '$.**?(@.type() == "object").keyvalue()?(@."key" starts with "$")'::jsonpath);

--
-- Name: ragpg_filter_label(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_label(p_text text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN (SELECT string_agg(CASE WHEN (t.c ~ '[\x7f-\x9f\u2028\u2029]'::text) THEN ('\u'::text || lpad(to_hex(ascii(t.c)), 4, '0'::text)) ELSE t.c END, ''::text ORDER BY t.i) AS string_agg FROM regexp_split_to_table((to_json(CASE WHEN (length(ragpg_filter_label.p_text) > 60) THEN ("left"(ragpg_filter_label.p_text, 57) || '...'::text) ELSE ragpg_filter_label.p_text END))::text, ''::text) WITH ORDINALITY t(c, i));

--
-- Name: ragpg_filter_list_ids(text, jsonb, jsonpath, jsonb, text[], bigint[], bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_list_ids(p_where text, p_containment jsonb, p_predicate jsonpath, p_vars jsonb, p_vaults text[], p_vault_ids bigint[], p_limit bigint, OUT ids bigint[], OUT vault_ids bigint[]) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
begin
    execute 'select array_agg(c.id), '
            || case when p_vault_ids is not null then '$9' else 'array_agg(distinct c.vault_id)' end
            || ' from (select c.id, c.vault_id from chunks c where true' || p_where
            || case when p_limit is not null then ' limit $4' else '' end || ') c'
        into ids, vault_ids
        using null::integer, null::integer, null::float8, p_limit, p_containment, p_predicate, p_vars,
              p_vaults, p_vault_ids;
    ids := coalesce(ids, '{}');  -- none match: listed all the same (null = not listed)
end
$_$;

--
-- Name: ragpg_filter_listing(jsonb, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_listing(filter jsonb, exact_scan_max_rows integer, OUT ids bigint[], OUT vault_ids bigint[], OUT complete boolean) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    f record;
    v_vault_ids bigint[];
    v_total bigint;
    v_limit bigint;
begin
    complete := false;
    if row_security_active('public.chunks'::regclass) or exact_scan_max_rows is null or exact_scan_max_rows < 0 then
        return;  -- (a bad bound is the vector leg's to report)
    end if;
    select * into f from ragpg_compile_filter(filter);
    if f.containment = '{}'::jsonb and f.predicate is null then
        return;
    end if;
    perform ragpg_check_vault_names(f.vaults);
    v_vault_ids := case when f.vaults is not null then ragpg_vault_ids(f.vaults) end;
    v_total := greatest(ragpg_vaults_chunk_count(v_vault_ids), 1);
    v_limit := ragpg_exact_scan_limit(v_total, exact_scan_max_rows);
    select l.ids, l.vault_ids into ids, vault_ids
    from ragpg_filter_list_ids(ragpg_filter_sql('c', 'metadata', f.containment, f.predicate, 5)
                               || case when f.vaults is not null then ' and c.vault_id = any($9)' else '' end,
                               f.containment, f.predicate, f.vars, f.vaults, v_vault_ids, v_limit + 1) l;
    complete := cardinality(ids) <= v_limit;
end
$_$;

--
-- Name: ragpg_filter_match(jsonb, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_match(metadata jsonb, filter jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    f record;
begin
    select * into f from ragpg_compile_filter(filter);
    return coalesce(metadata @> f.containment, false)
       and (f.predicate is null or coalesce(jsonb_path_match(metadata, f.predicate, f.vars), false))
       and (f.vaults is null or coalesce(metadata ->> 'vault' = any(f.vaults), false));
end
$$;

--
-- Name: ragpg_filter_sql(text, text, jsonb, jsonpath, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_sql(p_alias text, p_column text, p_containment jsonb, p_predicate jsonpath, p_first_param integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN concat(CASE WHEN ((p_containment IS NOT NULL) AND (p_containment <> '{}'::jsonb)) THEN format(' and %I.%I @> $%s'::text, p_alias, p_column, p_first_param) ELSE NULL::text END, CASE WHEN (p_predicate IS NOT NULL) THEN (format(' and jsonb_path_match(%I.%I, $%s, $%s)'::text, p_alias, p_column, (p_first_param + 1), (p_first_param + 2)) || format(' and ((%1$I.%2$I ->> ''folder'') ~>=~ ($%3$s ->> ''folder_prefix'') and ((%1$I.%2$I ->> ''folder'') ~<~ ($%3$s ->> ''folder_prefix_end'') or ($%3$s ->> ''folder_prefix_end'') is null) or ($%3$s ->> ''folder_prefix'') is null or jsonb_typeof(%1$I.%2$I -> ''folder'') = ''array'') and ((%1$I.%2$I ->> ''date'') collate "C" >= ($%3$s ->> ''date_from'') or ($%3$s ->> ''date_from'') is null or jsonb_typeof(%1$I.%2$I -> ''date'') = ''array'') and ((%1$I.%2$I ->> ''date'') collate "C" <= ($%3$s ->> ''date_to'') or ($%3$s ->> ''date_to'') is null or jsonb_typeof(%1$I.%2$I -> ''date'') = ''array'')'::text, p_alias, p_column, (p_first_param + 2))) ELSE NULL::text END);

--
-- Name: ragpg_filter_vault_names(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_vault_names(p_value jsonb) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    v_arg jsonb := p_value;
begin
    if jsonb_typeof(p_value) = 'object' then
        if (select count(*) from jsonb_object_keys(p_value)) = 1 and p_value ? '$eq' then
            v_arg := p_value -> '$eq';
        elsif (select count(*) from jsonb_object_keys(p_value)) = 1 and p_value ? '$in' then
            v_arg := p_value -> '$in';
            if jsonb_typeof(v_arg) <> 'array' then
                perform ragpg_invalid_filter('"vault": $in needs an array of vault names');
            end if;
        else
            perform ragpg_invalid_filter('"vault" takes a vault name, a list of names, {"$eq": name} or {"$in": [names]}');
        end if;
    end if;
    if jsonb_typeof(v_arg) = 'string' then
        return array[v_arg #>> '{}'];
    end if;
    if jsonb_typeof(v_arg) = 'array'
       and not exists (select 1 from jsonb_array_elements(v_arg) e where jsonb_typeof(e) <> 'string') then
        return array(select e from jsonb_array_elements_text(v_arg) e);
    end if;
    perform ragpg_invalid_filter('"vault" takes a vault name, a list of names, {"$eq": name} or {"$in": [names]}');
    return null;
end
$_$;

--
-- Name: ragpg_filter_vault_scope(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_filter_vault_scope(filter jsonb) RETURNS bigint[]
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    -- (without a top-level "vault" key the filter names none: not compiled again, its scorer did)
    select ragpg_vault_ids(case when filter is null or jsonb_typeof(filter) <> 'object' or not filter ? 'vault'
                                then null
                                else (select f.vaults from ragpg_compile_filter(filter) f) end)
$$;

--
-- Name: ragpg_grant_console_select(name, regclass); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_grant_console_select(p_role name, p_table regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    execute format('grant select on %s to %I', p_table, p_role);
end
$$;

--
-- Name: ragpg_hnsw_ef_construction(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_hnsw_ef_construction() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 128;

--
-- Name: ragpg_hnsw_ef_per_million_rows(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_hnsw_ef_per_million_rows() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 800;

--
-- Name: ragpg_hnsw_ef_search(text, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_hnsw_ef_search(p_table text, p_ef_search integer, p_match_count integer) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    RETURN LEAST(1000, GREATEST(p_ef_search, p_match_count, (ceil(((GREATEST(COALESCE((SELECT c.reltuples FROM pg_class c WHERE (c.oid = (to_regclass(quote_ident(ragpg_hnsw_ef_search.p_table)))::oid)), (0)::real), (0)::real) * (public.ragpg_hnsw_ef_per_million_rows())::double precision) / ('1000000'::numeric)::double precision)))::integer));

--
-- Name: ragpg_invalid_filter(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_invalid_filter(p_message text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
    raise exception using errcode = '22023', message = 'invalid filter: ' || p_message;
end
$$;

--
-- Name: ragpg_jsonpath_key(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_jsonpath_key(p_key text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN (('"'::text || replace(replace(p_key, '\'::text, '\\'::text), '"'::text, '\"'::text)) || '"'::text);

--
-- Name: ragpg_langchain_chunk_id(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_langchain_chunk_id(p_id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN ((('x'::text || "left"(md5(p_id), 16)))::bit(64))::bigint;

--
-- Name: ragpg_lexical_backend(text[], jsonb, double precision, double precision, integer, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_lexical_backend(vault_names text[], filter jsonb, k1 double precision, b double precision, candidate_count integer DEFAULT 60, query_text text DEFAULT NULL::text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    f record;
begin
    if not ragpg_bm25_index_available() or row_security_active('public.chunks'::regclass) then
        -- (the index ranks with the statistics of every chunk of a vault: it is the owner's alone, and
        -- a caller row-level security binds takes the SQL BM25 over what it may read, 50_lexical.sql)
        return 'sql';
    end if;
    select * into f from ragpg_compile_filter(coalesce(filter, '{}'));
    vault_names := coalesce(f.vaults, vault_names);
    if exists (select 1 from bm25_indexes i join vaults v on v.id = i.vault_id
               where i.table_name = ragpg_bm25_shared_table()
                 and (vault_names is null or v.name = any(vault_names)))
       and (f.containment <> '{}'::jsonb or f.predicate is not null
            or exists (select 1 from bm25_indexes i join vaults v on v.id = i.vault_id
                       where i.table_name = ragpg_bm25_shared_table()
                         and vault_names is not null and not v.name = any(vault_names))) then
        -- the shared index serves a search of every vault in it, unfiltered (see the top of this file)
        return 'sql';
    end if;
    if f.containment <> '{}'::jsonb or f.predicate is not null then
        -- the index read deeper when the filter keeps enough chunks (56_bm25_filtered.sql; should it
        -- not prove a search's answer, that search still takes the SQL BM25)
        return case when ragpg_bm25_filtered_depth(
                             f.containment, f.predicate, f.vars, vault_names, candidate_count, k1, b,
                             (select sum(ts.chunk_frequency)::bigint
                              from ragpg_query_term_stats(query_text, vault_names) ts
                              where query_text is not null)) is not null
                    then 'pg_textsearch' else 'sql' end;
    end if;
    if exists (select 1 from vaults v
               join bm25_vault_stats s on s.vault_id = v.id and s.chunk_count > 0
               left join bm25_indexes i on i.vault_id = v.id
               where (vault_names is null or v.name = any(vault_names))
                 and (i.vault_id is null or i.k1 <> ragpg_lexical_backend.k1 or i.b <> ragpg_lexical_backend.b
                      or i.text_search_config <> v.text_search_config
                      or to_regclass(quote_ident(i.table_name)) is null
                      -- a bulk load still owes postings (25_bulk_load.sql): the index's candidates
                      -- could not all be scored yet
                      or exists (select 1 from bm25_deferred d where d.vault_id = v.id))) then
        return 'sql';
    end if;
    return 'pg_textsearch';
end
$$;

--
-- Name: ragpg_lexical_backends(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_lexical_backends() RETURNS TABLE(vault text, backend text, reason text, k1 double precision, b double precision)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select v.name,
           case when i.vault_id is not null and ragpg_bm25_index_available()
                     and i.text_search_config = v.text_search_config
                     and not exists (select 1 from bm25_deferred d where d.vault_id = v.id)
                then 'pg_textsearch' else 'sql' end,
           case when exists (select 1 from bm25_deferred d where d.vault_id = v.id) then
                    'a bulk load is still adding BM25 postings'
                when i.vault_id is null then
                    case when ragpg_bm25_index_available() then 'no bm25 index built for this vault (run `ragpg index`)'
                         else 'pg_textsearch is not loaded on this server' end
                when not ragpg_bm25_index_available() then 'pg_textsearch is not loaded on this server'
                when i.text_search_config <> v.text_search_config then 'the index uses another text search configuration'
                else 'bm25 index ' || i.index_name end,
           i.k1, i.b
    from vaults v left join bm25_indexes i on i.vault_id = v.id
    order by v.name
$$;

--
-- Name: ragpg_lexical_scores(text, integer, jsonb, double precision, double precision, bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_lexical_scores(query_text text, candidate_count integer, filter jsonb, k1 double precision, b double precision, p_listed bigint[] DEFAULT NULL::bigint[]) RETURNS TABLE(chunk_id bigint, bm25_score double precision)
    LANGUAGE plpgsql STABLE ROWS 60
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'auto'
    AS $_$
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
$_$;

--
-- Name: ragpg_lexical_scores_indexed(text, integer, bigint[], regconfig[], text[], double precision[], double precision[], double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_lexical_scores_indexed(query_text text, candidate_count integer, vault_ids bigint[], cfgs regconfig[], lexemes text[], weights double precision[], avgdls double precision[], k1 double precision, b double precision) RETURNS TABLE(chunk_id bigint, bm25_score double precision)
    LANGUAGE plpgsql STABLE ROWS 60
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
declare
    c record;
begin
    select * into c from ragpg_bm25_index_candidates(query_text, candidate_count, vault_ids);
    return query
    select s.chunk_id, s.bm25_score
    from ragpg_bm25_exact_scores(c.ids, c.vault_ids, vault_ids, cfgs, lexemes, weights, avgdls, k1, b) s
    order by s.bm25_score desc, s.chunk_id
    limit candidate_count;
end
$$;

--
-- Name: ragpg_lexical_scores_indexed_filtered(text, integer, integer, bigint[], regconfig[], text[], double precision[], double precision[], double precision, double precision, jsonb, jsonpath, jsonb, bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_lexical_scores_indexed_filtered(query_text text, candidate_count integer, depth integer, vault_ids bigint[], cfgs regconfig[], lexemes text[], weights double precision[], avgdls double precision[], k1 double precision, b double precision, p_containment jsonb, p_predicate jsonpath, p_vars jsonb, p_listed bigint[] DEFAULT NULL::bigint[], OUT complete boolean, OUT chunk_ids bigint[], OUT scores double precision[]) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: ragpg_linked_notes(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_linked_notes(p_vault text, p_path text) RETURNS TABLE(path text, title text, links_here boolean, linked_from_here boolean, anchor_text text)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH note AS (
          SELECT public.ragpg_note_id(ragpg_linked_notes.p_vault, ragpg_linked_notes.p_path) AS id
         ), edges AS (
          SELECT l.source_document_id AS other,
             true AS here,
             false AS there,
             l.anchor_text,
             l.line
            FROM (public.link_targets r
              JOIN public.links l ON (((l.vault_id = r.vault_id) AND (l.id = r.link_id)))),
             note
           WHERE ((r.target_document_id = note.id) AND (r.level = ( SELECT public.ragpg_caller_level() AS ragpg_caller_level)) AND (l.source_document_id <> note.id))
         UNION ALL
          SELECT r.target_document_id,
             false,
             true,
             l.anchor_text,
             l.line
            FROM (public.links l
              JOIN public.link_targets r ON (((r.vault_id = l.vault_id) AND (r.link_id = l.id)))),
             note
           WHERE ((l.source_document_id = note.id) AND (r.level = ( SELECT public.ragpg_caller_level() AS ragpg_caller_level)) AND (r.target_document_id <> note.id))
         )
  SELECT d.source_path,
     d.title,
     bool_or(e.here) AS bool_or,
     bool_or(e.there) AS bool_or,
     (array_agg(e.anchor_text ORDER BY (NOT e.here), e.line))[1] AS array_agg
    FROM (edges e
      JOIN public.documents d ON ((d.id = e.other)))
   GROUP BY d.source_path, d.title
   ORDER BY (bool_or(e.here) AND bool_or(e.there)) DESC, (count(*)) DESC, d.source_path;
END;

--
-- Name: ragpg_match_folders_impl(text, integer, text, public.vector, bigint[], integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_match_folders_impl(p_table text, p_dims integer, p_model text, query_embedding public.vector, vault_ids bigint[], match_count integer) RETURNS TABLE(vault_id bigint, vault text, folder text, chunk_count bigint, similarity double precision)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
begin
    perform ragpg_check_vector_query(query_embedding, p_dims, p_model, 0, match_count);
    return query execute format(
        'with centroids as (
             select c.vault_id, d.folder, count(*) as n, avg(e.embedding) as centroid
             from %I e
             join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id
             join documents d on d.vault_id = c.vault_id and d.id = c.document_id
             where $2::bigint[] is null or e.vault_id = any($2)
             group by c.vault_id, d.folder
         )
         select ce.vault_id, v.name, ce.folder, ce.n,
                case when vector_norm(ce.centroid) = 0 then 0::float8 else 1 - (ce.centroid <=> $1) end as similarity
         from centroids ce
         join vaults v on v.id = ce.vault_id
         order by 5 desc, v.name, ce.folder
         limit $3', p_table)
        using query_embedding, vault_ids, match_count;
end
$_$;

--
-- Name: ragpg_match_hybrid_impl(text, integer, text, text[], public.vector[], integer, jsonb, double precision, integer, jsonb, integer, double precision, double precision, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_match_hybrid_impl(p_table text, p_dims integer, p_model text, query_texts text[], query_embeddings public.vector[], match_count integer, filter jsonb, similarity_threshold double precision, rrf_k integer, weights jsonb, candidate_count integer, k1 double precision, b double precision, exact_scan_max_rows integer, ef_search integer) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, vector_rank integer, similarity double precision, lexical_rank integer, bm25_score double precision, rrf_score double precision, vector_hits integer, lexical_hits integer)
    LANGUAGE plpgsql STABLE ROWS 10
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_match_hybrid_one(text, integer, text, text, public.vector, integer, jsonb, double precision, integer, jsonb, integer, double precision, double precision, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_match_hybrid_one(p_table text, p_dims integer, p_model text, query_text text, query_embedding public.vector, match_count integer, filter jsonb, similarity_threshold double precision, rrf_k integer, weights jsonb, candidate_count integer, k1 double precision, b double precision, exact_scan_max_rows integer, ef_search integer) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, vector_rank integer, similarity double precision, lexical_rank integer, bm25_score double precision, rrf_score double precision, vector_hits integer, lexical_hits integer)
    LANGUAGE plpgsql STABLE ROWS 10
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_match_langchain_impl(integer, text, public.vector, double precision, integer, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_match_langchain_impl(p_dims integer, p_model text, query_embedding public.vector, similarity_threshold double precision, match_count integer, filter jsonb) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, similarity double precision)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: ragpg_match_lexical_impl(text, integer, jsonb, double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_match_lexical_impl(query_text text, match_count integer, filter jsonb, k1 double precision, b double precision) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, bm25_score double precision)
    LANGUAGE sql STABLE ROWS 10
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    with sc as materialized (select * from ragpg_lexical_scores(query_text, match_count, filter, k1, b))
    select c.chunk_id, c.vault, c.source_path, c.chunk_ordinal, c.heading_path, c.content, c.metadata, sc.bm25_score
    from sc
    join ragpg_chunk_rows((select array_agg(s2.chunk_id) from sc s2), ragpg_filter_vault_scope(filter)) c
      on c.chunk_id = sc.chunk_id
    order by sc.bm25_score desc, c.source_path, c.chunk_ordinal, c.chunk_id
    -- (never limit 0: the scorer, which rejects a bad match_count, would not even be called)
    limit greatest(match_count, 1)
$$;

--
-- Name: ragpg_match_native_impl(text, integer, text, public.vector, double precision, integer, jsonb, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_match_native_impl(p_table text, p_dims integer, p_model text, query_embedding public.vector, similarity_threshold double precision, match_count integer, filter jsonb, exact_scan_max_rows integer, ef_search integer) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, similarity double precision)
    LANGUAGE sql STABLE ROWS 10
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_model_function_name(public.embedding_models, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_model_function_name(m public.embedding_models, p_kind text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN CASE p_kind WHEN 'hybrid_multi'::text THEN ('match_hybrid_multi_chunks_'::text || (m).sql_name) WHEN 'folders'::text THEN ('match_folders_'::text || (m).sql_name) ELSE NULL::text END;

--
-- Name: ragpg_move_vault_to_own_partitions(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_move_vault_to_own_partitions(p_vault_id bigint) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    r record;
    v_moved bigint := 0;
begin
    if ragpg_vault_has_own_partition(p_vault_id) then
        return 0;
    end if;
    perform set_config('ragpg.moving_vault', p_vault_id::text, true);
    -- out, referencing tables first (the vectors reference the chunks)
    for r in select t.oid::regclass as parent, t.o
             from ragpg_vault_partitioned_tables() with ordinality as t (oid, o) order by t.o desc loop
        execute format('create temporary table %I on commit drop as select * from %s where vault_id = $1',
                       'ragpg_moving_' || r.o, r.parent) using p_vault_id;
        execute format('delete from %s where vault_id = $1', r.parent) using p_vault_id;
    end loop;
    perform ragpg_create_vault_partitions(p_vault_id);
    -- back in, referenced tables first
    for r in select t.oid::regclass as parent, t.o
             from ragpg_vault_partitioned_tables() with ordinality as t (oid, o) order by t.o loop
        execute format('insert into %s overriding system value select * from %I', r.parent, 'ragpg_moving_' || r.o);
        if r.parent = 'chunks'::regclass then
            get diagnostics v_moved = row_count;
        end if;
        execute format('drop table %I', 'ragpg_moving_' || r.o);
    end loop;
    perform set_config('ragpg.moving_vault', '', true);
    -- its rows of the small vaults' shared bm25 table become a table of its own (55_bm25_index.sql)
    perform ragpg_enable_bm25_index(v.name, i.k1, i.b)
    from bm25_indexes i join vaults v on v.id = i.vault_id
    where i.vault_id = p_vault_id and i.table_name = ragpg_bm25_shared_table();
    return v_moved;
end
$_$;

--
-- Name: ragpg_moving_vault(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_moving_vault() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN (COALESCE(current_setting('ragpg.moving_vault'::text, true), ''::text) <> ''::text);

--
-- Name: ragpg_name_partition_indexes(regclass, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_name_partition_indexes(p_partition regclass, p_vault_id bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    r record;
    v_name text;
begin
    for r in select ci.relname as child, cp.relname as parent
             from pg_index i
             join pg_class ci on ci.oid = i.indexrelid
             join pg_inherits h on h.inhrelid = i.indexrelid
             join pg_class cp on cp.oid = h.inhparent
             where i.indrelid = p_partition
               and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid) loop
        v_name := ragpg_vault_partition_name(r.parent, p_vault_id);
        if r.child <> v_name and to_regclass(quote_ident(v_name)) is null then
            execute format('alter index %I rename to %I', r.child, v_name);
        end if;
    end loop;
end
$$;

--
-- Name: ragpg_note_names(jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_note_names(p_metadata jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
    select case when p_metadata ? 'beir_id' or coalesce(p_metadata->>'source_path', '') = '' then null
           else concat_ws(' ', regexp_replace(regexp_replace(p_metadata->>'source_path', '^.*/', ''), '\.[^.]*$', ''),
                          (select string_agg(a, ' ') from jsonb_array_elements_text(
                               case when jsonb_typeof(p_metadata->'aliases') = 'array' then p_metadata->'aliases'
                                    else '[]'::jsonb end) a))
           end
$_$;

--
-- Name: ragpg_outlinks(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_outlinks(p_vault text, p_path text) RETURNS TABLE(line integer, kind text, target_text text, target_path text, target_heading text, anchor_text text, sentence text)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT l.line,
     l.kind,
     l.target_text,
     t.source_path,
     l.target_heading,
     l.anchor_text,
     l.sentence
    FROM ((public.links l
      LEFT JOIN public.link_targets r ON (((r.vault_id = l.vault_id) AND (r.link_id = l.id) AND (r.level = ( SELECT public.ragpg_caller_level() AS ragpg_caller_level)))))
      LEFT JOIN public.documents t ON ((t.id = r.target_document_id)))
   WHERE (l.source_document_id = public.ragpg_note_id(ragpg_outlinks.p_vault, ragpg_outlinks.p_path))
   ORDER BY l.line, l.id;
END;

--
-- Name: ragpg_own_partition_min_chunks(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_own_partition_min_chunks() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 10000;

--
-- Name: ragpg_pgvector_version_num(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_pgvector_version_num() RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN (SELECT ((((split_part(pg_extension.extversion, '.'::text, 1))::integer * 10000) + ((COALESCE(NULLIF("substring"(split_part(pg_extension.extversion, '.'::text, 2), '^\d+'::text), ''::text), '0'::text))::integer * 100)) + (COALESCE(NULLIF("substring"(split_part(pg_extension.extversion, '.'::text, 3), '^\d+'::text), ''::text), '0'::text))::integer) FROM pg_extension WHERE (pg_extension.extname = 'vector'::name));

--
-- Name: ragpg_place_vault(bigint, bigint, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_place_vault(p_vault_id bigint, p_expected_chunks bigint, p_min_chunks bigint DEFAULT NULL::bigint) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    p_min_chunks := coalesce(p_min_chunks, ragpg_own_partition_min_chunks());
    if p_min_chunks < 0 then
        raise exception using errcode = '22023',
            message = format('own_partition_min_chunks must be >= 0, got %s', coalesce(p_min_chunks::text, 'null'));
    end if;
    if ragpg_vault_has_own_partition(p_vault_id) or not exists (select from vaults where id = p_vault_id) then
        return false;
    end if;
    if (select count(*) from chunks where vault_id = p_vault_id) + greatest(coalesce(p_expected_chunks, 0), 0)
       <= p_min_chunks then
        return false;
    end if;
    perform ragpg_move_vault_to_own_partitions(p_vault_id);
    return true;
end
$$;

--
-- Name: ragpg_plan_cache_mode_for(bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_plan_cache_mode_for(p_vault_ids bigint[]) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select case when (select count(*) from vaults) - coalesce(cardinality(p_vault_ids), 0)
                     >= ragpg_plan_per_call_min_vaults_left_out()
                then 'force_custom_plan' else 'force_generic_plan' end
$$;

--
-- Name: ragpg_plan_per_call_min_vaults_left_out(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_plan_per_call_min_vaults_left_out() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 16;

--
-- Name: ragpg_query_key(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_query_key(p_query text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN md5(btrim(p_query));

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
-- Name: ragpg_query_lexemes(text, text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_query_lexemes(query_text text, vault_names text[] DEFAULT NULL::text[]) RETURNS TABLE(text_search_config regconfig, lexeme text, query_frequency integer)
    LANGUAGE sql STABLE ROWS 16 PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 SELECT cfg.c,
     u.lexeme,
     COALESCE(cardinality(u.positions), 1) AS "coalesce"
    FROM (( SELECT DISTINCT v.text_search_config AS c
            FROM public.vaults v
           WHERE ((ragpg_query_lexemes.vault_names IS NULL) OR (v.name = ANY (ragpg_query_lexemes.vault_names)))) cfg
      CROSS JOIN LATERAL unnest(to_tsvector(cfg.c, COALESCE(ragpg_query_lexemes.query_text, ''::text))) u(lexeme, positions, weights))
   ORDER BY cfg.c, u.lexeme;
END;

--
-- Name: ragpg_query_term_stats(text, text[], text[], bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_query_term_stats(query_text text, vault_names text[] DEFAULT NULL::text[], readable_levels text[] DEFAULT NULL::text[], chunk_ids bigint[] DEFAULT NULL::bigint[]) RETURNS TABLE(lexeme text, chunk_frequency bigint, chunk_count bigint, in_chunks bigint[])
    LANGUAGE sql STABLE ROWS 16 PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_record_queries(integer[], text[], public.vector[], integer[], bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_record_queries(p_model_ids integer[], p_queries text[], p_embeddings public.vector[], p_hit_queries integer[], p_hit_chunks bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_record_query(integer, text, public.vector, bigint[], name); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_record_query(p_model_id integer, p_query text, p_embedding public.vector, p_chunk_ids bigint[], p_cached_by name DEFAULT NULL::name) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: ragpg_refresh_model_functions(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_refresh_model_functions() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
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
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
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

--
-- Name: ragpg_similar_notes(text, text, integer, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_similar_notes(p_vault text, p_path text, p_match_count integer DEFAULT 10, p_model text DEFAULT NULL::text) RETURNS TABLE(path text, title text, similarity double precision)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
declare
    v_note bigint := ragpg_note_id(p_vault, p_path);
    v_table text;
begin
    perform ragpg_check_match_count(p_match_count, 'p_match_count');
    if p_model is null and not exists (select from embedding_models) then
        return;  -- nothing embedded yet: no note is close in meaning
    end if;
    select m.embedding_table into v_table from embedding_models m
    where p_model is null or m.provider || '/' || m.model = p_model;
    if v_table is null or (p_model is null and (select count(*) from embedding_models) > 1) then
        raise exception using errcode = '22023', message = format(
            'name one embedding model (%s)', coalesce((select string_agg(m.provider || '/' || m.model, ', ')
                                                       from embedding_models m), 'none registered'));
    end if;
    return query execute format(
        'with centre as (
             select avg(e.embedding) as v from %1$I e join chunks c on c.id = e.chunk_id where c.document_id = $1
         ),
         near as (
             select c.document_id, 1 - (e.embedding <=> centre.v) as similarity
             from %1$I e join chunks c on c.id = e.chunk_id, centre
             where c.vault_id = (select vault_id from documents where id = $1) and c.document_id <> $1
               and centre.v is not null and vector_norm(centre.v) > 0
             order by e.embedding <=> centre.v
             limit $2 * 8  -- a note has several passages near the centre: enough for $2 distinct notes
         )
         select d.source_path, d.title, max(n.similarity)::float8
         from near n join documents d on d.id = n.document_id
         group by d.source_path, d.title
         order by 3 desc, 1
         limit $2', v_table)
        using v_note, p_match_count;
end
$_$;

--
-- Name: ragpg_related_notes(text, text, integer, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_related_notes(p_vault text, p_path text, p_match_count integer DEFAULT 10, p_model text DEFAULT NULL::text) RETURNS TABLE(path text, title text, links_here boolean, linked_from_here boolean, anchor_text text, similarity double precision)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    BEGIN ATOMIC
 WITH linked AS (
          SELECT l_1.path,
             l_1.title,
             l_1.links_here,
             l_1.linked_from_here,
             l_1.anchor_text,
             row_number() OVER () AS rank
            FROM public.ragpg_linked_notes(ragpg_related_notes.p_vault, ragpg_related_notes.p_path) l_1(path, title, links_here, linked_from_here, anchor_text)
         ), nearby AS (
          SELECT s_1.path,
             s_1.title,
             s_1.similarity,
             row_number() OVER () AS rank
            FROM public.ragpg_similar_notes(ragpg_related_notes.p_vault, ragpg_related_notes.p_path, ragpg_related_notes.p_match_count, ragpg_related_notes.p_model) s_1(path, title, similarity)
         )
  SELECT COALESCE(l.path, s.path) AS "coalesce",
     COALESCE(l.title, s.title) AS "coalesce",
     COALESCE(l.links_here, false) AS "coalesce",
     COALESCE(l.linked_from_here, false) AS "coalesce",
     l.anchor_text,
     s.similarity
    FROM (linked l
      FULL JOIN nearby s ON ((s.path = l.path)))
   ORDER BY l.rank, s.rank
  LIMIT ragpg_related_notes.p_match_count;
END;

--
-- Name: ragpg_restore_vault_hnsw(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_restore_vault_hnsw(p_partition text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    p record;
    v_part regclass := to_regclass(quote_ident(p_partition));
begin
    select * into p from ragpg_embedding_partition(p_partition);
    if p.parent is null or v_part is null then
        return;  -- the vault (or model) was removed meanwhile: nothing to build
    end if;
    if not exists (select from pg_inherits h where h.inhrelid = v_part) then
        execute format('alter table %I attach partition %I for values in (%s)', p.parent, p_partition, p.vault_id);
    end if;
    perform ragpg_name_partition_indexes(v_part, p.vault_id);
end
$$;

--
-- Name: ragpg_scope_asker_is(name); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_scope_asker_is(p_invoker name) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    RETURN pg_has_role(SESSION_USER, p_invoker, 'MEMBER'::text);

--
-- Name: ragpg_scope_clearance_rank(name); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_scope_clearance_rank(p_invoker name) RETURNS integer
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
declare
    v_registered text;
    v_setting text := pg_catalog.current_setting('ragpg.clearance', true);
    v_rank integer;
begin
    if not public.ragpg_scope_asker_is(p_invoker) then
        return 0;
    end if;
    if v_setting operator(pg_catalog.=) '' then
        v_setting := null;
    end if;
    select r.clearance into v_registered from public.ragpg_console_roles r
    where r.role_name operator(pg_catalog.=) p_invoker;
    if found then
        v_rank := public.ragpg_level_rank(v_registered);
    elsif p_invoker operator(pg_catalog.=) 'ragpg_reader'::pg_catalog.name and v_setting is not null then
        v_rank := 4;
    else
        return 0;
    end if;
    if v_setting is not null then  -- narrows only; a value that is no level narrows to nothing
        v_rank := least(v_rank, coalesce(public.ragpg_level_rank(v_setting), 0));
    end if;
    return coalesce(v_rank, 0);
end
$$;

--
-- Name: ragpg_scope_vault_ids(name); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_scope_vault_ids(p_invoker name) RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
declare
    v_setting text := pg_catalog.current_setting('ragpg.vaults', true);
    v_registered text[];
    v_every boolean;
    v_asked text[];
begin
    if not public.ragpg_scope_asker_is(p_invoker) then
        return '{}';
    end if;
    if v_setting operator(pg_catalog.=) '' then
        v_setting := null;
    end if;
    select r.vaults, r.vaults is null into v_registered, v_every from public.ragpg_console_roles r
    where r.role_name operator(pg_catalog.=) p_invoker;
    if not found then
        if p_invoker operator(pg_catalog.<>) 'ragpg_reader'::pg_catalog.name or v_setting is null then
            return '{}';
        end if;
        v_every := true;
    end if;
    if v_setting is not null and v_setting operator(pg_catalog.<>) '*' then
        begin
            v_asked := array(select pg_catalog.jsonb_array_elements_text(v_setting::pg_catalog.jsonb));
        exception when others then
            return '{}';  -- a setting that does not parse narrows to nothing
        end;
    end if;
    return array(select v.id from public.vaults v
                 where (v_every or v.name operator(pg_catalog.=) any(v_registered))
                   and (v_asked is null or v.name operator(pg_catalog.=) any(v_asked)));
end
$$;

--
-- Name: ragpg_search_hybrid_passages(text, integer, jsonb, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_search_hybrid_passages(question text, match_count integer, filter jsonb, model text) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, score double precision, similarity double precision, bm25_score double precision, vector_rank integer, lexical_rank integer, legs text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: ragpg_secure_content_table(regclass); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_secure_content_table(p_table regclass) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_vaults constant text := '(select ragpg_scope_vault_ids(current_user))::bigint[]';  -- an array, not a subquery of rows
    v_rank constant text := '(select ragpg_scope_clearance_rank(current_user))';
    v_name text := (select relname from pg_class where oid = p_table);
    v_rule text;
    -- (a table partitioned by vault names the chunk's vault too: one partition's key is read, not all)
    v_by_chunk constant text := case when exists (select 1 from pg_attribute a where a.attrelid = p_table
                                                  and a.attname = 'vault_id' and not a.attisdropped)
                                     then format('exists (select 1 from chunks c where c.vault_id = %s.vault_id'
                                                 ' and c.id = chunk_id)', p_table)
                                     else 'exists (select 1 from chunks c where c.id = chunk_id)' end;
    v_has_reader boolean := exists (select 1 from pg_roles where rolname = 'ragpg_reader');
begin
    if v_has_reader then
        execute format('grant select on %s to ragpg_reader', p_table);
    end if;
    perform ragpg_grant_console_select(r.role_name, p_table)
    from ragpg_console_roles r where exists (select 1 from pg_roles where rolname = r.role_name);
    if v_name in ('embedding_models', 'bm25_indexes', 'bm25_deferred') then
        return;  -- model names, vault ids and table names only: readable by every reader
    end if;
    v_rule := case
        when v_name = 'vaults' then format('id = any(%s)', v_vaults)
        when v_name = 'documents' then format(
            'vault_id = any(%s) and coalesce(ragpg_level_rank(confidentiality), 4) <= %s', v_vaults, v_rank)
        when v_name = 'chunks' then format('vault_id = any(%s) and ragpg_chunk_level(metadata) <= %s', v_vaults, v_rank)
        -- BM25 statistics are kept per level (20_bm25_stats.sql): each reader sums only its own levels
        when v_name in ('bm25_term_stats', 'bm25_vault_stats') then format('vault_id = any(%s) and level <= %s',
                                                                           v_vaults, v_rank)
        -- a link is part of the note that makes it: visible with its source note only (its targets are
        -- rows of link_targets, one per level)
        when v_name = 'links' then format(
            'vault_id = any(%s) and exists (select 1 from documents d where d.vault_id = links.vault_id '
            'and d.id = source_document_id)', v_vaults)
        -- a link's resolution at one level (db/sql/65_links.sql): with its link, to a reader of that level,
        -- and only while its target is a note the reader may read (a target whose level was raised since
        -- the links were last resolved hides the row: its id would tell the note exists)
        when v_name = 'link_targets' then format(
            'vault_id = any(%s) and level <= %s and exists (select 1 from links l where l.vault_id = '
            'link_targets.vault_id and l.id = link_id) and (target_document_id is null or exists (select 1 '
            'from documents t where t.vault_id = link_targets.vault_id and t.id = target_document_id))',
            v_vaults, v_rank)
        -- per-note counts and vectors: visible with the note itself (the document's own policy applies inside)
        when v_name in ('document_retrievals', 'note_vectors') then format(
            'exists (select 1 from documents d where d.vault_id = %I.vault_id and d.id = document_id)', v_name)
        -- questions: each role its own (the owner, not bound, all of them)
        when v_name = 'query_embeddings' then 'cached_by = current_user'
        -- postings and embeddings carry a chunk's words and meaning: visible only with the chunk itself
        -- (the chunk's own policy applies inside the subquery)
        else v_by_chunk
    end;
    execute format('alter table %s enable row level security', p_table);
    execute format('drop policy if exists ragpg_scope on %s', p_table);
    execute format('create policy ragpg_scope on %s for select using (%s)', p_table, v_rule);
    -- ragpg_scope_vault_ids (owned by ragpg_definer) maps every vault's name to its id
    execute format('drop policy if exists ragpg_definer_reads on %s', p_table);
    if v_name = 'vaults' and exists (select 1 from pg_roles where rolname = 'ragpg_definer') then
        execute format('create policy ragpg_definer_reads on %s for select to ragpg_definer using (true)', p_table);
    end if;
    execute format('drop policy if exists ragpg_reader_rows on %s', p_table);
    if v_has_reader and v_rule = v_by_chunk and v_name not like 'ragpg\_bm25\_%' then
        -- The server's reader joins every posting and embedding to its chunk, whose policy decides; a
        -- per-row subquery here would only slow its lexical leg. (Not for a vault's bm25 index table:
        -- it holds the chunk's text itself, so the chunk's own rule applies to every reader.)
        execute format('create policy ragpg_reader_rows on %s for select to ragpg_reader using (%s)', p_table,
                       case when v_name = 'bm25_postings' then format('vault_id = any(%s)', v_vaults) else 'true' end);
    end if;
end
$$;

--
-- Name: ragpg_secure_partitions(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_secure_partitions() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform ragpg_create_shared_partitions();
    return (select count(ragpg_create_vault_partitions(v.id)) from vaults v where ragpg_vault_has_own_partition(v.id));
end
$$;

--
-- Name: ragpg_shared_partition_name(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_shared_partition_name(p_table text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN CASE WHEN (length((p_table || '_shared'::text)) <= 63) THEN (p_table || '_shared'::text) ELSE ((("left"(p_table, (63 - 13)) || '_'::text) || "left"(md5(p_table), 5)) || '_shared'::text) END;

--
-- Name: ragpg_sql_name(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_sql_name(p_provider text, p_model text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN (WITH base AS (SELECT TRIM(BOTH '_'::text FROM regexp_replace(lower(((ragpg_sql_name.p_provider || '_'::text) || ragpg_sql_name.p_model)), '[^a-z0-9]+'::text, '_'::text, 'g'::text)) AS n) SELECT CASE WHEN (length(base.n) <= 36) THEN base.n ELSE (("left"(base.n, 29) || '_'::text) || "left"(md5(base.n), 6)) END AS "case" FROM base);

--
-- Name: ragpg_text_prefix_end(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_text_prefix_end(p_prefix text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
    v_n integer := length(p_prefix);
    v_code integer;
begin
    if getdatabaseencoding() <> 'UTF8' then
        return null;
    end if;
    while v_n > 0 loop
        v_code := ascii(substr(p_prefix, v_n, 1));
        if v_code < 1114111 then
            v_code := case when v_code + 1 between 55296 and 57343 then 57344 else v_code + 1 end;  -- past surrogates
            return substr(p_prefix, 1, v_n - 1) || chr(v_code);
        end if;
        v_n := v_n - 1;
    end loop;
    return null;
end
$$;

--
-- Name: ragpg_tsvector_token_count(tsvector); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_tsvector_token_count(tsv tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'public'
    RETURN (SELECT (COALESCE(sum(cardinality(u.positions)), (0)::bigint))::integer AS "coalesce" FROM unnest(ragpg_tsvector_token_count.tsv) u(lexeme, positions, weights));

--
-- Name: ragpg_unresolved_links(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_unresolved_links(p_vault text) RETURNS TABLE(source_path text, line integer, kind text, target_text text, anchor_text text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform ragpg_check_vault_names(array[p_vault]);
    return query
    select s.source_path, l.line, l.kind, l.target_text, l.anchor_text
    from links l
    join vaults v on v.id = l.vault_id
    join documents s on s.id = l.source_document_id
    where v.name = p_vault and not l.target_is_file
      and not exists (select 1 from link_targets r join documents t on t.id = r.target_document_id
                      where r.vault_id = l.vault_id and r.link_id = l.id and r.level = (select ragpg_caller_level()))
    order by l.target_text, s.source_path, l.line;
end
$$;

--
-- Name: ragpg_vault_has_own_partition(bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vault_has_own_partition(p_vault_id bigint) RETURNS boolean
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select to_regclass(quote_ident(ragpg_vault_partition_name('chunks', p_vault_id))) is not null
$$;

--
-- Name: ragpg_vault_ids(text[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vault_ids(p_names text[]) RETURNS bigint[]
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$  -- (a string body: the migrations' downgrade drops functions and tables in its own order)
    select array(select v.id from vaults v where p_names is null or v.name = any(p_names))
$$;

--
-- Name: ragpg_vault_label(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vault_label(p_name text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$  -- (a string body: it calls another ragpg function)
    select case when length(p_name) <= 60 and p_name !~ '[\x01-\x1f\x7f-\x9f\u2028\u2029''\\]'
                then quote_literal(p_name) else ragpg_filter_label(p_name) end
$$;

--
-- Name: ragpg_vault_partition_name(text, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vault_partition_name(p_table text, p_vault_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    RETURN CASE WHEN (length(((p_table || '_p'::text) || p_vault_id)) <= 63) THEN ((p_table || '_p'::text) || p_vault_id) ELSE (((("left"(p_table, ((63 - 8) - length((p_vault_id)::text))) || '_'::text) || "left"(md5(p_table), 5)) || '_p'::text) || p_vault_id) END;

--
-- Name: ragpg_vault_partitioned_tables(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vault_partitioned_tables() RETURNS SETOF regclass
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select c.oid::regclass
    from (select t, o from unnest(array['chunks', 'bm25_postings', 'bm25_term_stats']) with ordinality as u (t, o)
          union all
          select m.embedding_table, 100 + m.id from embedding_models m) t
    join pg_class c on c.oid = to_regclass(quote_ident(t.t))
    where c.relkind = 'p'  -- a table a later revision partitions is absent, or plain, before it runs
    order by t.o
$$;

--
-- Name: ragpg_vault_partitions_drop(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vault_partitions_drop() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
begin
    perform ragpg_drop_vault_partitions(old.id);
    return old;
end
$$;

--
-- Name: ragpg_vaults_chunk_count(bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vaults_chunk_count(p_vault_ids bigint[]) RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select coalesce(sum(s.chunk_count), 0)::bigint from bm25_vault_stats s
    where p_vault_ids is null or s.vault_id = any(p_vault_ids)
$$;

--
-- Name: ragpg_vector_exact_scores(text, public.vector, integer, double precision, bigint[], bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vector_exact_scores(p_table text, query_embedding public.vector, match_count integer, similarity_threshold double precision, p_chunk_ids bigint[], p_vault_ids bigint[]) RETURNS TABLE(chunk_id bigint, similarity double precision)
    LANGUAGE plpgsql STABLE ROWS 60
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: ragpg_vector_scores(text, integer, text, public.vector, double precision, integer, jsonb, integer, integer, bigint[], bigint[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vector_scores(p_table text, p_dims integer, p_model text, query_embedding public.vector, similarity_threshold double precision, match_count integer, filter jsonb, exact_scan_max_rows integer, ef_search integer, p_listed bigint[] DEFAULT NULL::bigint[], p_listed_vaults bigint[] DEFAULT NULL::bigint[]) RETURNS TABLE(chunk_id bigint, similarity double precision)
    LANGUAGE plpgsql STABLE ROWS 60
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: ragpg_vector_scores_by_graph(text, public.vector, double precision, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.ragpg_vector_scores_by_graph(p_table text, query_embedding public.vector, similarity_threshold double precision, match_count integer, ef_search integer) RETURNS TABLE(chunk_id bigint, similarity double precision)
    LANGUAGE plpgsql STABLE ROWS 60
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;

--
-- Name: search_hybrid(text, integer, jsonb, text, boolean, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.search_hybrid(question text, match_count integer DEFAULT 10, filter jsonb DEFAULT '{}'::jsonb, model text DEFAULT NULL::text, by_note boolean DEFAULT true, passages_per_note integer DEFAULT 3) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, score double precision, similarity double precision, bm25_score double precision, vector_rank integer, lexical_rank integer, legs text, note_rank integer)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
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

--
-- Name: search_lexical(text, integer, jsonb); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.search_lexical(question text, match_count integer DEFAULT 10, filter jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(chunk_id bigint, vault text, source_path text, chunk_ordinal integer, heading_path text, content text, metadata jsonb, score double precision, similarity double precision, bm25_score double precision, vector_rank integer, lexical_rank integer, legs text)
    LANGUAGE sql STABLE
    SET search_path TO 'public', 'pg_catalog', 'pg_temp'
    AS $$
    select l.chunk_id, l.vault, l.source_path, l.chunk_ordinal, l.heading_path, l.content, l.metadata,
           l.bm25_score, null::float8, l.bm25_score, null::integer,
           (row_number() over (order by l.bm25_score desc, l.source_path, l.chunk_ordinal, l.chunk_id))::integer,
           'lexical'
    from match_lexical_chunks(question, match_count, filter) l
    order by l.bm25_score desc, l.source_path, l.chunk_ordinal, l.chunk_id
$$;

--
-- Name: alembic_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);

--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    id integer NOT NULL,
    name text NOT NULL,
    key_prefix text NOT NULL,
    key_hash text NOT NULL,
    vaults text[] DEFAULT '{}'::text[] NOT NULL,
    all_vaults boolean DEFAULT false NOT NULL,
    clearance text DEFAULT 'public'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    last_used_at timestamp with time zone,
    can_index boolean DEFAULT false NOT NULL,
    CONSTRAINT api_keys_clearance_check CHECK ((clearance = ANY (ARRAY['public'::text, 'internal'::text, 'confidential'::text, 'restricted'::text]))),
    CONSTRAINT api_keys_name_check CHECK (((length(name) >= 1) AND (length(name) <= 100)))
);

--
-- Name: api_keys_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.api_keys ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.api_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: bm25_deferred; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_deferred (
    vault_id bigint NOT NULL,
    after_chunk_id bigint NOT NULL,
    deferred_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: bm25_indexes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_indexes (
    vault_id bigint NOT NULL,
    table_name text NOT NULL,
    index_name text NOT NULL,
    text_search_config regconfig NOT NULL,
    k1 double precision NOT NULL,
    b double precision NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: bm25_postings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_postings (
    vault_id bigint NOT NULL,
    lexeme text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    dl integer NOT NULL,
    text_search_config regconfig NOT NULL
)
PARTITION BY LIST (vault_id);

--
-- Name: bm25_postings_shared; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_postings_shared (
    vault_id bigint CONSTRAINT bm25_postings_vault_id_not_null NOT NULL,
    lexeme text CONSTRAINT bm25_postings_lexeme_not_null NOT NULL,
    chunk_id bigint CONSTRAINT bm25_postings_chunk_id_not_null NOT NULL,
    tf integer CONSTRAINT bm25_postings_tf_not_null NOT NULL,
    dl integer CONSTRAINT bm25_postings_dl_not_null NOT NULL,
    text_search_config regconfig CONSTRAINT bm25_postings_text_search_config_not_null NOT NULL
);

--
-- Name: bm25_term_stats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_term_stats (
    vault_id bigint NOT NULL,
    lexeme text NOT NULL,
    chunk_frequency integer NOT NULL,
    level smallint NOT NULL,
    CONSTRAINT bm25_term_stats_chunk_frequency_check CHECK ((chunk_frequency >= 0)),
    CONSTRAINT bm25_term_stats_level_check CHECK (((level >= 1) AND (level <= 4)))
)
PARTITION BY LIST (vault_id);

--
-- Name: bm25_term_stats_shared; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_term_stats_shared (
    vault_id bigint CONSTRAINT bm25_term_stats_vault_id_not_null NOT NULL,
    lexeme text CONSTRAINT bm25_term_stats_lexeme_not_null NOT NULL,
    chunk_frequency integer CONSTRAINT bm25_term_stats_chunk_frequency_not_null NOT NULL,
    level smallint CONSTRAINT bm25_term_stats_level_not_null NOT NULL,
    CONSTRAINT bm25_term_stats_chunk_frequency_check CHECK ((chunk_frequency >= 0)),
    CONSTRAINT bm25_term_stats_level_check CHECK (((level >= 1) AND (level <= 4)))
);

--
-- Name: bm25_vault_stats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bm25_vault_stats (
    vault_id bigint NOT NULL,
    chunk_count bigint DEFAULT 0 NOT NULL,
    total_length bigint DEFAULT 0 NOT NULL,
    level smallint NOT NULL,
    CONSTRAINT bm25_vault_stats_level_check CHECK (((level >= 1) AND (level <= 4)))
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
    content_tsv tsvector,
    lexeme_count integer,
    CONSTRAINT chunks_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT chunks_risk_score_check CHECK (((risk_score >= (0)::double precision) AND (risk_score <= (1)::double precision)))
)
PARTITION BY LIST (vault_id);

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
-- Name: chunks_shared; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.chunks_shared (
    id bigint CONSTRAINT chunks_id_not_null NOT NULL,
    document_id bigint CONSTRAINT chunks_document_id_not_null NOT NULL,
    vault_id bigint CONSTRAINT chunks_vault_id_not_null NOT NULL,
    ordinal integer CONSTRAINT chunks_ordinal_not_null NOT NULL,
    heading_path text DEFAULT ''::text CONSTRAINT chunks_heading_path_not_null NOT NULL,
    content text CONSTRAINT chunks_content_not_null NOT NULL,
    token_count integer DEFAULT 0 CONSTRAINT chunks_token_count_not_null NOT NULL,
    start_line integer,
    end_line integer,
    start_byte integer,
    end_byte integer,
    risk_flags text[] DEFAULT '{}'::text[] CONSTRAINT chunks_risk_flags_not_null NOT NULL,
    risk_score real DEFAULT 0 CONSTRAINT chunks_risk_score_not_null NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb CONSTRAINT chunks_metadata_not_null NOT NULL,
    text_search_config regconfig DEFAULT 'english'::regconfig CONSTRAINT chunks_text_search_config_not_null NOT NULL,
    content_tsv tsvector,
    lexeme_count integer,
    CONSTRAINT chunks_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT chunks_risk_score_check CHECK (((risk_score >= (0)::double precision) AND (risk_score <= (1)::double precision)))
);

--
-- Name: deferred_indexes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.deferred_indexes (
    index_name text NOT NULL,
    table_name text NOT NULL,
    definition text NOT NULL,
    deferred_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: document_retrievals; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.document_retrievals (
    document_id bigint NOT NULL,
    retrievals bigint DEFAULT 0 NOT NULL,
    last_retrieved_at timestamp with time zone DEFAULT now() NOT NULL,
    vault_id bigint NOT NULL
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
-- Name: index_runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.index_runs (
    id uuid NOT NULL,
    vaults text[] DEFAULT '{}'::text[] NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    progress jsonb DEFAULT '{}'::jsonb NOT NULL,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    origin text DEFAULT 'api'::text NOT NULL,
    CONSTRAINT index_runs_origin_check CHECK ((origin = ANY (ARRAY['api'::text, 'cli'::text]))),
    CONSTRAINT index_runs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'interrupted'::text])))
);

--
-- Name: links_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.links ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.links_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: note_vectors; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.note_vectors (
    vault_id bigint NOT NULL,
    document_id bigint NOT NULL,
    model_id integer NOT NULL,
    field text NOT NULL,
    source_hash text NOT NULL,
    embedding public.vector NOT NULL,
    CONSTRAINT note_vectors_field_check CHECK ((field = ANY (ARRAY['outline'::text, 'inbound'::text])))
);

--
-- Name: query_embeddings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.query_embeddings (
    model_id integer NOT NULL,
    query_key text NOT NULL,
    query_text text NOT NULL,
    embedding public.vector NOT NULL,
    uses bigint DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_used_at timestamp with time zone DEFAULT now() NOT NULL,
    cached_by name DEFAULT CURRENT_USER NOT NULL
);

--
-- Name: ragpg_console_roles; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ragpg_console_roles (
    role_name name NOT NULL,
    clearance text NOT NULL,
    vaults text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ragpg_console_roles_clearance_check CHECK ((clearance = ANY (ARRAY['public'::text, 'internal'::text, 'confidential'::text, 'restricted'::text])))
);

--
-- Name: ragpg_index_runs_recent; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.ragpg_index_runs_recent WITH (security_invoker='true') AS
 SELECT id,
    origin,
    vaults,
    status,
    error,
    ((progress ->> 'files_seen'::text))::bigint AS files_seen,
    ((progress ->> 'files_indexed'::text))::bigint AS files_indexed,
    ((progress ->> 'files_skipped'::text))::bigint AS files_skipped,
    ((progress ->> 'chunks_written'::text))::bigint AS chunks_written,
    created_at,
    finished_at,
    (finished_at - created_at) AS duration
   FROM public.index_runs r
  ORDER BY created_at DESC;

--
-- Name: ragpg_indexed_folders; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.ragpg_indexed_folders WITH (security_invoker='true') AS
 SELECT v.name AS vault,
    d.folder,
    count(*) AS documents,
    (sum(cc.chunks))::bigint AS chunks,
    (sum(cc.tokens))::bigint AS tokens,
    (sum(d.size_bytes))::bigint AS bytes,
    max(d.indexed_at) AS last_indexed_at
   FROM ((public.documents d
     JOIN public.vaults v ON ((v.id = d.vault_id)))
     CROSS JOIN LATERAL ( SELECT count(*) AS chunks,
            COALESCE(sum(c.token_count), (0)::bigint) AS tokens
           FROM public.chunks c
          WHERE (c.document_id = d.id)) cc)
  GROUP BY v.name, d.folder;

--
-- Name: ragpg_indexed_vaults; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.ragpg_indexed_vaults WITH (security_invoker='true') AS
 SELECT name AS vault,
    root_path,
    ( SELECT count(*) AS count
           FROM public.documents d
          WHERE (d.vault_id = v.id)) AS documents,
    ( SELECT count(*) AS count
           FROM public.chunks c
          WHERE (c.vault_id = v.id)) AS chunks,
    ( SELECT COALESCE(sum(d.size_bytes), (0)::numeric) AS "coalesce"
           FROM public.documents d
          WHERE (d.vault_id = v.id)) AS bytes,
    last_indexed_at
   FROM public.vaults v;

--
-- Name: ragpg_largest_notes; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.ragpg_largest_notes WITH (security_invoker='true') AS
 SELECT v.name AS vault,
    d.source_path,
    d.title,
    d.size_bytes,
    cc.chunks,
    cc.tokens,
    d.indexed_at
   FROM ((public.documents d
     JOIN public.vaults v ON ((v.id = d.vault_id)))
     CROSS JOIN LATERAL ( SELECT count(*) AS chunks,
            COALESCE(sum(c.token_count), (0)::bigint) AS tokens
           FROM public.chunks c
          WHERE (c.document_id = d.id)) cc)
  ORDER BY d.size_bytes DESC, v.name, d.source_path;

--
-- Name: ragpg_most_retrieved_notes; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.ragpg_most_retrieved_notes WITH (security_invoker='true') AS
 SELECT v.name AS vault,
    d.source_path,
    d.title,
    r.retrievals,
    r.last_retrieved_at
   FROM ((public.document_retrievals r
     JOIN public.documents d ON ((d.id = r.document_id)))
     JOIN public.vaults v ON ((v.id = d.vault_id)))
  ORDER BY r.retrievals DESC, r.last_retrieved_at DESC, v.name, d.source_path;

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
-- Name: bm25_postings_shared; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_postings ATTACH PARTITION public.bm25_postings_shared DEFAULT;

--
-- Name: bm25_term_stats_shared; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_term_stats ATTACH PARTITION public.bm25_term_stats_shared DEFAULT;

--
-- Name: chunks_shared; Type: TABLE ATTACH; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks ATTACH PARTITION public.chunks_shared DEFAULT;

--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);

--
-- Name: api_keys api_keys_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);

--
-- Name: api_keys api_keys_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_name_key UNIQUE (name);

--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

--
-- Name: bm25_deferred bm25_deferred_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_deferred
    ADD CONSTRAINT bm25_deferred_pkey PRIMARY KEY (vault_id);

--
-- Name: bm25_indexes bm25_indexes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_indexes
    ADD CONSTRAINT bm25_indexes_pkey PRIMARY KEY (vault_id);

--
-- Name: bm25_postings bm25_postings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_postings
    ADD CONSTRAINT bm25_postings_pkey PRIMARY KEY (vault_id, lexeme, chunk_id) INCLUDE (tf, dl, text_search_config);

--
-- Name: bm25_postings_shared bm25_postings_shared_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_postings_shared
    ADD CONSTRAINT bm25_postings_shared_pkey PRIMARY KEY (vault_id, lexeme, chunk_id) INCLUDE (tf, dl, text_search_config);

--
-- Name: bm25_term_stats bm25_term_stats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_term_stats
    ADD CONSTRAINT bm25_term_stats_pkey PRIMARY KEY (vault_id, lexeme, level);

--
-- Name: bm25_term_stats_shared bm25_term_stats_shared_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_term_stats_shared
    ADD CONSTRAINT bm25_term_stats_shared_pkey PRIMARY KEY (vault_id, lexeme, level);

--
-- Name: bm25_vault_stats bm25_vault_stats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_vault_stats
    ADD CONSTRAINT bm25_vault_stats_pkey PRIMARY KEY (vault_id, level);

--
-- Name: chunks chunks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_pkey PRIMARY KEY (vault_id, id);

--
-- Name: chunks_shared chunks_shared_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks_shared
    ADD CONSTRAINT chunks_shared_pkey PRIMARY KEY (vault_id, id);

--
-- Name: chunks chunks_vault_id_document_id_ordinal_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_vault_id_document_id_ordinal_key UNIQUE (vault_id, document_id, ordinal);

--
-- Name: chunks_shared chunks_shared_vault_id_document_id_ordinal_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.chunks_shared
    ADD CONSTRAINT chunks_shared_vault_id_document_id_ordinal_key UNIQUE (vault_id, document_id, ordinal);

--
-- Name: deferred_indexes deferred_indexes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.deferred_indexes
    ADD CONSTRAINT deferred_indexes_pkey PRIMARY KEY (index_name);

--
-- Name: document_retrievals document_retrievals_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.document_retrievals
    ADD CONSTRAINT document_retrievals_pkey PRIMARY KEY (vault_id, document_id);

--
-- Name: documents documents_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (vault_id, id);

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
-- Name: index_runs index_runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.index_runs
    ADD CONSTRAINT index_runs_pkey PRIMARY KEY (id);

--
-- Name: link_targets link_targets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_targets
    ADD CONSTRAINT link_targets_pkey PRIMARY KEY (vault_id, link_id, level);

--
-- Name: links links_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.links
    ADD CONSTRAINT links_pkey PRIMARY KEY (vault_id, id);

--
-- Name: note_vectors note_vectors_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.note_vectors
    ADD CONSTRAINT note_vectors_pkey PRIMARY KEY (vault_id, document_id, model_id, field);

--
-- Name: query_embeddings query_embeddings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.query_embeddings
    ADD CONSTRAINT query_embeddings_pkey PRIMARY KEY (model_id, query_key, cached_by);

--
-- Name: ragpg_console_roles ragpg_console_roles_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ragpg_console_roles
    ADD CONSTRAINT ragpg_console_roles_pkey PRIMARY KEY (role_name);

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
-- Name: bm25_indexes_table_name_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX bm25_indexes_table_name_idx ON public.bm25_indexes USING btree (table_name);

--
-- Name: chunks_date_array_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_date_array_idx ON ONLY public.chunks USING btree (id) WHERE (jsonb_typeof((metadata -> 'date'::text)) = 'array'::text);

--
-- Name: chunks_date_array_idx_shared; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_date_array_idx_shared ON public.chunks_shared USING btree (id) WHERE (jsonb_typeof((metadata -> 'date'::text)) = 'array'::text);

--
-- Name: chunks_date_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_date_idx ON ONLY public.chunks USING btree (((metadata ->> 'date'::text)) COLLATE "C");

--
-- Name: chunks_date_idx_shared; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_date_idx_shared ON public.chunks_shared USING btree (((metadata ->> 'date'::text)) COLLATE "C");

--
-- Name: chunks_folder_array_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_folder_array_idx ON ONLY public.chunks USING btree (id) WHERE (jsonb_typeof((metadata -> 'folder'::text)) = 'array'::text);

--
-- Name: chunks_folder_array_idx_shared; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_folder_array_idx_shared ON public.chunks_shared USING btree (id) WHERE (jsonb_typeof((metadata -> 'folder'::text)) = 'array'::text);

--
-- Name: chunks_folder_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_folder_idx ON ONLY public.chunks USING btree (((metadata ->> 'folder'::text)) text_pattern_ops);

--
-- Name: chunks_folder_idx_shared; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_folder_idx_shared ON public.chunks_shared USING btree (((metadata ->> 'folder'::text)) text_pattern_ops);

--
-- Name: chunks_metadata_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_metadata_idx ON ONLY public.chunks USING gin (metadata jsonb_path_ops);

--
-- Name: chunks_metadata_idx_shared; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX chunks_metadata_idx_shared ON public.chunks_shared USING gin (metadata jsonb_path_ops);

--
-- Name: document_retrievals_count_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX document_retrievals_count_idx ON public.document_retrievals USING btree (retrievals DESC);

--
-- Name: documents_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX documents_id_idx ON public.documents USING btree (id);

--
-- Name: documents_vault_folder_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX documents_vault_folder_idx ON public.documents USING btree (vault_id, folder);

--
-- Name: link_targets_target_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX link_targets_target_idx ON public.link_targets USING btree (target_document_id, level) WHERE (target_document_id IS NOT NULL);

--
-- Name: links_id_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX links_id_idx ON public.links USING btree (id);

--
-- Name: links_source_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX links_source_idx ON public.links USING btree (source_document_id);

--
-- Name: bm25_postings_shared_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.bm25_postings_pkey ATTACH PARTITION public.bm25_postings_shared_pkey;

--
-- Name: bm25_term_stats_shared_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.bm25_term_stats_pkey ATTACH PARTITION public.bm25_term_stats_shared_pkey;

--
-- Name: chunks_date_array_idx_shared; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.chunks_date_array_idx ATTACH PARTITION public.chunks_date_array_idx_shared;

--
-- Name: chunks_date_idx_shared; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.chunks_date_idx ATTACH PARTITION public.chunks_date_idx_shared;

--
-- Name: chunks_folder_array_idx_shared; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.chunks_folder_array_idx ATTACH PARTITION public.chunks_folder_array_idx_shared;

--
-- Name: chunks_folder_idx_shared; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.chunks_folder_idx ATTACH PARTITION public.chunks_folder_idx_shared;

--
-- Name: chunks_metadata_idx_shared; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.chunks_metadata_idx ATTACH PARTITION public.chunks_metadata_idx_shared;

--
-- Name: chunks_shared_pkey; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.chunks_pkey ATTACH PARTITION public.chunks_shared_pkey;

--
-- Name: chunks_shared_vault_id_document_id_ordinal_key; Type: INDEX ATTACH; Schema: public; Owner: -
--

ALTER INDEX public.chunks_vault_id_document_id_ordinal_key ATTACH PARTITION public.chunks_shared_vault_id_document_id_ordinal_key;

--
-- Name: bm25_indexes bm25_indexes_drop_table; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER bm25_indexes_drop_table AFTER DELETE ON public.bm25_indexes FOR EACH ROW EXECUTE FUNCTION public.ragpg_bm25_index_drop_table();

--
-- Name: chunks chunks_bm25_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_delete AFTER DELETE ON public.chunks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_stats_sync();

--
-- Name: chunks chunks_bm25_index_delete; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_index_delete AFTER DELETE ON public.chunks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_index_sync();

--
-- Name: chunks chunks_bm25_index_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_index_insert AFTER INSERT ON public.chunks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_index_sync();

--
-- Name: chunks chunks_bm25_index_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_index_update AFTER UPDATE ON public.chunks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_index_sync();

--
-- Name: chunks chunks_bm25_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_insert AFTER INSERT ON public.chunks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_stats_sync();

--
-- Name: chunks chunks_bm25_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_bm25_update AFTER UPDATE ON public.chunks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.ragpg_bm25_stats_sync();

--
-- Name: chunks chunks_tsvector; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER chunks_tsvector BEFORE INSERT OR UPDATE ON public.chunks FOR EACH ROW EXECUTE FUNCTION public.ragpg_chunks_tsvector();

--
-- Name: vaults vaults_partitions_drop; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER vaults_partitions_drop BEFORE DELETE ON public.vaults FOR EACH ROW EXECUTE FUNCTION public.ragpg_vault_partitions_drop();

--
-- Name: bm25_deferred bm25_deferred_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_deferred
    ADD CONSTRAINT bm25_deferred_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: bm25_indexes bm25_indexes_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_indexes
    ADD CONSTRAINT bm25_indexes_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: bm25_term_stats bm25_term_stats_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.bm25_term_stats
    ADD CONSTRAINT bm25_term_stats_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: bm25_vault_stats bm25_vault_stats_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bm25_vault_stats
    ADD CONSTRAINT bm25_vault_stats_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: chunks chunks_vault_id_document_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.chunks
    ADD CONSTRAINT chunks_vault_id_document_id_fkey FOREIGN KEY (vault_id, document_id) REFERENCES public.documents(vault_id, id) ON DELETE CASCADE;

--
-- Name: chunks chunks_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE public.chunks
    ADD CONSTRAINT chunks_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: document_retrievals document_retrievals_vault_id_document_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.document_retrievals
    ADD CONSTRAINT document_retrievals_vault_id_document_id_fkey FOREIGN KEY (vault_id, document_id) REFERENCES public.documents(vault_id, id) ON DELETE CASCADE;

--
-- Name: documents documents_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: link_targets link_targets_vault_id_link_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_targets
    ADD CONSTRAINT link_targets_vault_id_link_id_fkey FOREIGN KEY (vault_id, link_id) REFERENCES public.links(vault_id, id) ON DELETE CASCADE;

--
-- Name: link_targets link_targets_vault_id_target_document_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.link_targets
    ADD CONSTRAINT link_targets_vault_id_target_document_id_fkey FOREIGN KEY (vault_id, target_document_id) REFERENCES public.documents(vault_id, id) ON DELETE SET NULL (target_document_id);

--
-- Name: links links_vault_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.links
    ADD CONSTRAINT links_vault_id_fkey FOREIGN KEY (vault_id) REFERENCES public.vaults(id) ON DELETE CASCADE;

--
-- Name: links links_vault_id_source_document_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.links
    ADD CONSTRAINT links_vault_id_source_document_id_fkey FOREIGN KEY (vault_id, source_document_id) REFERENCES public.documents(vault_id, id) ON DELETE CASCADE;

--
-- Name: note_vectors note_vectors_model_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.note_vectors
    ADD CONSTRAINT note_vectors_model_id_fkey FOREIGN KEY (model_id) REFERENCES public.embedding_models(id) ON DELETE CASCADE;

--
-- Name: note_vectors note_vectors_vault_id_document_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.note_vectors
    ADD CONSTRAINT note_vectors_vault_id_document_id_fkey FOREIGN KEY (vault_id, document_id) REFERENCES public.documents(vault_id, id) ON DELETE CASCADE;

--
-- Name: query_embeddings query_embeddings_model_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.query_embeddings
    ADD CONSTRAINT query_embeddings_model_id_fkey FOREIGN KEY (model_id) REFERENCES public.embedding_models(id) ON DELETE CASCADE;

--
-- Name: bm25_postings; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.bm25_postings ENABLE ROW LEVEL SECURITY;

--
-- Name: bm25_postings_shared; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.bm25_postings_shared ENABLE ROW LEVEL SECURITY;

--
-- Name: bm25_term_stats; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.bm25_term_stats ENABLE ROW LEVEL SECURITY;

--
-- Name: bm25_term_stats_shared; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.bm25_term_stats_shared ENABLE ROW LEVEL SECURITY;

--
-- Name: bm25_vault_stats; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.bm25_vault_stats ENABLE ROW LEVEL SECURITY;

--
-- Name: chunks; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.chunks ENABLE ROW LEVEL SECURITY;

--
-- Name: chunks_shared; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.chunks_shared ENABLE ROW LEVEL SECURITY;

--
-- Name: document_retrievals; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.document_retrievals ENABLE ROW LEVEL SECURITY;

--
-- Name: documents; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.documents ENABLE ROW LEVEL SECURITY;

--
-- Name: link_targets; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.link_targets ENABLE ROW LEVEL SECURITY;

--
-- Name: links; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.links ENABLE ROW LEVEL SECURITY;

--
-- Name: note_vectors; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.note_vectors ENABLE ROW LEVEL SECURITY;

--
-- Name: query_embeddings; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.query_embeddings ENABLE ROW LEVEL SECURITY;

--
-- Name: vaults ragpg_definer_reads; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_definer_reads ON public.vaults FOR SELECT TO ragpg_definer USING (true);

--
-- Name: bm25_postings ragpg_reader_rows; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_reader_rows ON public.bm25_postings FOR SELECT TO ragpg_reader USING ((vault_id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])));

--
-- Name: bm25_postings ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.bm25_postings FOR SELECT USING ((EXISTS ( SELECT 1
   FROM public.chunks c
  WHERE ((c.vault_id = bm25_postings.vault_id) AND (c.id = bm25_postings.chunk_id)))));

--
-- Name: bm25_term_stats ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.bm25_term_stats FOR SELECT USING (((vault_id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])) AND (level <= ( SELECT public.ragpg_scope_clearance_rank(CURRENT_USER) AS ragpg_scope_clearance_rank))));

--
-- Name: bm25_vault_stats ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.bm25_vault_stats FOR SELECT USING (((vault_id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])) AND (level <= ( SELECT public.ragpg_scope_clearance_rank(CURRENT_USER) AS ragpg_scope_clearance_rank))));

--
-- Name: chunks ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.chunks FOR SELECT USING (((vault_id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])) AND (public.ragpg_chunk_level(metadata) <= ( SELECT public.ragpg_scope_clearance_rank(CURRENT_USER) AS ragpg_scope_clearance_rank))));

--
-- Name: document_retrievals ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.document_retrievals FOR SELECT USING ((EXISTS ( SELECT 1
   FROM public.documents d
  WHERE ((d.vault_id = document_retrievals.vault_id) AND (d.id = document_retrievals.document_id)))));

--
-- Name: documents ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.documents FOR SELECT USING (((vault_id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])) AND (COALESCE(public.ragpg_level_rank(confidentiality), 4) <= ( SELECT public.ragpg_scope_clearance_rank(CURRENT_USER) AS ragpg_scope_clearance_rank))));

--
-- Name: link_targets ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.link_targets FOR SELECT USING (((vault_id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])) AND (level <= ( SELECT public.ragpg_scope_clearance_rank(CURRENT_USER) AS ragpg_scope_clearance_rank)) AND (EXISTS ( SELECT 1
   FROM public.links l
  WHERE ((l.vault_id = link_targets.vault_id) AND (l.id = link_targets.link_id)))) AND ((target_document_id IS NULL) OR (EXISTS ( SELECT 1
   FROM public.documents t
  WHERE ((t.vault_id = link_targets.vault_id) AND (t.id = link_targets.target_document_id)))))));

--
-- Name: links ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.links FOR SELECT USING (((vault_id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])) AND (EXISTS ( SELECT 1
   FROM public.documents d
  WHERE ((d.vault_id = links.vault_id) AND (d.id = links.source_document_id))))));

--
-- Name: note_vectors ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.note_vectors FOR SELECT USING ((EXISTS ( SELECT 1
   FROM public.documents d
  WHERE ((d.vault_id = note_vectors.vault_id) AND (d.id = note_vectors.document_id)))));

--
-- Name: query_embeddings ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.query_embeddings FOR SELECT USING ((cached_by = CURRENT_USER));

--
-- Name: vaults ragpg_scope; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY ragpg_scope ON public.vaults FOR SELECT USING ((id = ANY (( SELECT public.ragpg_scope_vault_ids(CURRENT_USER) AS ragpg_scope_vault_ids)::bigint[])));

--
-- Name: vaults; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.vaults ENABLE ROW LEVEL SECURITY;

--
-- PostgreSQL database dump complete
--
