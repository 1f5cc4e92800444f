"""Drops chunks_tsv_idx, the GIN index over each chunk's tsvector, which no query reads.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04

Since revision 0003 the lexical leg scores from `bm25_postings` (or the pg_textsearch index); no
ragpg function matches `content_tsv` with `@@`, so the index was only written: every chunk insert
added its lexemes to the GIN pending list, and a bulk load rebuilt it (the largest of the chunk
indexes). `content_tsv` itself stays: the BM25 statistics triggers read it. A console query that
matches `content_tsv @@ ...` still works, reading the vault's chunks instead of the index.
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

UPGRADE = r"""
drop index if exists chunks_tsv_idx;
"""

# (the partitions' copies take their per-vault names from db/sql/12_vault_partitions.sql)
DOWNGRADE = r"""
create index if not exists chunks_tsv_idx on chunks using gin (content_tsv);
select ragpg_create_vault_partitions(v.id) from vaults v
where to_regprocedure('ragpg_create_vault_partitions(bigint)') is not null;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
