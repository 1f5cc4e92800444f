"""Content tables list-partitioned by vault, the vault in every key (ready for a distributed Postgres).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03

- `chunks`, `bm25_postings`, `bm25_term_stats` and every model's embedding table become tables
  partitioned by list on `vault_id`, one partition per vault (`<table>_p<vault id>`, made by
  db/sql/12_vault_partitions.sql when a vault is added, dropped when it is removed). A search that
  names a vault reads one partition: its own HNSW graph, its own postings. The embedding tables gain
  `vault_id` (their writers give it; the foreign key to the chunk checks it).
- Keys carry the vault: chunks (vault_id, id) and unique (vault_id, document_id, ordinal);
  embeddings (vault_id, chunk_id) referencing chunks (vault_id, id); documents (vault_id, id);
  document_retrievals gains vault_id, keyed (vault_id, document_id). Ids stay globally unique (one
  sequence each), so code that looks a row up by id alone still finds it (in every partition).
- `bm25_vault_stats` (a few rows a vault) is not partitioned; its key already leads with the vault.

Existing rows are moved as they are (ids, sequence positions, statistics, postings). Indexes are
built after the copy. Downgrade moves them back into the tables of 0013.
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Moves a table aside as <name>_0014x: its constraints (and their indexes) renamed, its other indexes
# dropped (rebuilt on the new table), so every name is free for the new table.
SET_ASIDE = r"""
create function pg_temp.ragpg_0014_set_aside(p_table text) returns void
language plpgsql as $f$
declare
    v_old text := p_table || '_0014x';
    r record;
begin
    -- other tables' policies that read this one (a bm25 index table's reads chunks): db/sql makes them again
    for r in select distinct pol.polname, pol.polrelid::regclass as rel from pg_policy pol
             join pg_depend d on d.classid = 'pg_policy'::regclass and d.objid = pol.oid
             where d.refobjid = p_table::regclass and pol.polrelid <> p_table::regclass loop
        execute format('drop policy if exists %I on %s', r.polname, r.rel);
    end loop;
    -- views over it (90_console_search.sql's): db/sql makes them again
    for r in select distinct rw.ev_class as view from pg_depend d join pg_rewrite rw on rw.oid = d.objid
             where d.classid = 'pg_rewrite'::regclass and d.refobjid = p_table::regclass
               and rw.ev_class <> p_table::regclass loop
        if exists (select 1 from pg_class where oid = r.view) then  -- (not gone with an earlier one)
            execute format('drop view %s cascade', r.view::regclass);
        end if;
    end loop;
    execute format('alter table %I rename to %I', p_table, v_old);
    for r in select conname from pg_constraint where conrelid = v_old::regclass loop
        execute format('alter table %I rename constraint %I to %I', v_old, r.conname,
                       left(r.conname, 45) || '_' || left(md5(r.conname), 8) || '_x');
    end loop;
    for r in select i.indexrelid::regclass::text as idx from pg_index i
             where i.indrelid = v_old::regclass
               and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid) loop
        execute format('drop index %s', r.idx);
    end loop;
end
$f$;
"""

# One partition of each partitioned content table per vault (db/sql names the children's indexes).
PARTITION = r"""
create function pg_temp.ragpg_0014_partition(p_table text, p_vault_id bigint) returns void
language plpgsql as $f$
declare
    v_name text := p_table || '_p' || p_vault_id;
begin
    if length(v_name) > 63 then
        v_name := left(p_table, 63 - 8 - length(p_vault_id::text)) || '_' || left(md5(p_table), 5) || '_p' || p_vault_id;
    end if;
    execute format('create table if not exists %I partition of %I for values in (%s)', v_name, p_table, p_vault_id);
end
$f$;
"""

UPGRADE = SET_ASIDE + PARTITION + r"""
-- documents: the vault in the key (the id alone stays indexed for lookups by id)
alter table document_retrievals drop constraint document_retrievals_document_id_fkey;
alter table chunks drop constraint chunks_document_id_fkey;
alter table documents drop constraint documents_pkey;
alter table documents add primary key (vault_id, id);
create index documents_id_idx on documents (id);
alter table document_retrievals add column vault_id bigint;
update document_retrievals r set vault_id = d.vault_id from documents d where d.id = r.document_id;
delete from document_retrievals where vault_id is null;
alter table document_retrievals alter column vault_id set not null;
alter table document_retrievals drop constraint document_retrievals_pkey;
alter table document_retrievals add primary key (vault_id, document_id);
alter table document_retrievals add foreign key (vault_id, document_id)
    references documents (vault_id, id) on delete cascade;

select pg_temp.ragpg_0014_set_aside(t)
from (select embedding_table as t from embedding_models order by id) m;
select pg_temp.ragpg_0014_set_aside(t) from unnest(array['bm25_term_stats', 'bm25_postings', 'chunks']) t;
alter sequence chunks_id_seq rename to chunks_0014x_id_seq;

create table chunks (
    id bigint generated always as identity,
    document_id bigint not null,
    vault_id bigint not null,
    ordinal integer not null check (ordinal >= 0),
    heading_path text not null default '',
    content text not null,
    token_count integer not null default 0,
    start_line integer,
    end_line integer,
    start_byte integer,
    end_byte integer,
    risk_flags text[] not null default '{}',
    risk_score real not null default 0 check (risk_score >= 0 and risk_score <= 1),
    metadata jsonb not null default '{}',
    text_search_config regconfig not null default 'english',
    content_tsv tsvector,
    lexeme_count integer,
    primary key (vault_id, id),
    unique (vault_id, document_id, ordinal),
    foreign key (vault_id) references vaults (id) on delete cascade,
    foreign key (vault_id, document_id) references documents (vault_id, id) on delete cascade
) partition by list (vault_id);

create table bm25_postings (
    vault_id bigint not null,
    lexeme text not null,
    chunk_id bigint not null,
    tf integer not null,
    dl integer not null,
    text_search_config regconfig not null,
    primary key (vault_id, lexeme, chunk_id) include (tf, dl, text_search_config)
) partition by list (vault_id);

create table bm25_term_stats (
    vault_id bigint not null references vaults (id) on delete cascade,
    lexeme text not null,
    chunk_frequency integer not null check (chunk_frequency >= 0),
    level smallint not null check (level between 1 and 4),
    primary key (vault_id, lexeme, level)
) partition by list (vault_id);

do $$
declare
    m record;
begin
    for m in select embedding_table, dims from embedding_models order by id loop
        execute format(
            'create table %I (
                 vault_id bigint not null,
                 chunk_id bigint not null,
                 embedding vector(%s) not null,
                 primary key (vault_id, chunk_id),
                 foreign key (vault_id, chunk_id) references chunks (vault_id, id) on delete cascade
             ) partition by list (vault_id)', m.embedding_table, m.dims);
    end loop;
end
$$;

select pg_temp.ragpg_0014_partition(t.t, v.id)
from vaults v
cross join lateral (select unnest(array['chunks', 'bm25_postings', 'bm25_term_stats']) as t, 1 as o
                    union all select embedding_table, 2 from embedding_models) t
order by v.id, t.o;

insert into chunks overriding system value select * from chunks_0014x;
select setval(pg_get_serial_sequence('chunks', 'id'), s.last_value, s.is_called) from chunks_0014x_id_seq s;
insert into bm25_postings select * from bm25_postings_0014x;
insert into bm25_term_stats select * from bm25_term_stats_0014x;
do $$
declare
    m record;
begin
    for m in select embedding_table from embedding_models order by id loop
        execute format('insert into %I (vault_id, chunk_id, embedding)
                        select c.vault_id, e.chunk_id, e.embedding from %I e join chunks_0014x c on c.id = e.chunk_id',
                       m.embedding_table, m.embedding_table || '_0014x');
        execute format('drop table %I', m.embedding_table || '_0014x');
    end loop;
end
$$;
drop table bm25_postings_0014x, bm25_term_stats_0014x, chunks_0014x;

-- the indexes of 0013 (but chunks_vault_idx: the partitions are the vault index), per partition
create index chunks_tsv_idx on chunks using gin (content_tsv);
create index chunks_metadata_idx on chunks using gin (metadata jsonb_path_ops);
create index chunks_folder_idx on chunks ((metadata ->> 'folder') text_pattern_ops);
create index chunks_folder_array_idx on chunks (id) where jsonb_typeof(metadata -> 'folder') = 'array';
create index chunks_date_idx on chunks (((metadata ->> 'date') collate "C"));
create index chunks_date_array_idx on chunks (id) where jsonb_typeof(metadata -> 'date') = 'array';
do $$
declare
    m record;
begin
    for m in select embedding_table from embedding_models order by id loop
        execute format('create index %I on %I using hnsw (embedding vector_cosine_ops) '
                       'with (m = 16, ef_construction = 128)', m.embedding_table || '_hnsw_idx', m.embedding_table);
    end loop;
end
$$;
analyze chunks;
analyze bm25_postings;
analyze bm25_term_stats;
"""

# Back to the tables of 0013. The previous release's db/sql, re-applied by its upgrade, recreates the
# chunk triggers, policies and functions; what only this revision's db/sql knows goes here.
DOWNGRADE = SET_ASIDE + r"""
drop trigger if exists vaults_partitions_add on vaults;
drop trigger if exists vaults_partitions_drop on vaults;
drop function if exists ragpg_vault_partitions_add();
drop function if exists ragpg_vault_partitions_drop();
drop function if exists ragpg_create_vault_partitions(bigint);
drop function if exists ragpg_drop_vault_partitions(bigint);
drop function if exists ragpg_vault_partitioned_tables();
drop function if exists ragpg_vault_partition_name(text, bigint);
drop function if exists ragpg_name_partition_indexes(regclass, bigint);

select pg_temp.ragpg_0014_set_aside(t)
from (select embedding_table as t from embedding_models order by id) m;
select pg_temp.ragpg_0014_set_aside(t) from unnest(array['bm25_term_stats', 'bm25_postings', 'chunks']) t;
alter sequence chunks_id_seq rename to chunks_0014x_id_seq;
drop policy if exists ragpg_scope on document_retrievals;  -- reads vault_id; the previous db/sql makes it again
alter table document_retrievals drop constraint document_retrievals_vault_id_document_id_fkey;
alter table document_retrievals drop constraint document_retrievals_pkey;
alter table document_retrievals drop column vault_id;
alter table document_retrievals add primary key (document_id);

create table chunks (
    id bigint generated always as identity primary key,
    document_id bigint not null,
    vault_id bigint not null references vaults (id) on delete cascade,
    ordinal integer not null check (ordinal >= 0),
    heading_path text not null default '',
    content text not null,
    token_count integer not null default 0,
    start_line integer,
    end_line integer,
    start_byte integer,
    end_byte integer,
    risk_flags text[] not null default '{}',
    risk_score real not null default 0 check (risk_score >= 0 and risk_score <= 1),
    metadata jsonb not null default '{}',
    text_search_config regconfig not null default 'english',
    content_tsv tsvector,
    lexeme_count integer,
    unique (document_id, ordinal)
);
create table bm25_postings (
    vault_id bigint not null,
    lexeme text not null,
    chunk_id bigint not null,
    tf integer not null,
    dl integer not null,
    text_search_config regconfig not null,
    primary key (vault_id, lexeme, chunk_id) include (tf, dl, text_search_config)
);
create table bm25_term_stats (
    vault_id bigint not null references vaults (id) on delete cascade,
    lexeme text not null,
    chunk_frequency integer not null check (chunk_frequency >= 0),
    level smallint not null check (level between 1 and 4),
    primary key (vault_id, lexeme, level)
);
insert into chunks overriding system value select * from chunks_0014x;
select setval(pg_get_serial_sequence('chunks', 'id'), s.last_value, s.is_called) from chunks_0014x_id_seq s;
insert into bm25_postings select * from bm25_postings_0014x;
insert into bm25_term_stats select * from bm25_term_stats_0014x;
do $$
declare
    m record;
begin
    for m in select embedding_table, dims from embedding_models order by id loop
        execute format('create table %I (chunk_id bigint primary key references chunks (id) on delete cascade,
                                         embedding vector(%s) not null)', m.embedding_table, m.dims);
        execute format('insert into %I (chunk_id, embedding) select chunk_id, embedding from %I',
                       m.embedding_table, m.embedding_table || '_0014x');
        execute format('drop table %I', m.embedding_table || '_0014x');
        execute format('create index %I on %I using hnsw (embedding vector_cosine_ops) '
                       'with (m = 16, ef_construction = 128)', m.embedding_table || '_hnsw_idx', m.embedding_table);
    end loop;
end
$$;
drop table bm25_postings_0014x, bm25_term_stats_0014x, chunks_0014x;
drop index documents_id_idx;
alter table documents drop constraint documents_pkey;
alter table documents add primary key (id);
alter table document_retrievals add foreign key (document_id) references documents (id) on delete cascade;
alter table chunks add constraint chunks_document_id_fkey foreign key (document_id) references documents (id) on delete cascade;
create index chunks_vault_idx on chunks (vault_id);
create index chunks_tsv_idx on chunks using gin (content_tsv);
create index chunks_metadata_idx on chunks using gin (metadata jsonb_path_ops);
create index chunks_folder_idx on chunks ((metadata ->> 'folder') text_pattern_ops);
create index chunks_folder_array_idx on chunks (id) where jsonb_typeof(metadata -> 'folder') = 'array';
create index chunks_date_idx on chunks (((metadata ->> 'date') collate "C"));
create index chunks_date_array_idx on chunks (id) where jsonb_typeof(metadata -> 'date') = 'array';
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
