"""Notes as the index holds them: one note's passages by its path, and the notes a scope may read.

A note is named as a reader names it (rag.retrieval.note_names). Like `chunks.get_chunk`, nothing is read from disk: the text is the chunks' stored content (masked at
ingestion, rag/secrets.py), in their order, with their line numbers. The caller's `Scope` is applied
inside the SQL (and again by row-level security on a scoped connection): a vault outside the scope
is an AuthError, while a note the scope may not read is reported exactly like a missing one. A
passage above the caller's clearance inside a readable note is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import sql
from psycopg.rows import class_row

from rag.access import Scope
from rag.errors import AuthError, InputError, NotFoundError
from rag.obsidian import render_text
from rag.retrieval.chunks import READABLE, levels_param, validate_source_path
from rag.retrieval.note_names import resolve_note
from rag.store.database import Connection


@dataclass(frozen=True)
class Passage:
    ordinal: int
    heading_path: str
    content: str
    start_line: int | None
    end_line: int | None


@dataclass(frozen=True)
class NotePassages:
    vault: str
    source_path: str
    title: str | None
    passages: list[Passage]  # in the note's order, within the lines asked for


@dataclass(frozen=True)
class NoteEntry:
    vault: str
    source_path: str
    title: str | None


@dataclass(frozen=True)
class _PassageRow:
    ordinal: int
    heading_path: str
    content: str
    start_line: int | None
    end_line: int | None
    title: str | None


_PASSAGES = sql.SQL("""
select c.ordinal, c.heading_path, c.content, c.start_line, c.end_line, d.title
from chunks c
join documents d on d.id = c.document_id
join vaults v on v.id = c.vault_id
where v.name = %(vault)s and d.source_path = %(source_path)s and {readable}
  and (%(first_line)s::int is null or coalesce(c.end_line, c.start_line) >= %(first_line)s::int)
  and (%(last_line)s::int is null or c.start_line <= %(last_line)s::int)
order by c.ordinal
""").format(readable=READABLE)

_NOTES = sql.SQL("""
select v.name as vault, d.source_path, d.title
from documents d
join vaults v on v.id = d.vault_id
where (%(vaults)s::text[] is null or v.name = any(%(vaults)s::text[]))
  and (v.name, d.source_path) > (%(after_vault)s::text, %(after_path)s::text)
  and exists (select 1 from chunks c where c.document_id = d.id and {readable})
order by v.name, d.source_path
limit %(limit)s
""").format(readable=READABLE)


# Line numbers are PostgreSQL integers: a larger one was "database error: integer out of range".
MAX_LINE = 2_147_483_647


def _line(value: int | None, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINE:
        shown = value if not isinstance(value, int) or abs(value) <= MAX_LINE else "a larger number"
        raise InputError(f"{name} must be a whole number from 1 to {MAX_LINE}, got {shown!r}")
    return value


def read_passages(conn: Connection, vault: str, note: str, *, scope: Scope | None = None,
                  start_line: int | None = None, end_line: int | None = None) -> NotePassages:
    """The passages the scope may read, overlapping lines `start_line`..`end_line` (1-based, inclusive;
    None = from the start / to the end), of the note `note` names in `vault`: a path, a path without
    `.md`, a unique file name or an alias (rag.retrieval.note_names). NotFoundError when the note is
    absent, above the scope's clearance, or holds no passage in those lines."""
    scope = scope or Scope.unrestricted()
    validate_source_path(note)
    first, last = _line(start_line, "start_line"), _line(end_line, "end_line")
    if first is not None and last is not None and last < first:
        raise InputError(f"end_line ({last}) is before start_line ({first})")
    if not scope.allows_vault(vault):
        raise AuthError(f"this key may not read vault '{vault}'")
    source_path = resolve_note(conn, vault, note, scope=scope).source_path
    with conn.cursor(row_factory=class_row(_PassageRow)) as cur:
        rows = cur.execute(_PASSAGES, {"vault": vault, "source_path": source_path, "levels": levels_param(scope),
                                       "first_line": first, "last_line": last}).fetchall()
    if not conn.autocommit:
        conn.rollback()
    if not rows:
        # The same message whether the note is absent or above the caller's clearance.
        where = "" if first is None and last is None else f" in lines {first or 1}-{last or 'end'}"
        raise NotFoundError(f"no note {vault}/{source_path}{where}")
    return NotePassages(vault, source_path, rows[0].title,
                        [Passage(r.ordinal, r.heading_path, render_text(r.content), r.start_line, r.end_line)
                         for r in rows])


def list_notes(conn: Connection, *, scope: Scope | None = None, vaults: Sequence[str] | None = None,
               after: tuple[str, str] | None = None, limit: int) -> list[NoteEntry]:
    """Notes holding a passage the scope may read, by vault then path, the first `limit` after
    `after` (a (vault, source_path) already listed; None = from the start)."""
    scope = scope or Scope.unrestricted()
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"limit must be a whole number of at least 1, got {limit!r}")
    allowed = scope.check_vaults(list(vaults) if vaults else None)
    after_vault, after_path = after if after is not None else ("", "")
    with conn.cursor(row_factory=class_row(NoteEntry)) as cur:
        rows = cur.execute(_NOTES, {"vaults": None if allowed is None else list(allowed), "levels": levels_param(scope),
                                    "after_vault": after_vault, "after_path": after_path, "limit": limit}).fetchall()
    if not conn.autocommit:
        conn.rollback()
    return rows
