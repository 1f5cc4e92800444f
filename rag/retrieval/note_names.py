"""A note named the way its reader names it: by its path, its path without `.md`, its file name when
no other note has it, or an alias, resolved by the rule links resolve by
(`rag.link_names.LinkResolver.named`, the one place that rule lives).

Names resolve only among the notes the caller may read: the notes are listed by SQL that applies the
scope's clearance (`READABLE`, and row-level security on a scoped connection) and vaults, so a note
above the caller's clearance is not there to make a name ambiguous or to be found by it. A name
several readable notes answer to is an `AmbiguousNameError` listing them; none is a `NotFoundError`
worded like a missing note's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql
from psycopg.rows import class_row

from rag.access import Scope
from rag.errors import AmbiguousNameError, AuthError, NotFoundError
from rag.link_names import LinkResolver
from rag.retrieval.chunks import READABLE, levels_param, validate_source_path
from rag.store.database import Connection
from rag.store.vaults import unknown_vault, vault_names

# Enough candidates for a reader to see where the name is used; more are counted, not listed.
MAX_CANDIDATES_SHOWN = 10


@dataclass(frozen=True)
class NoteRef:
    vault: str
    source_path: str


@dataclass(frozen=True)
class _Row:
    vault: str
    source_path: str
    aliases: Any


# The note at exactly that path, if the scope may read it (it holds a passage the scope may read): one
# indexed lookup, all a caller naming notes by path needs.
_EXACT = sql.SQL("""
select v.name as vault, d.source_path, null::jsonb as aliases
from documents d join vaults v on v.id = d.vault_id
where v.name = any(%(vaults)s::text[]) and d.source_path = %(path)s
  and exists (select 1 from chunks c where c.vault_id = d.vault_id and c.document_id = d.id and {readable})
order by v.name
""").format(readable=READABLE)

# Every note the scope may read in the vaults, with its aliases (front matter, on every passage): one
# join over the passages rather than a subquery per note, which a table without statistics yet (a note
# named right after its first index run) planned as a scan per note.
_ALL = sql.SQL("""
select distinct on (d.id) v.name as vault, d.source_path, coalesce(c.metadata -> 'aliases', '[]'::jsonb) as aliases
from chunks c
join documents d on d.id = c.document_id
join vaults v on v.id = c.vault_id
where v.name = any(%(vaults)s::text[]) and {readable}
order by d.id, c.ordinal
""").format(readable=READABLE)


def resolve_note(conn: Connection, vault: str | None, name: str, *, scope: Scope | None = None) -> NoteRef:
    """The one note `name` names in `vault` (None: in any vault the scope may read)."""
    scope = scope or Scope.unrestricted()
    validate_source_path(name)
    if vault is not None and not scope.allows_vault(vault):
        raise AuthError(f"this key may not read vault '{vault}'")
    known = vault_names(conn)
    if vault is not None and vault not in known:
        raise unknown_vault(vault, known)
    vaults = [vault] if vault is not None else [v for v in known if scope.allows_vault(v)]
    params = {"vaults": vaults, "path": name, "levels": levels_param(scope)}
    try:
        exact = _rows(conn, _EXACT, params)
        if len(exact) == 1:
            return NoteRef(exact[0].vault, exact[0].source_path)
        found = [NoteRef(r.vault, r.source_path) for r in exact] or _by_name(_rows(conn, _ALL, params), name)
    finally:
        if not conn.autocommit:
            conn.rollback()
    if not found:
        where = f"{vault}/" if vault is not None else ""
        raise NotFoundError(f"no note {where}{name}" + ("" if vault is not None else " in any vault"))
    if len(found) > 1:
        raise _ambiguous(name, found)
    return found[0]


def _rows(conn: Connection, query: sql.Composed, params: dict[str, Any]) -> list[_Row]:
    with conn.cursor(row_factory=class_row(_Row)) as cur:
        return cur.execute(query, params).fetchall()


def _by_name(rows: Sequence[_Row], name: str) -> list[NoteRef]:
    """Each vault resolves the name among its own notes (links never cross vaults)."""
    found: list[NoteRef] = []
    for vault in dict.fromkeys(r.vault for r in rows):
        notes = [r for r in rows if r.vault == vault]
        resolver = LinkResolver([r.source_path for r in notes], {r.source_path: _strings(r.aliases) for r in notes})
        found += [NoteRef(vault, path) for path in resolver.named(name)]
    return found


def _ambiguous(name: str, found: Sequence[NoteRef]) -> AmbiguousNameError:
    several_vaults = len({n.vault for n in found}) > 1
    shown = [f"{n.vault}/{n.source_path}" if several_vaults else n.source_path for n in found]
    listed = ", ".join(shown[:MAX_CANDIDATES_SHOWN])
    more = f" and {len(shown) - MAX_CANDIDATES_SHOWN} more" if len(shown) > MAX_CANDIDATES_SHOWN else ""
    hint = "name one by its path" + (" or vault" if several_vaults else "")
    return AmbiguousNameError(f"'{name}' names {len(shown)} notes: {listed}{more}; {hint}", shown)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
