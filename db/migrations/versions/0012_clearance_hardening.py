"""Clearance that holds (issue 29): cached questions per role.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02

`query_embeddings.cached_by`: the role that cached a question (existing rows: the role running this
upgrade, the owner). The key becomes (model, question, role), so two roles may cache the same
question; db/sql/80_security.sql lets a role read only its own rows (the owner all of them).
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

UPGRADE = r"""
alter table query_embeddings add column cached_by name not null default current_user;
alter table query_embeddings drop constraint query_embeddings_pkey;
alter table query_embeddings add primary key (model_id, query_key, cached_by);
"""

# Back to 0011: the previous release's db/sql knows nothing of the per-role rows. Only the owner's
# kind of row is kept (one per question and model, the most recently used), and nobody but the owner
# reads the cache again.
DOWNGRADE = r"""
drop function if exists ragpg_record_query(integer, text, vector, bigint[], name);
drop policy if exists ragpg_scope on query_embeddings;
alter table query_embeddings disable row level security;
do $$
declare
    r regrole;
begin
    for r in select distinct g.grantee::regrole from pg_class c cross join lateral aclexplode(c.relacl) g
             where c.oid = 'query_embeddings'::regclass and g.grantee <> c.relowner and g.grantee <> 0
    loop
        execute format('revoke all on query_embeddings from %s', r);
    end loop;
end
$$;
delete from query_embeddings q
where exists (select 1 from query_embeddings o
              where o.model_id = q.model_id and o.query_key = q.query_key
                and (o.last_used_at, o.cached_by) > (q.last_used_at, q.cached_by));
alter table query_embeddings drop constraint query_embeddings_pkey;
alter table query_embeddings add primary key (model_id, query_key);
alter table query_embeddings drop column cached_by;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
