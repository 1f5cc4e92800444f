"""The SQL console's own state: a query-embedding cache, per-note retrieval counts, and where an
index run came from.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28

`query_embeddings` keeps the embedding of each question `ask`, `search`, `context` or `ragpg embed`
embedded, per model, so `search_hybrid('question')` in psql can run its vector leg without Python.
Only the owner reads it (questions can be private); the console reaches one row at a time through
a SECURITY DEFINER function that needs the exact question text. `document_retrievals` counts how
often each note was among the first candidates of a question (row-level security as the content
tables: db/sql/80_security.sql). `index_runs.origin` tells runs started over HTTP from CLI runs,
which are now recorded too. Functions and views: db/sql/90_console_search.sql.
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UPGRADE = r"""
create table query_embeddings (
    model_id integer not null references embedding_models (id) on delete cascade,
    query_key text not null,  -- ragpg_query_key(query_text): md5 of the trimmed text
    query_text text not null,
    embedding vector not null,
    uses bigint not null default 1,
    created_at timestamptz not null default now(),
    last_used_at timestamptz not null default now(),
    primary key (model_id, query_key)
);
revoke all on query_embeddings from public;

create table document_retrievals (
    document_id bigint primary key references documents (id) on delete cascade,
    retrievals bigint not null default 0,
    last_retrieved_at timestamptz not null default now()
);
create index document_retrievals_count_idx on document_retrievals (retrievals desc);

alter table index_runs add column origin text not null default 'api' check (origin in ('api', 'cli'));
"""

DOWNGRADE = r"""
drop view if exists ragpg_indexed_vaults, ragpg_indexed_folders, ragpg_index_runs_recent, ragpg_largest_notes,
    ragpg_most_retrieved_notes;
drop function if exists search_hybrid(text, integer, jsonb, text);
drop function if exists search_lexical(text, integer, jsonb);
drop function if exists ragpg_record_query(integer, text, vector, bigint[]);
drop function if exists ragpg_cached_query_embeddings(text);
drop function if exists ragpg_query_key(text);
alter table index_runs drop column origin;
drop table document_retrievals;
drop table query_embeddings;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
