"""The link graph: one row per wikilink, embed or markdown link to a note, resolved to its document.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03

`links` holds, for each link a note makes, where it is (`source_document_id`, `line`), what it names
as written (`target_text`, `target_heading`: a heading, or `^id` for a block), the document it
resolves to (`target_document_id`; null while unresolved or ambiguous — a deleted target sets it
null, a later index run resolves it again), the words it is shown with (`anchor_text`) and the
sentence around it as a reader sees it (`sentence`). Links go with their source document
(`on delete cascade`). Row-level security (db/sql/80_security.sql) shows a link only with its source
note. `documents.links_indexed` says whether a document's links were read: documents indexed before
this revision are read once more by the next index run, without being embedded again.

`note_vectors`: per note and model, a vector of its outline (name and headings) and one of the sentences
other notes link to it with (only from notes at its own confidentiality or below, so no reader's ranking
moves on a note it may not read); `ask` and `search` add how close a question comes to them to the
note's passages (rag.retrieval.note_signal). Visible with the note only.
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

UPGRADE = r"""
create table links (
    id bigint generated always as identity,
    vault_id bigint not null references vaults (id) on delete cascade,
    source_document_id bigint not null,
    line integer not null check (line >= 1),
    kind text not null check (kind in ('link', 'embed')),
    target_text text not null,
    target_heading text,
    target_is_file boolean not null default false,
    target_document_id bigint,
    anchor_text text not null,
    sentence text not null,
    -- the vault in every key (docs/scaling.md, the Citus layout); links stay within their vault
    primary key (vault_id, id),
    foreign key (vault_id, source_document_id) references documents (vault_id, id) on delete cascade,
    foreign key (vault_id, target_document_id) references documents (vault_id, id)
        on delete set null (target_document_id)
);
create index links_source_idx on links (source_document_id);
create index links_id_idx on links (id);
create index links_target_idx on links (target_document_id) where target_document_id is not null;
create index links_unresolved_idx on links (vault_id) where target_document_id is null;

alter table documents add column links_indexed boolean not null default false;

create table note_vectors (
    vault_id bigint not null,
    document_id bigint not null,
    model_id integer not null references embedding_models (id) on delete cascade,
    field text not null check (field in ('outline', 'inbound')),
    source_hash text not null,
    embedding vector not null,
    primary key (vault_id, document_id, model_id, field),
    foreign key (vault_id, document_id) references documents (vault_id, id) on delete cascade
);
"""

# The link functions of db/sql/65_links.sql read the table (the SQL-bodied ones depend on it).
DOWNGRADE = r"""
drop function if exists ragpg_related_notes(text, text, integer, text);
drop function if exists ragpg_backlinks(text, text);
drop function if exists ragpg_outlinks(text, text);
drop function if exists ragpg_unresolved_links(text);
drop function if exists ragpg_linked_notes(text, text);
drop function if exists ragpg_similar_notes(text, text, integer, text);
drop function if exists ragpg_note_id(text, text);
drop table if exists note_vectors;
drop table if exists links;
alter table documents drop column if exists links_indexed;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
