"""The link graph of a vault: links read from each note as it is indexed, resolved once per run.

A note's links are read from its masked text (`rag.obsidian.render_note`) and written with the note,
in its transaction (`write_links`), unresolved. After every run that changed the vault,
`resolve_links` resolves every link of the vault again, the way Obsidian resolves names
(`rag.ingest.link_resolution`), once per confidentiality level a reader of the link may have (from
its source's level up to restricted: at most four), each time among the notes of that level or below
(`link_targets`; a reader follows the resolution of its own level, db/sql/65_links.sql). So the owner's
links reach every note, and a note above a reader's level never changes where that reader's links
point. A renamed or deleted note leaves its inbound links unresolved (its row is gone: `on delete
set null`), a new note takes the links that were waiting for its name, and a name that became
ambiguous stops resolving. Notes indexed before the link graph existed are read
once more for their links only (`documents_without_links`), without being embedded again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from rag.ingest.link_resolution import LinkResolver
from rag.ingest.walk import file_kind
from rag.obsidian import LinkRef, render_note
from rag.secrets import mask_text
from rag.store.database import Connection

LEVELS = (1, 2, 3, 4)  # ragpg_level_rank: public, internal, confidential, restricted (db/sql/15_clearance_levels.sql)
_LINE_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+(?:\[.\]\s+)?|\d+[.)]\s+|\|\s*)")


@dataclass(frozen=True)
class PreparedLink:
    line: int
    kind: str
    target_text: str
    target_heading: str | None
    target_is_file: bool
    anchor_text: str
    sentence: str


def links_of(text: str, sentence_max_chars: int) -> list[PreparedLink]:
    """The links of a note's (masked) text, with the words and the sentence each is shown in."""
    note = render_note(text)
    lines = note.text.split("\n")
    return [_prepared(link, lines[link.line - 1], sentence_max_chars) for link in note.links if link.target]


def _prepared(link: LinkRef, rendered_line: str, max_chars: int) -> PreparedLink:
    heading = f"^{link.block}" if link.block else link.heading
    return PreparedLink(link.line, link.kind, link.target, heading, link.is_file, link.text,
                        line_around(rendered_line, link.text, max_chars))


def line_around(line: str, words: str, max_chars: int) -> str:
    """The rendered line (in a note, a paragraph, list item or table row) that shows `words`, without
    list or heading markers, cut to `max_chars` around the words when longer. The whole line rather
    than one sentence: how a note speaks of another often takes the sentence before or after (the
    note vectors built from these measured better with lines than with single sentences)."""
    body = _LINE_MARKER.sub("", line).strip().strip("|").strip()
    if len(body) <= max_chars:
        return body
    where = max(body.find(words), 0) if words else 0
    left = max(0, min(where - max_chars // 2, len(body) - max_chars))
    return body[left:left + max_chars].strip()


def write_links(conn: Connection, vault_id: int, links_by_document: Mapping[int, Sequence[PreparedLink]]) -> None:
    """Replace the links of these documents (the caller holds the transaction); marks them read."""
    if not links_by_document:
        return
    ids = list(links_by_document)
    conn.execute("delete from links where source_document_id = any(%s)", (ids,))
    rows = [{"source_document_id": doc_id, **asdict(link)}
            for doc_id, links in links_by_document.items() for link in links]
    if rows:
        conn.execute(
            "insert into links (vault_id, source_document_id, line, kind, target_text, target_heading, "
            " target_is_file, anchor_text, sentence) "
            "select %s, r.source_document_id, r.line, r.kind, r.target_text, r.target_heading, r.target_is_file, "
            " r.anchor_text, r.sentence from jsonb_to_recordset(%s) as r(source_document_id bigint, line integer, "
            " kind text, target_text text, target_heading text, target_is_file boolean, anchor_text text, "
            " sentence text)", (vault_id, Jsonb(rows)))
    conn.execute("update documents set links_indexed = true where id = any(%s)", (ids,))


def documents_without_links(conn: Connection, vault_id: int) -> set[str]:
    """Paths of the vault's documents whose links were never read (indexed before the link graph)."""
    with conn.cursor(row_factory=class_row(_Path)) as cur:
        rows = cur.execute("select source_path from documents where vault_id = %s and not links_indexed",
                           (vault_id,)).fetchall()
    return {r.source_path for r in rows}


def resolve_links(conn: Connection, vault_id: int) -> int:
    """Resolve every link of the vault, at each level, against its notes as they are now; returns how
    many resolutions changed."""
    with conn.cursor(row_factory=class_row(_Note)) as cur:
        notes = cur.execute(
            "select d.id, d.source_path, coalesce(ragpg_level_rank(d.confidentiality), 4) as level, coalesce(("
            "  select c.metadata -> 'aliases' from chunks c where c.vault_id = d.vault_id and c.document_id = d.id order by c.ordinal limit 1"
            "), '[]'::jsonb) as aliases from documents d where d.vault_id = %s", (vault_id,)).fetchall()
    with conn.cursor(row_factory=class_row(_StoredLink)) as cur:
        links = cur.execute(
            "select l.id, s.source_path, coalesce(ragpg_level_rank(s.confidentiality), 4) as source_level, "
            "l.target_text from links l "
            "join documents s on s.id = l.source_document_id where l.vault_id = %s", (vault_id,)).fetchall()
    with conn.cursor(row_factory=class_row(_StoredTarget)) as cur:
        stored = {(r.link_id, r.level): r.target_document_id for r in cur.execute(
            "select link_id, level, target_document_id from link_targets where vault_id = %s", (vault_id,))}
    wanted = _targets_by_level(notes, links)
    changed = [(key, target) for key, target in wanted.items() if key not in stored or stored[key] != target]
    gone = [key for key in stored if key not in wanted]  # levels below a source whose level was raised
    if gone:
        conn.execute("delete from link_targets t using unnest(%s::bigint[], %s::smallint[]) as g(link_id, level) "
                     "where t.vault_id = %s and t.link_id = g.link_id and t.level = g.level",
                     ([k[0] for k in gone], [k[1] for k in gone], vault_id))
    if changed:
        conn.execute(
            "insert into link_targets (vault_id, link_id, level, target_document_id) "
            "select %s, u.link_id, u.level, u.target from unnest(%s::bigint[], %s::smallint[], %s::bigint[]) "
            "as u(link_id, level, target) on conflict (vault_id, link_id, level) "
            "do update set target_document_id = excluded.target_document_id",
            (vault_id, [c[0][0] for c in changed], [c[0][1] for c in changed], [c[1] for c in changed]))
    return len(changed) + len(gone)


def _targets_by_level(notes: Iterable[_Note], links: Iterable[_StoredLink]) -> dict[tuple[int, int], int | None]:
    """(link id, level) -> the note the link names among the notes of that level or below (None:
    unresolved), for each level from the link's source's up to restricted. Whoever reads a level's
    resolution may read every note it could name, so a note above that level (named alike, or at the
    very path) never changes what that level's readers see, and a stored target is never a note they
    may not read."""
    notes = list(notes)
    id_of = {n.source_path: n.id for n in notes}
    # A level with no notes of its own reads what the level below reads, and resolves alike: one
    # resolver per distinct set of readable notes (a vault of public notes only resolves each link once).
    readable_count = {level: sum(1 for n in notes if n.level <= level) for level in LEVELS}
    resolvers: dict[int, LinkResolver] = {}
    for level in LEVELS:
        if readable_count[level] not in resolvers:
            readable = [n for n in notes if n.level <= level]
            resolvers[readable_count[level]] = LinkResolver([n.source_path for n in readable],
                                                            {n.source_path: _strings(n.aliases) for n in readable})
    wanted: dict[tuple[int, int], int | None] = {}
    for link in links:
        found: dict[int, int | None] = {}  # readable count -> target
        for level in (lv for lv in LEVELS if lv >= link.source_level):
            count = readable_count[level]
            if count not in found:
                path = resolvers[count].resolve(link.target_text, link.source_path).path
                found[count] = id_of.get(path) if path is not None else None
            wanted[(link.id, level)] = found[count]
    return wanted


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


@dataclass(frozen=True)
class _Path:
    source_path: str


@dataclass(frozen=True)
class _Note:
    id: int
    source_path: str
    level: int  # ragpg_level_rank of the note's confidentiality (4, restricted, when it is none)
    aliases: Any


@dataclass(frozen=True)
class _StoredLink:
    id: int
    source_path: str
    source_level: int
    target_text: str


@dataclass(frozen=True)
class _StoredTarget:
    link_id: int
    level: int
    target_document_id: int | None


class VaultLinks:
    """The link work of one index run of a vault: notes whose links were never read are read for
    their links only (`unchanged`, on the reading thread), then written and the whole vault's links
    resolved (`finish`, once the writer is done with the connection)."""

    def __init__(self, conn: Connection, vault_id: int, sentence_max_chars: int) -> None:
        self.vault_id, self.sentence_max_chars = vault_id, sentence_max_chars
        self.unread = documents_without_links(conn, vault_id)
        self.read: dict[str, list[PreparedLink]] = {}

    def unchanged(self, path: str, data: bytes) -> None:
        if path not in self.unread or file_kind(path) != "markdown":
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return  # indexed before from the same bytes, so not expected; its links wait for an edit
        self.read[path] = links_of(mask_text(text), self.sentence_max_chars)

    def finish(self, conn: Connection, vault_changed: bool) -> bool:
        """Write what was read, resolve the vault's links when anything changed; returns whether it did."""
        if self.read:
            with conn.transaction():
                with conn.cursor(row_factory=class_row(_PathId)) as cur:
                    ids = cur.execute("select id, source_path from documents where vault_id = %s "
                                      "and source_path = any(%s)", (self.vault_id, list(self.read))).fetchall()
                write_links(conn, self.vault_id, {r.id: self.read[r.source_path] for r in ids})
        if not (vault_changed or self.read):
            return False
        with conn.transaction():
            resolve_links(conn, self.vault_id)
        return True


@dataclass(frozen=True)
class _PathId:
    id: int
    source_path: str
