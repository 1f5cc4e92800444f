"""An index run stopped by Ctrl-C is recorded as `interrupted`, not as `failed` (issue 47).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07

`ragpg index` and `reindex` record a run stopped by Ctrl-C in `index_runs` (origin 'cli'), so
`ragpg_index_runs_recent` shows it beside the runs that succeeded or failed.
"""

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("alter table index_runs drop constraint index_runs_status_check")
    op.execute("alter table index_runs add constraint index_runs_status_check"
               " check (status in ('queued', 'running', 'succeeded', 'failed', 'interrupted'))")


def downgrade() -> None:
    op.execute("update index_runs set status = 'failed' where status = 'interrupted'")
    op.execute("alter table index_runs drop constraint index_runs_status_check")
    op.execute("alter table index_runs add constraint index_runs_status_check"
               " check (status in ('queued', 'running', 'succeeded', 'failed'))")
