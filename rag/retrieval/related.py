"""The notes related to one: linked with it either way, or close in meaning, each with why.

One SQL function decides (`ragpg_related_notes`, db/sql/65_links.sql: the links of the graph first,
then the notes whose passages come nearest the note's mean vector); this module checks the request,
maps the database's refusals to the library's errors and says why each note is related. The caller's
scope binds as for every read: a vault outside it is an AuthError, and on a scoped connection
row-level security hides the notes (and links) above its clearance, so a hidden note is "not found"
exactly like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
from psycopg.rows import class_row

from rag.access import Scope
from rag.errors import AuthError, InputError, NotFoundError
from rag.retrieval.chunks import validate_source_path
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


def related_notes(conn: Connection, vault: str | None, source_path: str, *, k: int,
                  scope: Scope | None = None) -> RelatedNotes:
    """Up to `k` notes related to `vault/source_path`, the linked ones first. No vault: the one vault
    that holds a note at that path (an error names them when several do)."""
    scope = scope or Scope.unrestricted()
    validate_source_path(source_path)
    if vault is None:
        vault = _vault_holding(conn, source_path, scope)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_RELATED:
        raise InputError(f"k must be a whole number from 1 to {MAX_RELATED}, got {k!r}")
    if not scope.allows_vault(vault):
        raise AuthError(f"this key may not read vault '{vault}'")
    try:
        with conn.cursor(row_factory=class_row(_Row)) as cur:
            rows = cur.execute("select * from ragpg_related_notes(%s, %s, %s)", (vault, source_path, k)).fetchall()
    except psycopg.errors.UndefinedObject:
        conn.rollback()
        raise unknown_vault(vault, vault_names(conn)) from None
    except psycopg.errors.NoDataFound:
        conn.rollback()
        raise NotFoundError(f"no note {vault}/{source_path}") from None
    if not conn.autocommit:
        conn.rollback()
    return RelatedNotes(vault, source_path, [
        RelatedNote(vault, r.path, r.title, r.links_here, r.linked_from_here, r.anchor_text, r.similarity,
                    reasons_for(r)) for r in rows])


def _vault_holding(conn: Connection, source_path: str, scope: Scope) -> str:
    with conn.cursor(row_factory=class_row(_Name)) as cur:
        names = [r.name for r in cur.execute(
            "select v.name from documents d join vaults v on v.id = d.vault_id where d.source_path = %s "
            "order by v.name", (source_path,)) if scope.allows_vault(r.name)]
    if not conn.autocommit:
        conn.rollback()
    if not names:
        raise NotFoundError(f"no note {source_path} in any vault")
    if len(names) > 1:
        raise InputError(f"{source_path} is in several vaults ({', '.join(names)}): name one with --vault")
    return names[0]


@dataclass(frozen=True)
class _Name:
    name: str


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
