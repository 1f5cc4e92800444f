"""A link resolves once per confidentiality level, among the notes readable at that level (issue 48).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07

Since 0017 a link resolved only among the notes of its source's level or below, so a public note's link
to an internal note stayed unresolved for every reader, the owner too. `link_targets` now holds, for
each link, one resolution per level its readers may have: from its source's level up to restricted (at
most four rows, `target_document_id` null while unresolved at that level). A reader sees the
resolution of its own level (row-level security shows a row only to a reader of that level:
db/sql/80_security.sql; the link functions pick the caller's level: db/sql/65_links.sql), so a note
above a reader's level never decides where that reader's links point. Here: `links.target_document_id`
(the resolution at the source's level) is copied to every level, so every reader sees what it saw
before, then dropped; every note's links are marked unread, so the next `ragpg index` of each vault
reads them again (without embedding anything again) and resolves them per level.
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# The link functions read the column dropped here (the SQL-bodied ones depend on it): db/sql makes them
# again after the revisions, reading link_targets. (Levels are ranked inline for the same reason.)
DROP_LINK_FUNCTIONS = r"""
drop function if exists ragpg_related_notes(text, text, integer, text);
drop function if exists ragpg_linked_notes(text, text);
drop function if exists ragpg_outlinks(text, text);
drop function if exists ragpg_backlinks(text, text);
"""

UPGRADE = DROP_LINK_FUNCTIONS + r"""
create table link_targets (
    vault_id bigint not null,
    link_id bigint not null,
    level smallint not null check (level between 1 and 4),  -- ragpg_level_rank: 1 public .. 4 restricted
    target_document_id bigint,
    primary key (vault_id, link_id, level),
    foreign key (vault_id, link_id) references links (vault_id, id) on delete cascade,
    foreign key (vault_id, target_document_id) references documents (vault_id, id)
        on delete set null (target_document_id)
);
create index link_targets_target_idx on link_targets (target_document_id, level)
    where target_document_id is not null;

insert into link_targets (vault_id, link_id, level, target_document_id)
select l.vault_id, l.id, lv.level, l.target_document_id
from links l
join documents s on s.id = l.source_document_id
cross join generate_series(1, 4) as lv(level)
where lv.level >= coalesce(array_position(array['public', 'internal', 'confidential', 'restricted'],
                                          s.confidentiality), 4);

drop index if exists links_target_idx;
drop index if exists links_unresolved_idx;
alter table links drop column target_document_id;
update documents set links_indexed = false where links_indexed;
"""

# The older code's db/sql makes the link functions again. The resolution at each link's source level is
# the one 0018 stored.
DOWNGRADE = DROP_LINK_FUNCTIONS + r"""
alter table links add column target_document_id bigint;
alter table links add foreign key (vault_id, target_document_id) references documents (vault_id, id)
    on delete set null (target_document_id);
update links l set target_document_id = r.target_document_id
from documents s, link_targets r
where s.id = l.source_document_id and r.vault_id = l.vault_id and r.link_id = l.id
  and r.level = coalesce(array_position(array['public', 'internal', 'confidential', 'restricted'],
                                        s.confidentiality), 4);
create index links_target_idx on links (target_document_id) where target_document_id is not null;
create index links_unresolved_idx on links (vault_id) where target_document_id is null;
drop table link_targets;
drop function if exists ragpg_caller_level();
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
