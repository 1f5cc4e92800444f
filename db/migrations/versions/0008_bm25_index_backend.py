"""The optional BM25 index backend (pg_textsearch): which vaults have one.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25

A vault whose lexical leg runs on pg_textsearch has one row here and its own table,
`ragpg_bm25_<vault id>` (chunk id and the text BM25 reads: heading path and content), with one `bm25`
index over it. One table per vault because pg_textsearch 1.0.0 keeps corpus statistics per index and
ignores a partial index's predicate, while ragpg's BM25 statistics are per vault. The tables are made,
filled and kept in step by functions and triggers in db/sql/55_bm25_index.sql; the SQL BM25
(bm25_postings) is always kept as well, as the fallback and for exact scores.
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

UPGRADE = r"""
create table bm25_indexes (
    vault_id bigint primary key references vaults (id) on delete cascade,
    table_name text not null unique,
    index_name text not null unique,
    text_search_config regconfig not null,
    k1 float8 not null,
    b float8 not null,
    created_at timestamptz not null default now()
);
"""

DOWNGRADE = r"""
drop trigger if exists chunks_bm25_index_insert on chunks;
drop trigger if exists chunks_bm25_index_delete on chunks;
drop trigger if exists chunks_bm25_index_update on chunks;
drop trigger if exists bm25_indexes_drop_table on bm25_indexes;
do $$
declare
    t text;
begin
    for t in select table_name from bm25_indexes loop
        execute format('drop table if exists %I', t);
    end loop;
end
$$;
drop function if exists ragpg_bm25_index_sync();
drop function if exists ragpg_bm25_index_drop_table();
drop function if exists ragpg_bm25_drop_orphan_tables();
drop function if exists ragpg_bm25_index_extra_candidates();
drop function if exists ragpg_lexical_scores_indexed(text, integer, bigint[], regconfig[], text[], float8[], float8[], float8, float8);
drop function if exists ragpg_lexical_backends();
drop function if exists ragpg_lexical_backend(text[], jsonb, float8, float8);
drop function if exists ragpg_enable_bm25_index(text, float8, float8);
drop function if exists ragpg_disable_bm25_index(text);
drop function if exists ragpg_bm25_index_available();
drop table bm25_indexes;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
