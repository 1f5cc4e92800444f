"""Bulk loads that defer BM25 bookkeeping, and an index for folder prefix filters.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29

- `bm25_deferred`: a vault whose BM25 statistics and postings are being built in one set-based
  pass at the end of a bulk load (rag/ingest/bulk.py) instead of statement by statement. Chunks of
  that vault with ids above `after_chunk_id` have no postings yet; the chunk triggers leave them
  out (db/sql/20_bm25_stats.sql) and `ragpg_bm25_restore(vault)` adds them all at once. The row
  commits with the first batch, so a killed load leaves it behind and the next bulk load or index
  run of the vault finishes the job first.
- `chunks_folder_idx`: `{"folder": {"$prefix": "a/b"}}` compiled to a jsonpath predicate, which no
  index serves, so a folder filter read every chunk's metadata. The filter SQL now adds the implied
  condition `metadata ->> 'folder' ^@ prefix` (text_pattern_ops turns it into a btree range), or-ed
  with `jsonb_typeof(metadata -> 'folder') = 'array'` because the jsonpath also matches an array
  with an element that has the prefix; `chunks_folder_array_idx` serves that arm (it is normally
  empty), so the OR stays a BitmapOr of two index scans. The jsonpath predicate is still applied:
  results are the same, only found through the index.
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UPGRADE = r"""
create table bm25_deferred (
    vault_id bigint primary key references vaults (id) on delete cascade,
    after_chunk_id bigint not null,
    deferred_at timestamptz not null default now()
);

create index chunks_folder_idx on chunks ((metadata ->> 'folder') text_pattern_ops);
create index chunks_folder_array_idx on chunks (id) where jsonb_typeof(metadata -> 'folder') = 'array';
"""

# The previous release's db/sql, re-applied by its upgrade, recreates its own trigger function
# (which does not read bm25_deferred); the functions that do go with the table.
DOWNGRADE = r"""
drop function if exists ragpg_bm25_restore(bigint);
drop function if exists ragpg_bm25_defer(bigint);
drop function if exists ragpg_create_chunk_indexes();
drop function if exists ragpg_drop_chunk_indexes();
drop index if exists chunks_folder_array_idx;
drop index if exists chunks_folder_idx;
drop table if exists bm25_deferred;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
