-- Partitions by vault (revision 0014): every content table is list-partitioned on vault_id, one
-- partition per vault, made when the vault is added and dropped when it is removed (a vault's removal
-- is a few DROP TABLEs, not a delete of its rows). A search naming a vault reads that partition only:
-- its own HNSW graph, GIN indexes and postings.
--
-- Every vault gets its own partition, however small: there is no shared default partition. A vault
-- that outgrew a shared partition would have to be moved out of it row by row with its statistics
-- and postings (an attach checks the default partition holds none of its rows), and a vault in a
-- shared partition would search a graph it shares with every other small vault, under a filter.
-- The price is one relation set per vault (about 15 with indexes): an unfiltered search over all
-- vaults visits every partition (docs/scaling.md has the figures).
--
-- To partition one more table by vault (revision 0015's `links`, say): create it `partition by list
-- (vault_id)` with the vault in its keys, add its name to ragpg_vault_partitioned_tables below, and
-- run `select ragpg_create_vault_partitions(id) from vaults` in that revision (db/sql runs it again).

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

-- The vault's partition of every partitioned content table (idempotent). Each is closed to everyone
-- but its owner: readers read through the parent, whose grants and row-level security apply; a
-- partition read directly would bypass them, so it has row-level security on and no policy.
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
        execute format('revoke all on %I from public', v_name);
        execute format('alter table %I enable row level security', v_name);
        perform ragpg_name_partition_indexes(to_regclass(quote_ident(v_name)), p_vault_id);
    end loop;
    return v_made;
end
$$;

-- Drops the vault's partitions, referencing tables first (their rows go with them, no trigger runs).
-- Each is detached first: a partition that a foreign key references (the chunks') cannot be dropped
-- while attached, and detaching it checks that no row still points into it. The vault's
-- bm25_vault_stats rows and documents go with the vault row (foreign keys).
create or replace function ragpg_drop_vault_partitions(p_vault_id bigint) returns integer
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
declare
    r record;
    v_dropped integer := 0;
begin
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

create or replace function ragpg_vault_partitions_add() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $$
begin
    perform ragpg_create_vault_partitions(new.id);
    return null;
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

create or replace trigger vaults_partitions_add after insert on vaults
    for each row execute function ragpg_vault_partitions_add();
create or replace trigger vaults_partitions_drop before delete on vaults
    for each row execute function ragpg_vault_partitions_drop();

-- Partitions the migration made get their index names; a vault without partitions gets them.
select ragpg_create_vault_partitions(id) from vaults;
