"""Bounded partitions by vault: small vaults share one default partition per content table (issue 49).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-08

0014 gave every vault a partition of `chunks`, `bm25_postings`, `bm25_term_stats` and each model's
embedding table, so a search naming no vault visited every vault's HNSW graph one after another. Now
each of those tables gets a default partition (`<table>_shared`, closed like the others), and the rows
of every vault of at most 10,000 chunks (ragpg_own_partition_min_chunks(), the exact-scan bound) move
into it as they are (ids, vectors, postings, statistics); their own partitions are dropped. Larger
vaults keep theirs. Later, a vault moves to partitions of its own at index time when it grows past
ingest.own_partition_min_chunks (db/sql/12_vault_partitions.sql).

The chunk triggers stand aside while rows move (the statistics and postings they keep do not change).
bm25_indexes' table and index names stop being unique: the small vaults' pg_textsearch index is one
table, `ragpg_bm25_shared`, for all of them (db/sql/55_bm25_index.sql).
Downgrade gives every vault in the shared partitions a partition of its own again, drops the shared
partitions, and makes a new vault get its partitions when it is added again.
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# The partitioned content tables (as db/sql's ragpg_vault_partitioned_tables), parents first, and the
# name of a table's partition for one vault or for the shared rows (db/sql's naming, frozen here).
HELPERS = r"""
create function pg_temp.ragpg_0020_tables() returns table (t regclass, o bigint)
language sql stable as $f$
    select c.oid::regclass, u.o
    from (select x, o from unnest(array['chunks', 'bm25_postings', 'bm25_term_stats']) with ordinality as v (x, o)
          union all select m.embedding_table, 100 + m.id from embedding_models m) u
    join pg_class c on c.oid = to_regclass(quote_ident(u.x)) and c.relkind = 'p'
$f$;
create function pg_temp.ragpg_0020_part(p_table regclass, p_vault_id bigint) returns text
language sql stable as $f$
    select case when length(c.relname || '_p' || p_vault_id) <= 63 then c.relname || '_p' || p_vault_id
                else left(c.relname, 63 - 8 - length(p_vault_id::text)) || '_' || left(md5(c.relname), 5)
                     || '_p' || p_vault_id end
    from pg_class c where c.oid = p_table
$f$;
create function pg_temp.ragpg_0020_shared(p_table regclass) returns text
language sql stable as $f$
    select case when length(c.relname || '_shared') <= 63 then c.relname || '_shared'
                else left(c.relname, 63 - 13) || '_' || left(md5(c.relname), 5) || '_shared' end
    from pg_class c where c.oid = p_table
$f$;
create function pg_temp.ragpg_0020_triggers(p_enable boolean) returns void
language plpgsql as $f$
declare
    r record;
begin
    for r in select t from pg_temp.ragpg_0020_tables() loop
        execute format('alter table %s %s trigger user', r.t, case when p_enable then 'enable' else 'disable' end);
    end loop;
end
$f$;
"""

UPGRADE = HELPERS + r"""
select pg_temp.ragpg_0020_triggers(false);
do $$
declare
    r record;
    v_small bigint[];
    v_id bigint;
begin
    for r in select t from pg_temp.ragpg_0020_tables() order by o loop
        execute format('create table %I partition of %s default', pg_temp.ragpg_0020_shared(r.t), r.t);
        execute format('revoke all on %I from public', pg_temp.ragpg_0020_shared(r.t));
        execute format('alter table %I enable row level security', pg_temp.ragpg_0020_shared(r.t));
    end loop;
    -- (the small vaults listed first: a loop over a query of chunks would hold it open while altering it)
    v_small := array(select x.id from vaults x
                     where (select count(*) from chunks c where c.vault_id = x.id) <= 10000 order by x.id);
    foreach v_id in array v_small loop
        -- its rows set aside and its partitions dropped (the vectors first: they reference the
        -- chunks; a detached partition would keep its foreign key), then the rows into the shared ones
        for r in select t, o from pg_temp.ragpg_0020_tables() order by o desc loop
            continue when to_regclass(quote_ident(pg_temp.ragpg_0020_part(r.t, v_id))) is null;
            execute format('create temporary table %I as select * from %I',
                           'ragpg_0020_rows_' || r.o, pg_temp.ragpg_0020_part(r.t, v_id));
            execute format('delete from %I', pg_temp.ragpg_0020_part(r.t, v_id));
            execute format('alter table %s detach partition %I', r.t, pg_temp.ragpg_0020_part(r.t, v_id));
            execute format('drop table %I', pg_temp.ragpg_0020_part(r.t, v_id));
        end loop;
        for r in select t, o from pg_temp.ragpg_0020_tables() order by o loop
            continue when to_regclass('pg_temp.' || quote_ident('ragpg_0020_rows_' || r.o)) is null;
            execute format('insert into %s overriding system value select * from %I', r.t, 'ragpg_0020_rows_' || r.o);
            execute format('drop table %I', 'ragpg_0020_rows_' || r.o);
        end loop;
    end loop;
end
$$;
select pg_temp.ragpg_0020_triggers(true);
-- the small vaults' bm25 index is one table for all of them (db/sql/55_bm25_index.sql): its rows share
-- a table name (existing vaults keep their own tables until their next index run moves them)
alter table bm25_indexes drop constraint if exists bm25_indexes_table_name_key;
alter table bm25_indexes drop constraint if exists bm25_indexes_index_name_key;
create index bm25_indexes_table_name_idx on bm25_indexes (table_name);
analyze chunks;
analyze bm25_postings;
analyze bm25_term_stats;
"""

DOWNGRADE = HELPERS + r"""
select pg_temp.ragpg_0020_triggers(false);
do $$
declare
    r record;
    v record;
begin
    -- the shared rows set aside and the shared partitions dropped (the vectors first: they reference
    -- the chunks), every vault given partitions of its own, the rows put back
    for r in select t, o from pg_temp.ragpg_0020_tables() order by o desc loop
        execute format('create temporary table %I as select * from %I',
                       'ragpg_0020_rows_' || r.o, pg_temp.ragpg_0020_shared(r.t));
        execute format('delete from %I', pg_temp.ragpg_0020_shared(r.t));
        execute format('alter table %s detach partition %I', r.t, pg_temp.ragpg_0020_shared(r.t));
        execute format('drop table %I', pg_temp.ragpg_0020_shared(r.t));
    end loop;
    for v in select x.id from vaults x order by x.id loop
        for r in select t from pg_temp.ragpg_0020_tables() order by o loop
            execute format('create table if not exists %I partition of %s for values in (%s)',
                           pg_temp.ragpg_0020_part(r.t, v.id), r.t, v.id);
            execute format('revoke all on %I from public', pg_temp.ragpg_0020_part(r.t, v.id));
            execute format('alter table %I enable row level security', pg_temp.ragpg_0020_part(r.t, v.id));
        end loop;
    end loop;
    for r in select t, o from pg_temp.ragpg_0020_tables() order by o loop
        execute format('insert into %s overriding system value select * from %I', r.t, 'ragpg_0020_rows_' || r.o);
        execute format('drop table %I', 'ragpg_0020_rows_' || r.o);
    end loop;
end
$$;
select pg_temp.ragpg_0020_triggers(true);
-- the vaults in the shared bm25 table take the SQL BM25 until their next index run builds them one
delete from bm25_indexes where table_name = 'ragpg_bm25_shared';
do $$
begin
    if current_setting('pg_textsearch.library_version', true) is not null then
        drop table if exists ragpg_bm25_shared;
    end if;
end
$$;
drop index if exists bm25_indexes_table_name_idx;
alter table bm25_indexes add unique (table_name);
alter table bm25_indexes add unique (index_name);
-- a new vault gets partitions of its own again when it is added, as 0014's db/sql did (the functions
-- this revision's db/sql added stay until the previous release's db/sql is applied: they work on
-- either layout)
create or replace function ragpg_vault_partitions_add() returns trigger
language plpgsql volatile
set search_path = public, pg_catalog, pg_temp
as $f$
begin
    perform ragpg_create_vault_partitions(new.id);
    return null;
end
$f$;
create or replace trigger vaults_partitions_add after insert on vaults
    for each row execute function ragpg_vault_partitions_add();
analyze chunks;
analyze bm25_postings;
analyze bm25_term_stats;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
