"""The notes related to one: linked with it either way, or close in meaning, each with why.

One SQL function decides (`ragpg_related_notes`, db/sql/65_links.sql: the links of the graph first,
then the notes whose passages come nearest the note's mean vector); this module checks the request,
maps the database's refusals to the library's errors and says why each note is related. The note is
named as a reader names it (rag.retrieval.note_names: a path, a name, an alias). The caller's scope
binds as for every read: a vault outside it is an AuthError, and on a scoped connection row-level
security hides the notes (and links) above its clearance, so a hidden note is "not found" exactly
like a missing one, and never makes a name ambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from psycopg.rows import class_row

from rag.access import Scope
from rag.errors import InputError, NotFoundError
from rag.retrieval.chunks import validate_source_path
from rag.retrieval.note_names import resolve_note
from rag.store.database import Connection
from rag.store.vaults import unknown_vault, vault_names

MAX_RELATED = 1000  # ragpg_check_match_count's bound


@dataclass(frozen=True)
class RelatedNote:
    vault: str
    source_path: str
    title: str | None
    links_here: bool  # this note links to the one asked about
    linked_from_here: bool  # the one asked about links to this note
    anchor_text: str | None  # the words of the first link between them
    similarity: float | None  # cosine similarity of its nearest passage to the note (higher is closer)
    reasons: list[str] = field(default_factory=list)  # why, in words: "links here with 'ribbon'"


@dataclass(frozen=True)
class RelatedNotes:
    """The answer of every door (CLI --json, GET /v1/related, the related_notes tool)."""

    vault: str
    source_path: str
    related: list[RelatedNote]


@dataclass(frozen=True)
class _Row:
    path: str
    title: str | None
    links_here: bool
    linked_from_here: bool
    anchor_text: str | None
    similarity: float | None


def related_notes(conn: Connection, vault: str | None, note: str, *, k: int,
                  scope: Scope | None = None) -> RelatedNotes:
    """Up to `k` notes related to the note `note` names in `vault`, the linked ones first. `note` is a
    path, a path without `.md`, a unique file name or an alias (rag.retrieval.note_names); no vault: the
    one vault holding a note of that name (an error lists them when several do)."""
    scope = scope or Scope.unrestricted()
    validate_source_path(note)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_RELATED:
        raise InputError(f"k must be a whole number from 1 to {MAX_RELATED}, got {k!r}")
    found = resolve_note(conn, vault, note, scope=scope)
    try:
        with conn.cursor(row_factory=class_row(_Row)) as cur:
            rows = cur.execute("select * from ragpg_related_notes(%s, %s, %s)",
                               (found.vault, found.source_path, k)).fetchall()
    except psycopg.errors.UndefinedObject:
        conn.rollback()
        raise unknown_vault(found.vault, vault_names(conn)) from None
    except psycopg.errors.NoDataFound:
        conn.rollback()
        raise NotFoundError(f"no note {found.vault}/{found.source_path}") from None
    if not conn.autocommit:
        conn.rollback()
    return RelatedNotes(found.vault, found.source_path, [
        RelatedNote(found.vault, r.path, r.title, r.links_here, r.linked_from_here, r.anchor_text, r.similarity,
                    reasons_for(r)) for r in rows])


def reasons_for(row: _Row) -> list[str]:
    words = f" with '{row.anchor_text}'" if row.anchor_text else ""
    reasons = []
    if row.links_here:
        reasons.append(f"links here{words}")
    if row.linked_from_here:
        reasons.append("linked from here" + ("" if row.links_here else words))
    if row.similarity is not None:
        reasons.append("close in meaning")
    return reasons
