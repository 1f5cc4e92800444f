"""HNSW built and searched deeper as the index grows.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25

No table changes. The functions this revision brings live in db/sql (re-applied after every
upgrade): `ragpg_hnsw_ef_construction()` (128; new and rebuilt HNSW indexes are built with it,
existing ones keep their options until a bulk load rebuilds them), `ragpg_hnsw_ef_per_million_rows()`
and `ragpg_hnsw_ef_search(table, ef_search, match_count)`, with which an unfiltered vector search of a
large index raises hnsw.ef_search (1M chunks: 800). The downgrade drops them, as older revisions'
downgrades do not know them.
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

DOWNGRADE = r"""
drop function if exists ragpg_hnsw_ef_search(text, integer, integer);
drop function if exists ragpg_hnsw_ef_per_million_rows();
drop function if exists ragpg_hnsw_ef_construction();
"""


def upgrade() -> None:
    """Nothing to change in tables; db/sql brings the functions."""


def downgrade() -> None:
    op.execute(DOWNGRADE)
