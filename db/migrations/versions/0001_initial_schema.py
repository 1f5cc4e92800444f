"""Initial schema: vaults, documents, chunks, embedding models, BM25 statistics.

Revision ID: 0001
Revises:
Create Date: 2026-11-23

Functions, views and triggers live in db/sql/ and are re-applied after every upgrade;
this revision holds only stateful objects. Frozen once released.
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UPGRADE = r"""
create extension if not exists vector;

-- BM25 needs token counts per chunk; an immutable helper lets a generated column hold one.
create or replace function ragpg_tsvector_token_count(tsv tsvector) returns integer
language sql immutable parallel safe strict
set search_path = pg_catalog, public
return (select coalesce(sum(cardinality(u.positions)), 0)::integer from unnest(tsv) as u);

create table vaults (
    id bigint generated always as identity primary key,
    name text not null unique
        check (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    root_path text not null,
    text_search_config regconfig not null default 'english',
    denylist text[] not null default '{}',
    settings jsonb not null default '{}',
    created_at timestamptz not null default now(),
    last_indexed_at timestamptz
);

create table documents (
    id bigint generated always as identity primary key,
    vault_id bigint not null references vaults (id) on delete cascade,
    source_path text not null,
    folder text not null default '',
    title text,
    url text,
    doc_type text,
    persona text,
    tags text[] not null default '{}',
    project text,
    confidentiality text not null default 'public',
    doc_date date,
    document_version text not null,
    size_bytes bigint not null,
    indexed_at timestamptz not null default now(),
    metadata jsonb not null default '{}',
    unique (vault_id, source_path)
);
create index documents_vault_folder_idx on documents (vault_id, folder);

create table chunks (
    id bigint generated always as identity primary key,
    document_id bigint not null references documents (id) on delete cascade,
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
    content_tsv tsvector generated always as
        (to_tsvector(text_search_config, heading_path || ' ' || content)) stored,
    lexeme_count integer generated always as
        (ragpg_tsvector_token_count(to_tsvector(text_search_config, heading_path || ' ' || content))) stored,
    unique (document_id, ordinal)
);
create index chunks_vault_idx on chunks (vault_id);
create index chunks_tsv_idx on chunks using gin (content_tsv);
create index chunks_metadata_idx on chunks using gin (metadata jsonb_path_ops);

-- Corpus statistics for BM25, kept current by statement-level triggers (db/sql/20_bm25_stats.sql).
create table bm25_vault_stats (
    vault_id bigint primary key references vaults (id) on delete cascade,
    chunk_count bigint not null default 0,
    total_length bigint not null default 0
);

create table bm25_term_stats (
    vault_id bigint not null references vaults (id) on delete cascade,
    lexeme text not null,
    chunk_frequency integer not null check (chunk_frequency >= 0),
    primary key (vault_id, lexeme)
);

create table embedding_models (
    id integer generated always as identity primary key,
    provider text not null,
    model text not null,
    dims integer not null check (dims > 0 and dims <= 2000),
    sql_name text not null unique,
    embedding_table text not null unique,
    match_function text not null,
    hybrid_function text not null,
    langchain_function text not null,
    registered_at timestamptz not null default now(),
    unique (provider, model)
);
"""

DOWNGRADE = r"""
-- Functions from db/sql/ and per-model objects depend on these tables; drop them first.
do $$
declare
    r record;
begin
    for r in select embedding_table from embedding_models loop
        execute format('drop table if exists %I cascade', r.embedding_table);
    end loop;
    for r in
        select p.oid::regprocedure as fn
        from pg_proc p
        where p.pronamespace = 'public'::regnamespace
          and (p.proname like 'ragpg\_%' or p.proname like 'match\_%')
          and p.proname <> 'ragpg_tsvector_token_count'
    loop
        execute format('drop function if exists %s cascade', r.fn);
    end loop;
end
$$;
drop table if exists embedding_models;
drop table if exists bm25_term_stats;
drop table if exists bm25_vault_stats;
drop table if exists chunks;
drop table if exists documents;
drop table if exists vaults;
drop function if exists ragpg_tsvector_token_count(tsvector);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
