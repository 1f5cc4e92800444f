-- The optional BM25 index backend: pg_textsearch's `bm25` index access method (block-max WAND over
-- its own postings) finds a vault's best chunks for a query without reading every posting of its
-- terms, where the SQL BM25 (50_lexical.sql) reads them all: its cost grows with the corpus.
--
-- Per vault, chosen at index time (`ragpg index` calls ragpg_enable_bm25_index when the setting
-- retrieval.lexical_backend allows it): a table ragpg_bm25_<vault id> (chunk_id, search_text =
-- ragpg_chunk_search_text(...), the same text the SQL BM25 analyses) with one bm25 index, built
-- with the vault's text search configuration and the k1/b it was asked for. One table per vault, not
-- a partial index: pg_textsearch 1.0.0 ignores a partial index's predicate and keeps corpus
-- statistics per index, while ragpg's statistics are per vault. Kept in step with chunks by the
-- statement-level triggers below.
--
-- A vault in the shared partitions (12_vault_partitions.sql) has no table of its own: its rows go to
-- one shared table, ragpg_bm25_shared (vault_id, chunk_id, search_text), with one bm25 index built
-- with the first such vault's configuration, k1 and b (a vault asking for others gets its own table),
-- so a search naming no vault reads one index for all the small vaults, not one per vault. That
-- index ranks with the statistics of every small vault together, so it is read deeper
-- (ragpg_bm25_shared_depth_factor) and its candidates scored exactly per vault like any other; it
-- serves only a search that covers every vault in it (naming no vault, say): one naming some of the
-- small vaults takes the SQL BM25, which reads their own postings (a small vault's are few).
--
-- The index only chooses candidates (ragpg_bm25_index_candidates): the postings score them exactly from
-- bm25_postings, so a chunk's bm25_score is the same number whichever backend found it (pg_textsearch
-- computes its own scores with float4 statistics, and returning them per row costs about 0.4 ms a
-- row in 1.0.0; its order is used, its scores are not). ragpg_lexical_backend decides per call: the
-- index only when every vault searched has one built with the requested k1 and b, the library is
-- loaded (an index whose library is not preloaded cannot be scanned) and there is no metadata filter
-- (pg_textsearch filters after its top-k, so a selective filter would empty the list; the SQL BM25
-- filters before the cut). Anything else takes the SQL BM25, which is always there.
-- (create or replace: when a signature changes, add `drop function if exists <old signature>;` first.)

-- Whether this server can scan bm25 indexes now: the library is preloaded (its GUC exists only
-- then) and the extension is installed in this database.
create or replace function ragpg_bm25_index_available() returns boolean
language sql stable parallel safe
set search_path = public, pg_catalog, pg_temp
return current_setting('pg_textsearch.library_version', true) is not null
       and exists (select 1 from pg_extension where extname = 'pg_textsearch');

-- Which lexical backend a search over these vaults (null = all) with this filter, k1/b, candidate
-- count and query text (null: not known) uses: 'pg_textsearch' or 'sql'. The same rule
-- ragpg_lexical_scores follows (with a metadata filter the index is tried first, and a search it
-- cannot prove still ends on the SQL BM25).
drop function if exists ragpg_lexical_backend(text[], jsonb, float8, float8);
drop function if exists ragpg_lexical_backend(text[], jsonb, float8, float8, integer);
create or replace function ragpg_lexical_backend(vault_names text[], filter jsonb, k1 float8, b float8,
                                                 candidate_count integer default 60, query_text text default null)
returns text
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
as $$
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

-- Per vault: the backend its own index would give and why not, for `ragpg db status`:
--   select * from ragpg_lexical_backends();
create or replace function ragpg_lexical_backends()
returns table (vault text, backend text, reason text, k1 float8, b float8)
language sql stable
set search_path = public, pg_catalog, pg_temp
as $$
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

-- pg_textsearch's functions (to_bm25query, bm25_text_bm25query_score, the <@> operator's, and its
-- index dumps) read an index's own corpus statistics, of every chunk of the vault: whoever may run
-- them learns whether a word occurs in notes above their clearance. So nobody but their owner may:
-- execution is revoked from PUBLIC (console roles and ragpg_reader have no grant of their own), and
-- ragpg searches through the index only for the owner (ragpg_lexical_backend). True when no
-- function of the extension is left to PUBLIC (a login that does not own the extension cannot
-- revoke: then the index is not used).
create or replace function ragpg_bm25_lock_down() returns boolean
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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

-- The table (and, with _idx, the index) of the small vaults' shared bm25 index.
create or replace function ragpg_bm25_shared_table() returns text
language sql immutable parallel safe
return 'ragpg_bm25_shared';

-- How much deeper than candidate_count + ragpg_bm25_index_extra_candidates() the shared index is read:
-- it ranks with every small vault's statistics together, where each chunk is scored with its own
-- vault's, so a chunk of a vault whose statistics favour it more than the pooled ones may stand
-- below the first candidates.
create or replace function ragpg_bm25_shared_depth_factor() returns integer
language sql immutable parallel safe
return 4;

-- Adds a small vault's chunks to the shared table (made, with its index, by the first vault; made
-- anew when no vault is in it any more). False when the shared index was built with another
-- configuration, k1 or b: the vault then gets a table of its own.
create or replace function ragpg_bm25_shared_add(p_vault_id bigint, p_config regconfig, p_k1 float8, p_b float8)
returns boolean
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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
$$;

-- Build (or rebuild, when its configuration, k1 or b differ) the bm25 index of one vault. Returns the
-- backend the vault has afterwards: 'sql' when pg_textsearch is not loaded or cannot be installed
-- here (installing it needs a superuser), never an error for that.
create or replace function ragpg_enable_bm25_index(p_vault text, p_k1 float8, p_b float8) returns text
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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
$$;

-- Back to the SQL BM25 for one vault (drops its table and index). True when there was one.
create or replace function ragpg_disable_bm25_index(p_vault text) returns boolean
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    delete from bm25_indexes i using vaults v where v.id = i.vault_id and v.name = p_vault;
    return found;
end
$$;

-- A row's table goes with it (vault removed, index disabled or rebuilt). Without the library the
-- index cannot even be dropped; the table is then left (nothing writes to it any more, nothing reads
-- it) and goes when an index is next built on a server that has the library.
create or replace function ragpg_bm25_index_drop_table() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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
$$;

-- Tables of vaults that have no bm25_indexes row any more (see above), dropped.
create or replace function ragpg_bm25_drop_orphan_tables() returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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
$$;

-- Candidates the index finds beyond those asked for: pg_textsearch scores with float4 statistics,
-- so chunks near the cut can trade places with ragpg's float8 scores; the exact scores of these
-- extra candidates settle the cut as the SQL BM25 would (on obsidian-help, 2 of 20 questions' top 10
-- differed at the last place without them).
create or replace function ragpg_bm25_index_extra_candidates() returns integer
language sql immutable parallel safe
return 20;

create or replace trigger bm25_indexes_drop_table
    after delete on bm25_indexes
    for each row execute function ragpg_bm25_index_drop_table();

-- Keeps every vault's table in step with chunks, one statement per vault touched (transition tables,
-- like ragpg_bm25_stats_sync). Nothing to do, and one cheap probe, when no vault has an index.
create or replace function ragpg_bm25_index_sync() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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
$$;

select ragpg_create_chunk_triggers('chunks_bm25_index', 'ragpg_bm25_index_sync');  -- 20_bm25_stats.sql

-- Exact BM25 scores of the given chunks from bm25_postings, with the term arrays ragpg_lexical_scores
-- computed (vault ids, configs, lexemes, qtf*idf weights, avgdl): the SQL BM25's formula, for the
-- chunks an index picked (here and in 56_bm25_filtered.sql). p_chunk_vault_ids: each chunk's vault
-- (parallel to p_chunk_ids). A chunk without a posting of the query's terms in its own config is
-- left out.
drop function if exists ragpg_bm25_exact_scores(bigint[], bigint[], regconfig[], text[], float8[], float8[], float8, float8);
create or replace function ragpg_bm25_exact_scores(p_chunk_ids bigint[], p_chunk_vault_ids bigint[], vault_ids bigint[],
                                                   cfgs regconfig[], lexemes text[], weights float8[],
                                                   avgdls float8[], k1 float8, b float8)
returns table (chunk_id bigint, bm25_score float8)
language plpgsql stable rows 60
set search_path = public, pg_catalog, pg_temp
set plan_cache_mode = auto  -- (set for each call below)
as $$
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

-- The indexed lexical leg's candidates: each vault's best candidate_count chunks by its bm25 index (ids
-- only, in index order; the small vaults' shared index once, deeper), with each one's vault. The
-- caller scores them exactly (ragpg_bm25_exact_scores) and keeps the best candidate_count.
create or replace function ragpg_bm25_index_candidates(query_text text, candidate_count integer, p_vault_ids bigint[],
                                                       out ids bigint[], out vault_ids bigint[])
language plpgsql stable
set search_path = public, pg_catalog, pg_temp
set plan_cache_mode = auto  -- (whatever its caller chose: pg_textsearch's scans are faster so)
as $$
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
$$;

-- The indexed lexical leg over the given vaults' term arrays (as ragpg_lexical_scores computes them):
-- the candidates above, their exact scores, the best candidate_count.
create or replace function ragpg_lexical_scores_indexed(query_text text, candidate_count integer,
                                                        vault_ids bigint[], cfgs regconfig[], lexemes text[],
                                                        weights float8[], avgdls float8[], k1 float8, b float8)
returns table (chunk_id bigint, bm25_score float8)
language plpgsql stable rows 60
set search_path = public, pg_catalog, pg_temp
as $$
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

-- Re-applied with every upgrade (an extension update may bring functions of its own).
do $$
begin
    if exists (select 1 from pg_extension where extname = 'pg_textsearch') and not ragpg_bm25_lock_down() then
        raise notice 'ragpg: pg_textsearch''s functions stay executable by every role: ask the extension''s owner to revoke them from PUBLIC';
    end if;
end
$$;
