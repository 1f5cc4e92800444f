"""API keys gain `can_index`: starting index runs (`POST /v1/index`) is a write, not a read.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26

Existing keys get false: a key created to read must not start work on the server (issue 17,
item 13); `ragpg keys create --index` makes a key that may.
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("alter table api_keys add column can_index boolean not null default false")


def downgrade() -> None:
    op.execute("alter table api_keys drop column can_index")
