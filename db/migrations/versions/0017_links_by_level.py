"""Links resolve among the notes of their source's confidentiality level or below: what is stored is
resolved again.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29

A link used to resolve among every note of its vault, so a restricted note named like a public note's
link target made that link ambiguous (or took it), and a public note's link to a restricted note
stored the restricted note's id. `rag.ingest.links.resolve_links` now resolves each link among the
notes its readers may read. Here: a stored target above its source's level is unset at once, and
every note's links are marked unread, so the next `ragpg index` of each vault reads them again
(without embedding anything again) and resolves them all under the new rule.
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# (levels ranked inline: the db/sql functions are applied after the revisions)
UPGRADE = r"""
update links l set target_document_id = null
from documents s, documents t
where s.id = l.source_document_id and t.id = l.target_document_id
  and coalesce(array_position(array['public', 'internal', 'confidential', 'restricted'], t.confidentiality), 4)
    > coalesce(array_position(array['public', 'internal', 'confidential', 'restricted'], s.confidentiality), 4);
update documents set links_indexed = false where links_indexed;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    pass  # the links resolved under the new rule are valid links under the old one
