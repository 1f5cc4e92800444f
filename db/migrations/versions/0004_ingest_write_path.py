"""Cheaper chunk writes: one tsvector per chunk, and index builds deferred to the end of a bulk load.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

- `chunks.content_tsv` and `chunks.lexeme_count` were two generated columns, each running
  to_tsvector over the same text: the parser and stemmer ran twice per chunk (~40% of a chunk
  insert, measured on SciFact). They become plain columns kept by one BEFORE row trigger
  (`ragpg_chunks_tsvector`, db/sql/20_bm25_stats.sql) that parses once and counts from the result.
  DROP EXPRESSION keeps every stored value, so postings and statistics stay as they are.
- `deferred_indexes`: the definitions of indexes an index run dropped to bulk-load a table
  (rag/ingest/hnsw.py). The drop commits with its row, so a killed run leaves the definition
  behind and the next index run recreates the index before doing anything else.
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

UPGRADE = r"""
alter table chunks alter column content_tsv drop expression;
alter table chunks alter column lexeme_count drop expression;

create table deferred_indexes (
    index_name text primary key,  -- schema-qualified and quoted, as regclass prints it
    table_name text not null,
    definition text not null,     -- pg_get_indexdef output
    deferred_at timestamptz not null default now()
);
"""

# Back to generated columns: the values are recomputed by the table rewrite; the GIN index on the
# column goes with it and is recreated. The previous release's db/sql drops nothing of ours, so the
# row trigger and its function are dropped here.
DOWNGRADE = r"""
drop table if exists deferred_indexes;
drop trigger if exists chunks_tsvector on chunks;
drop function if exists ragpg_chunks_tsvector();
alter table chunks drop column lexeme_count;
alter table chunks drop column content_tsv;
alter table chunks add column content_tsv tsvector generated always as
    (to_tsvector(text_search_config, heading_path || ' ' || content)) stored;
alter table chunks add column lexeme_count integer generated always as
    (ragpg_tsvector_token_count(to_tsvector(text_search_config, heading_path || ' ' || content))) stored;
create index chunks_tsv_idx on chunks using gin (content_tsv);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
