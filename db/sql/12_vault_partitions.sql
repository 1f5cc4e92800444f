-- Partitions by vault (revision 0014), bounded (revision 0020): every content table is list-partitioned
-- on vault_id. A vault of more than ingest.own_partition_min_chunks chunks has a partition of its own
-- (`<table>_p<vault id>`: its own HNSW graph, GIN indexes and postings); every smaller vault's rows
-- share the tables' default partition (`<table>_shared`). So a search naming no vault visits the
-- shared graph plus one graph per large vault, at most corpus / threshold of them, however many
-- vaults there are (with 1,000 vaults, one partition each, it visited 1,000 graphs one after another:
-- docs/scaling.md). A search naming a small vault finds its rows by vault in the shared partition
-- and scans them exactly (ragpg_vector_scores): they are at most the exact-scan bound.
--
-- A vault moves to partitions of its own at index time, when its stored chunks plus those being
-- indexed pass the threshold (ragpg_place_vault, called by rag/ingest before writing): its rows are
-- moved as they are (ids, postings, statistics), in one transaction. A vault never moves back.
-- Removing a vault drops its partitions, or deletes its rows from the shared ones.
--
-- To partition one more table by vault (revision 0015's `links`, say): create it `partition by list
-- (vault_id)` with the vault in its keys, add its name to ragpg_vault_partitioned_tables below, and
-- in that revision give it a default partition and run `select ragpg_create_vault_partitions(id)`
-- for the vaults with partitions of their own (db/sql runs both again).

-- The tables partitioned by vault, parents before the tables whose foreign keys reference them.
create or replace function ragpg_vault_partitioned_tables() returns setof regclass
language sql stable
set search_path = public, pg_catalog, pg_temp
as $$
    select c.oid::regclass
    from (select t, o from unnest(array['chunks', 'bm25_postings', 'bm25_term_stats']) with ordinality as u (t, o)
          union all
          select m.embedding_table, 100 + m.id from embedding_models m) t
    join pg_class c on c.oid = to_regclass(quote_ident(t.t))
    where c.relkind = 'p'  -- a table a later revision partitions is absent, or plain, before it runs
    order by t.o
$$;

-- A vault's partition of p_table: <table>_p<vault id>, shortened with a hash of the table's name when
-- that is beyond Postgres' 63-byte identifiers (a long model name's embedding table).
create or replace function ragpg_vault_partition_name(p_table text, p_vault_id bigint) returns text
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return case when length(p_table || '_p' || p_vault_id) <= 63 then p_table || '_p' || p_vault_id
            else left(p_table, 63 - 8 - length(p_vault_id::text)) || '_' || left(md5(p_table), 5) || '_p' || p_vault_id
       end;

-- The indexes Postgres made on a partition are named after the parent's (<parent index>_p<vault>), so a
-- plan names the index it uses the way the parent's is known (the model's <table>_hnsw_idx).
create or replace function ragpg_name_partition_indexes(p_partition regclass, p_vault_id bigint) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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

-- The shared (default) partition of p_table: <table>_shared, shortened like a vault's partition name.
create or replace function ragpg_shared_partition_name(p_table text) returns text
language sql immutable parallel safe strict
set search_path = pg_catalog, pg_temp
return case when length(p_table || '_shared') <= 63 then p_table || '_shared'
            else left(p_table, 63 - 13) || '_' || left(md5(p_table), 5) || '_shared'
       end;

-- Whether the vault's rows are in partitions of its own (else in the shared ones). The chunks'
-- partition tells: a bulk load may hold the vault's embeddings partition detached for a while.
-- (A string body: the migrations' downgrade drops functions one by one, ragpg_vault_partition_name
-- among them.)
create or replace function ragpg_vault_has_own_partition(p_vault_id bigint) returns boolean
language sql stable parallel safe strict
set search_path = public, pg_catalog, pg_temp
as $$
    select to_regclass(quote_ident(ragpg_vault_partition_name('chunks', p_vault_id))) is not null
$$;

-- The chunk count above which a vault gets partitions of its own when nothing else says it
-- (ingest.own_partition_min_chunks is the setting; this is its default, for the migration and SQL
-- callers): the exact-scan bound (retrieval.exact_scan_max_rows), so a vault left in the shared
-- partition is always small enough to be scanned exactly.
create or replace function ragpg_own_partition_min_chunks() returns integer
language sql immutable parallel safe
return 10000;

-- A partition closed to everyone but its owner: readers read through the parent, whose grants and
-- row-level security apply; a partition read directly would bypass them, so it has row-level
-- security on and no policy.
create or replace function ragpg_close_partition(p_partition text) returns void
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    execute format('revoke all on %I from public', p_partition);
    execute format('alter table %I enable row level security', p_partition);
end
$$;

-- The default partition of every partitioned content table (idempotent), closed, its indexes named
-- <parent index>_shared. Returns how many were made.
create or replace function ragpg_create_shared_partitions() returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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

-- The vault's partition of every partitioned content table (idempotent), each closed. The shared
-- partition must hold none of the vault's rows (Postgres checks: ragpg_place_vault moves them first).
create or replace function ragpg_create_vault_partitions(p_vault_id bigint) returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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

-- Every vault with partitions of its own, and the shared partitions: made where missing (a new
-- model's table), closed, their indexes named.
create or replace function ragpg_secure_partitions() returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    perform ragpg_create_shared_partitions();
    return (select count(ragpg_create_vault_partitions(v.id)) from vaults v where ragpg_vault_has_own_partition(v.id));
end
$$;

-- Moves the vault's rows out of the shared partitions into partitions of its own, as they are (ids,
-- vectors, postings, statistics). The chunk triggers stand aside meanwhile (ragpg.moving_vault: the
-- rows leave and come back unchanged, so the statistics, postings and bm25 index tables they keep
-- are already right). Creating a partition beside a default one locks the default partition while
-- Postgres checks it holds none of the vault's rows: searches of the small vaults wait that long.
create or replace function ragpg_move_vault_to_own_partitions(p_vault_id bigint) returns bigint
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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
$$;

-- Index time (rag/ingest, before writing): a vault in the shared partitions whose stored chunks plus
-- p_expected_chunks pass p_min_chunks (null: ragpg_own_partition_min_chunks()) moves to partitions of its
-- own. True when it moved. (The default is read in the body, not written as the parameter's default: a
-- default expression makes this function depend on that one, and 0001's downgrade, which drops every
-- ragpg_ function one by one, then meets this one already dropped.)
create or replace function ragpg_place_vault(p_vault_id bigint, p_expected_chunks bigint,
                                             p_min_chunks bigint default null)
returns boolean
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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

-- Whether a chunk trigger stands aside: the rows of this statement are a vault being moved between
-- partitions (ragpg_move_vault_to_own_partitions), which leave and come back unchanged.
create or replace function ragpg_moving_vault() returns boolean
language sql stable parallel safe
set search_path = pg_catalog, pg_temp
return coalesce(current_setting('ragpg.moving_vault', true), '') <> '';

-- Drops the vault's partitions, referencing tables first (their rows go with them, no trigger runs).
-- Each is detached first: a partition that a foreign key references (the chunks') cannot be dropped
-- while attached, and detaching it checks that no row still points into it. A vault in the shared
-- partitions has its rows deleted there instead, the chunk triggers standing aside (its statistics
-- go with it). The vault's bm25_vault_stats rows and documents go with the vault row (foreign keys).
create or replace function ragpg_drop_vault_partitions(p_vault_id bigint) returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
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
$$;

create or replace function ragpg_vault_partitions_drop() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    perform ragpg_drop_vault_partitions(old.id);
    return old;
end
$$;

-- A new vault starts in the shared partitions (revision 0020): nothing to make when it is added.
drop trigger if exists vaults_partitions_add on vaults;
drop function if exists ragpg_vault_partitions_add();
create or replace trigger vaults_partitions_drop before delete on vaults
    for each row execute function ragpg_vault_partitions_drop();

-- The shared partitions (made by revision 0020) and every vault's own: closed, their indexes named.
select ragpg_secure_partitions();
