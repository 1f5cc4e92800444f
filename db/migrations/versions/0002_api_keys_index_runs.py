"""API keys (hashed, scoped to vaults and a clearance) and background index runs.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE = r"""
create table api_keys (
    id integer generated always as identity primary key,
    name text not null unique check (length(name) between 1 and 100),
    key_prefix text not null,
    key_hash text not null unique,
    vaults text[] not null default '{}',
    all_vaults boolean not null default false,
    clearance text not null default 'public'
        check (clearance in ('public', 'internal', 'confidential', 'restricted')),
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    last_used_at timestamptz
);

create table index_runs (
    id uuid primary key,
    vaults text[] not null default '{}',
    status text not null default 'queued'
        check (status in ('queued', 'running', 'succeeded', 'failed')),
    progress jsonb not null default '{}',
    error text,
    created_at timestamptz not null default now(),
    finished_at timestamptz
);
"""

DOWNGRADE = r"""
drop table if exists index_runs;
drop table if exists api_keys;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
