"""BM25 postings: (vault, lexeme) -> (chunk, tf, dl), so scoring reads an index instead of tsvectors.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24

ragpg_match_lexical_impl used to find candidates with the GIN index and then unnest every
candidate's whole tsvector to get term frequencies; OR queries match much of a corpus, so that
dominated BM25 latency. With one row per (vault, lexeme, chunk) holding tf and the chunk length,
the score is a join of the query lexemes with this table, read index-only (tf, dl and the chunk's
text search config are INCLUDEd in the primary key).

No foreign keys: the chunk triggers (db/sql/20_bm25_stats.sql) delete postings by primary key in
one set-based statement, which is cheaper than a per-row cascade (that would also need a second
index on chunk_id), and an FK check per inserted posting would double the write cost.
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE = r"""
create table bm25_postings (
    vault_id bigint not null,
    lexeme text not null,
    chunk_id bigint not null,
    tf integer not null,
    dl integer not null,
    text_search_config regconfig not null,
    primary key (vault_id, lexeme, chunk_id) include (tf, dl, text_search_config)
);

insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config)
select c.vault_id, u.lexeme, c.id, coalesce(cardinality(u.positions), 1), c.lexeme_count, c.text_search_config
from chunks c
cross join lateral unnest(c.content_tsv) u
order by 1, 2, 3;
"""

# The trigger function that maintains postings (db/sql/20_bm25_stats.sql) goes with the table;
# the previous release's db/sql, re-applied by its upgrade, recreates its own triggers.
DOWNGRADE = r"""
drop trigger if exists chunks_bm25_update on chunks;
drop function if exists ragpg_bm25_stats_sync() cascade;
drop table if exists bm25_postings;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
