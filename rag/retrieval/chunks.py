"""Fetch one chunk by its stable reference: vault, source_path (relative to the vault root), ordinal.

Chunks come only from the database; nothing is read from disk. The caller's `Scope` is enforced
here: a vault outside the scope is an AuthError (the caller knows the vault name it asked for),
while a chunk above the caller's clearance is filtered out inside the SQL and reported exactly like
a missing chunk, so its existence is not revealed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any

from psycopg import sql
from psycopg.rows import class_row
from pydantic import Field, computed_field

from rag.access import Scope
from rag.errors import AuthError, InputError, NotFoundError
from rag.obsidian import render_text
from rag.store.database import Connection
from rag.types import ChunkSpan

MAX_SOURCE_PATH_CHARS = 4096
_DRIVE = re.compile(r"^[A-Za-z]:(/|$)")


@dataclass(frozen=True)
class ChunkRecord(ChunkSpan):
    """One chunk by its reference, with its document's fields; also the body of GET /v1/chunks/..."""

    vault: str
    source_path: str
    title: str | None
    url: str | None
    doc_type: str | None
    confidentiality: str
    document_version: str
    indexed_at: datetime
    metadata: Annotated[dict[str, Any], Field(exclude=True)] = field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form
    @property
    def text(self) -> str:
        """The chunk as its reader sees it (rag.obsidian.render_text); `content` is the note's own
        markup, line for line."""
        return render_text(self.content)

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form
    @property
    def ref(self) -> str:
        return f"{self.vault}/{self.source_path}#{self.ordinal}"


def validate_source_path(source_path: str) -> str:
    """A vault-relative POSIX path: no '..' or '.' segments, not absolute, no NUL.

    A source path is only ever an exact key in the documents table (nothing is read from disk), so
    any character a POSIX file name may hold is accepted, newline and backslash included: the
    indexer stores such names, and their chunks must be fetchable. Traversal-looking paths are still
    refused, with a message saying what to send instead."""
    shown = source_path if len(source_path) <= 80 else source_path[:77] + "..."
    if not source_path:
        raise InputError("source_path is empty")
    if len(source_path) > MAX_SOURCE_PATH_CHARS:
        raise InputError(f"source_path is {len(source_path)} characters; the limit is {MAX_SOURCE_PATH_CHARS}")
    if "\x00" in source_path:
        raise InputError("source_path contains a NUL character")
    try:
        source_path.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("source_path is not valid UTF-8") from None
    if source_path.startswith("/") or _DRIVE.match(source_path):
        raise InputError(f"invalid source_path {shown!r}: it must be relative to the vault root "
                         "(no leading '/', no drive letter)")
    parts = source_path.split("/")
    if ".." in parts:
        raise InputError(f"invalid source_path {shown!r}: path traversal ('..') is not allowed; "
                         "use the path relative to the vault root")
    if "." in parts or "" in parts:
        raise InputError(f"invalid source_path {shown!r}: empty or '.' path segments are not allowed")
    return source_path


def levels_param(scope: Scope) -> list[str] | None:
    """The scope's levels as READABLE's `levels` parameter (None: the top clearance, every level)."""
    levels = scope.readable_levels()
    return None if levels is None else list(levels)


# The scope's check beside row-level security: one rule in SQL (db/sql/15_clearance_levels.sql), so a
# passage whose own level is missing or unknown reads as restricted here too.
READABLE = sql.SQL("ragpg_chunk_readable(d.confidentiality, c.metadata, %(levels)s::text[])")

_FETCH = sql.SQL("""
select v.name as vault, d.source_path, c.ordinal, c.heading_path, c.content, c.token_count,
       c.start_line, c.end_line, c.start_byte, c.end_byte, c.risk_flags, c.risk_score,
       d.title, d.url, d.doc_type, d.confidentiality, d.document_version, d.indexed_at, d.metadata
from chunks c
join documents d on d.id = c.document_id
join vaults v on v.id = c.vault_id
where v.name = %(vault)s and d.source_path = %(source_path)s and c.ordinal = %(ordinal)s and {readable}
""").format(readable=READABLE)



def get_chunk(conn: Connection, vault: str, source_path: str, ordinal: int, *,
              scope: Scope | None = None) -> ChunkRecord:
    """The chunk at `vault/source_path#ordinal`, if the scope may read it; NotFoundError otherwise."""
    scope = scope or Scope.unrestricted()
    if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0:
        raise InputError(f"ordinal must be a non-negative integer, got {ordinal!r}")
    validate_source_path(source_path)
    if not scope.allows_vault(vault):
        raise AuthError(f"this key may not read vault '{vault}'")
    with conn.cursor(row_factory=class_row(ChunkRecord)) as cur:
        row = cur.execute(_FETCH, {"vault": vault, "source_path": source_path, "ordinal": ordinal,
                                   "levels": levels_param(scope)}).fetchone()
    if not conn.autocommit:
        conn.rollback()
    if row is None:
        # The same message whether the chunk is absent or above the caller's clearance.
        raise NotFoundError(f"no chunk {vault}/{source_path}#{ordinal}")
    return row  # stored masked (rag/secrets.py), like every chunk the retrieval passes return
