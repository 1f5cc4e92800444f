"""Clearance that holds: BM25 statistics per confidentiality level, cached questions per role.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

`bm25_vault_stats` and `bm25_term_stats` gain a `level` (1 public .. 4 restricted, as the chunks'
row-level security reads `metadata.confidentiality`, anything else 4) and hold one row per vault and
level (and lexeme): a reader's BM25 sums only the levels it may read. They are computed afresh from
the chunks here (leaving out a deferred bulk load's chunks, which its restore adds); the triggers of
db/sql/20_bm25_stats.sql keep them from then on.

`query_embeddings.cached_by`: the role that cached a question (existing rows: the role running this
upgrade, the owner). The key becomes (model, question, role), so two roles may cache the same
question; db/sql/80_security.sql lets a role read only its own rows (the owner all of them).
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# The level expression is ragpg_chunk_level's (db/sql/15_clearance_levels.sql), written out: db/sql is
# applied only after every revision has run.
LEVEL = "coalesce(array_position(array['public', 'internal', 'confidential', 'restricted'], " \
        "c.metadata ->> 'confidentiality'), 4)::smallint"
COUNTED = ("not exists (select 1 from bm25_deferred d where d.vault_id = c.vault_id and c.id > d.after_chunk_id)")

UPGRADE = rf"""
alter table bm25_vault_stats add column level smallint not null default 4 check (level between 1 and 4);
alter table bm25_vault_stats drop constraint bm25_vault_stats_pkey;
alter table bm25_vault_stats add primary key (vault_id, level);
alter table bm25_vault_stats alter column level drop default;
delete from bm25_vault_stats;
insert into bm25_vault_stats (vault_id, level, chunk_count, total_length)
select c.vault_id, {LEVEL}, count(*), sum(c.lexeme_count) from chunks c where {COUNTED} group by 1, 2;

alter table bm25_term_stats add column level smallint not null default 4 check (level between 1 and 4);
alter table bm25_term_stats drop constraint bm25_term_stats_pkey;
delete from bm25_term_stats;
insert into bm25_term_stats (vault_id, lexeme, level, chunk_frequency)
select c.vault_id, u.lexeme, {LEVEL}, count(*)
from chunks c cross join lateral unnest(c.content_tsv) as u
where {COUNTED}
group by 1, 2, 3;
alter table bm25_term_stats add primary key (vault_id, lexeme, level);
alter table bm25_term_stats alter column level drop default;

alter table query_embeddings add column cached_by name not null default current_user;
alter table query_embeddings drop constraint query_embeddings_pkey;
alter table query_embeddings add primary key (model_id, query_key, cached_by);
"""

# Back to 0012 (the tables of 0011): the previous release's db/sql knows nothing of the per-role rows. Only the owner's
# kind of row is kept (one per question and model, the most recently used), and nobody but the owner
# reads the cache again.
DOWNGRADE = r"""
-- the policies as the previous release made them (they must not depend on what goes here)
do $$
declare
    v_vaults constant text := '(select ragpg_scope_vault_ids(current_user))::bigint[]';
begin
    if exists (select 1 from pg_policies where tablename = 'chunks' and policyname = 'ragpg_scope') then
        drop policy ragpg_scope on chunks;
        execute format('create policy ragpg_scope on chunks for select using (vault_id = any(%s) and '
                       'coalesce(ragpg_level_rank(metadata ->> ''confidentiality''), 4) <= '
                       '(select ragpg_scope_clearance_rank(current_user)))', v_vaults);
    end if;
    if exists (select 1 from pg_policies where tablename = 'bm25_vault_stats' and policyname = 'ragpg_scope') then
        drop policy ragpg_scope on bm25_vault_stats;
        execute format('create policy ragpg_scope on bm25_vault_stats for select using (vault_id = any(%s))', v_vaults);
    end if;
    if exists (select 1 from pg_policies where tablename = 'bm25_term_stats' and policyname = 'ragpg_scope') then
        drop policy ragpg_scope on bm25_term_stats;
        execute format('create policy ragpg_scope on bm25_term_stats for select using (vault_id = any(%s))', v_vaults);
    end if;
    drop policy if exists ragpg_definer_reads on vaults;
    if to_regprocedure('ragpg_scope_vault_ids(name)') is not null then
        execute format('alter function ragpg_scope_vault_ids(name) owner to %I', current_user);
        execute format('alter function ragpg_scope_clearance_rank(name) owner to %I', current_user);
    end if;
end
$$;
drop function if exists ragpg_chunk_level(jsonb);
create temporary table ragpg_vault_totals on commit drop as
select vault_id, sum(chunk_count)::bigint as chunk_count, sum(total_length)::bigint as total_length
from bm25_vault_stats group by vault_id;
delete from bm25_vault_stats;
alter table bm25_vault_stats drop constraint bm25_vault_stats_pkey;
alter table bm25_vault_stats drop column level;
insert into bm25_vault_stats (vault_id, chunk_count, total_length) select * from ragpg_vault_totals;
alter table bm25_vault_stats add primary key (vault_id);
create temporary table ragpg_term_totals on commit drop as
select vault_id, lexeme, sum(chunk_frequency)::integer as chunk_frequency from bm25_term_stats group by 1, 2;
delete from bm25_term_stats;
alter table bm25_term_stats drop constraint bm25_term_stats_pkey;
alter table bm25_term_stats drop column level;
insert into bm25_term_stats (vault_id, lexeme, chunk_frequency) select * from ragpg_term_totals;
alter table bm25_term_stats add primary key (vault_id, lexeme);

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
