"""Clearance in the database: the registry of console roles behind row-level security.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27

Console users read the same tables as the server, so clearance is enforced by Postgres too
(issue 17). `ragpg_console_roles` records, for each login role `ragpg db console` made, the
highest confidentiality level and the vaults it may read; nobody but the owner may read or
change it, so a console user cannot widen their own scope. The policies, the scope functions
and the grants live in db/sql/80_security.sql (re-applied after every upgrade, so tables made
later — one per embedding model — are covered too).
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UPGRADE = r"""
create table ragpg_console_roles (
    role_name name primary key,
    clearance text not null check (clearance in ('public', 'internal', 'confidential', 'restricted')),
    vaults text[],  -- null: every vault
    created_at timestamptz not null default now()
);
revoke all on ragpg_console_roles from public;
"""

# Back to 0005: the policies and grants go with the registry (db/sql of the previous release
# knows nothing of them); the cluster-wide roles stay, as other databases may use them.
DOWNGRADE = r"""
do $$
declare
    t regclass;
    p record;
begin
    for p in select schemaname, tablename, policyname from pg_policies
             where schemaname = 'public' and policyname like 'ragpg\_%'
    loop
        execute format('drop policy %I on %I.%I', p.policyname, p.schemaname, p.tablename);
    end loop;
    for t in select c.oid::regclass from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where n.nspname = 'public' and c.relkind = 'r' and c.relrowsecurity
    loop
        execute format('alter table %s disable row level security', t);
    end loop;
end
$$;
drop function if exists ragpg_scope_clearance_rank(name);
drop function if exists ragpg_scope_vault_ids(name);
drop function if exists ragpg_secure_content_table(regclass, boolean);
drop function if exists ragpg_ensure_console_role(text, text[]);
drop function if exists ragpg_level_rank(text);
drop table ragpg_console_roles;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
