-- Clearance in the database: row-level security on every table that holds note content.
--
-- Who is bound, and by what:
--   * a console role (`ragpg db console --clearance public --vault notes` makes one, recorded in
--     ragpg_console_roles): the clearance and vaults recorded for it. A session setting
--     (`set ragpg.clearance = ...`, `set ragpg.vaults = '["notes"]'`) may narrow that, never widen it.
--   * ragpg_reader (the role the server takes for a request made with a scoped API key): exactly
--     the session settings the server sets on the connection; without them it sees nothing.
--   * any other role that is not the tables' owner: nothing (fail closed).
-- The owner (the server's own login, migrations, index runs) is not bound: RLS is enabled, not forced.
-- match_* functions run as the invoker (none is SECURITY DEFINER), so the policies apply inside them.
-- BM25 statistics are read per confidentiality level (20_bm25_stats.sql) and cached questions per
-- role (90_console_search.sql); pg_textsearch's functions are the owner's alone (55_bm25_index.sql).

-- ragpg_level_rank and ragpg_chunk_level: 15_clearance_levels.sql.

-- The two functions below are SECURITY DEFINER: they read the registry that console roles cannot. A
-- definer function runs with its owner's rights on behalf of whoever calls it, so (issue 29):
--   * its owner is ragpg_definer (made below): no login, not a superuser, and granted only what
--     these two read (the registry, and the ids and names of vaults);
--   * its search_path puts pg_catalog first and the caller's temp schema LAST (a path that does not
--     name pg_temp searches it first for tables and types: a console role's temp table named
--     ragpg_console_roles or vaults took the place of ours);
--   * every table, function and operator in it is schema-qualified all the same.
-- A cluster-wide role of ragpg's, made once by whichever database gets there first, and the current
-- user made a member of it (to act as it, and to replace and re-own what it owns on every upgrade).
-- What cannot be done is a notice saying what then fails (p_consequence), never an error. A
-- function of this session only (pg_temp): nothing else can call it.
create or replace function pg_temp.ragpg_ensure_role(p_role name, p_options text, p_consequence text)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
begin
    if not exists (select 1 from pg_catalog.pg_roles where rolname = p_role) then
        begin
            execute format('create role %I %s', p_role, p_options);
        exception
            when duplicate_object or unique_violation then null;  -- another database made it meanwhile
            when insufficient_privilege then
                raise notice 'ragpg: cannot create role % (needs CREATEROLE): %', p_role, p_consequence;
        end;
    end if;
    if exists (select 1 from pg_catalog.pg_roles where rolname = p_role)
       and not pg_catalog.pg_has_role(current_user, p_role, 'member') then
        begin
            execute format('grant %I to %I', p_role, current_user);
        exception when insufficient_privilege then
            raise notice 'ragpg: % cannot become %: %', current_user, p_role, p_consequence;
        end;
    end if;
end
$$;

select pg_temp.ragpg_ensure_role('ragpg_definer', 'nologin noinherit nosuperuser nocreatedb nocreaterole nobypassrls',
                                 format('the scope functions stay owned by %I', current_user));

-- Whether the session asking may act as `p_invoker`: a console login is its own session user, and the
-- server's login becomes ragpg_reader (it is a member). The scope functions answer only then, so a role
-- that names another (the reader with a `ragpg.vaults` guess, another console login) learns nothing.
-- `session_user` is a keyword: no temp function can stand in for it.
create or replace function public.ragpg_scope_asker_is(p_invoker name) returns boolean
language sql stable
set search_path = pg_catalog, public, pg_temp
return pg_catalog.pg_has_role(session_user, p_invoker, 'MEMBER');

-- The highest rank the invoker may read (0: nothing). The policies pass `current_user`, the role the
-- rows are read as.
create or replace function public.ragpg_scope_clearance_rank(p_invoker name) returns integer
language plpgsql stable security definer
set search_path = pg_catalog, public, pg_temp
as $$
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

-- The ids of the vaults the invoker may read ('{}': none). `ragpg.vaults` is '*' or a JSON array of names.
create or replace function public.ragpg_scope_vault_ids(p_invoker name) returns bigint[]
language plpgsql stable security definer
set search_path = pg_catalog, public, pg_temp
as $$
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

-- Exactly what the two read; and they read every vault's name, whatever the policies say of it.
do $$
begin
    if exists (select 1 from pg_catalog.pg_roles where rolname = 'ragpg_definer')
       and pg_catalog.pg_has_role(current_user, 'ragpg_definer', 'member') then
        grant select on public.ragpg_console_roles to ragpg_definer;
        grant select (id, name) on public.vaults to ragpg_definer;
        begin
            alter function public.ragpg_scope_clearance_rank(name) owner to ragpg_definer;
            alter function public.ragpg_scope_vault_ids(name) owner to ragpg_definer;
        exception when insufficient_privilege then  -- a login that is no superuser, on a schema it cannot share
            raise notice 'ragpg: cannot give the scope functions to ragpg_definer (grant it CREATE on schema public): they stay owned by %', current_user;
        end;
    end if;
end
$$;

-- Every table a reader needs: the content tables, one embedding table per registered model and one
-- bm25 index table per vault that has one.
create or replace function ragpg_content_tables() returns setof regclass
language sql stable
set search_path = public, pg_catalog, pg_temp
as $$
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

-- RLS and policies on one table, by what its rows are keyed on. Idempotent (re-applied after upgrades
-- and when a model's embedding table is made).
create or replace function ragpg_secure_content_table(p_table regclass) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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

create or replace function ragpg_grant_console_select(p_role name, p_table regclass) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    execute format('grant select on %s to %I', p_table, p_role);
end
$$;

-- What a console login may write or hold besides its session (issue 47): large objects outlive it,
-- temporary tables have no size limit (temp_file_limit does not count them), an advisory lock can hold
-- an index run's vault lock forever. Each is taken from PUBLIC where this login can (temporary tables
-- as the database's owner; pg_catalog's functions as a superuser only) and given back to the login
-- running this (the owner: index runs take advisory locks). Run again by every `ragpg db console`, as
-- a database cloned from a template or restored from a dump starts with its default grants.
create or replace function ragpg_close_console_write_paths() returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
revoke all on function ragpg_close_console_write_paths() from public;

-- The write paths (and lasting holds) `p_role` still has: empty when ragpg_close_console_write_paths
-- could close them all. `ragpg db console` refuses a login while any is left (fail closed).
create or replace function ragpg_console_write_paths(p_role name) returns text[]
language sql stable
set search_path = pg_catalog, pg_temp
as $$
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
revoke all on function ragpg_console_write_paths(name) from public;

-- `ragpg db console`: the login role for a clearance and a set of vaults (null: every vault), made or
-- updated, recorded and granted read access. Needs CREATEROLE; the password is set by the caller.
create or replace function ragpg_ensure_console_role(p_clearance text, p_vaults text[]) returns name
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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

-- Logins made before their names were random carry a hash of their vault names: renamed here, once (a
-- role in use by the session running this, or one this login may not rename, keeps its name, with a notice).
do $$
declare
    r record;
    v_new name;
begin
    for r in select c.role_name, c.clearance from ragpg_console_roles c
             where c.vaults is not null
               and c.role_name = format('ragpg_console_%s_%s', c.clearance,
                                        left(md5(array_to_string(c.vaults, chr(31))), 10)) loop
        v_new := format('ragpg_console_%s_%s', r.clearance, left(md5(gen_random_uuid()::text), 12));
        begin
            execute format('alter role %I rename to %I', r.role_name, v_new);
            update ragpg_console_roles set role_name = v_new where role_name = r.role_name;
        exception when others then
            raise notice 'ragpg: console login % keeps its name (%)', r.role_name, sqlerrm;
        end;
    end loop;
end
$$;

-- The reader role is cluster-wide: made once; the owner must be able to become it.
select pg_temp.ragpg_ensure_role('ragpg_reader', 'nologin noinherit',
                                 'requests with a scoped API key will fail until it can');

select ragpg_secure_content_table(t) from ragpg_content_tables() t;
select ragpg_close_console_write_paths();

-- Row counts that row-level security cannot hide (issue 29). PostgreSQL's activity statistics count
-- every row of a table, hidden or not (pg_stat_user_tables and its kin: live, dead, inserted and
-- deleted rows, scans), and so do table sizes; both are open to every role by default. In this
-- database they are taken from PUBLIC and left to the owner and monitoring roles (pg_monitor). What
-- stays visible (planner estimates in pg_class and EXPLAIN, EXPLAIN ANALYZE's "Rows Removed by
-- Filter", timing, other databases' pg_stat_database) is a known limit: README, Security. Only a
-- superuser may change grants in pg_catalog; any other login leaves them as they are, with a notice.
do $$
declare
    v_fn regprocedure;
begin
    if not (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
        raise notice 'ragpg: % is not a superuser: the activity statistics (pg_stat_user_tables) stay readable by every role, hidden rows included', current_user;
        return;
    end if;
    for v_fn in select p.oid::regprocedure from pg_catalog.pg_proc p
                where p.pronamespace = 'pg_catalog'::regnamespace
                  and ((p.proname like 'pg\_stat\_get\_%' and p.pronargs = 1 and p.proargtypes[0] = 'oid'::regtype)
                       or p.proname in ('pg_relation_size', 'pg_total_relation_size', 'pg_table_size',
                                        'pg_indexes_size')) loop
        execute format('revoke execute on function %s from public', v_fn);
        execute format('grant execute on function %s to pg_monitor', v_fn);
    end loop;
end
$$;
