"""Two vectors per note, beside its passages' ones: its outline, and the words other notes link to it with.

`outline`: the note's name and its headings ("Ribbon: Ribbon; Customize the ribbon; ..."), what a note
is about as a whole, which a question phrased in a user's words often matches better than any one
passage. `inbound`: the sentences around the links other notes of the vault make to it — how other
notes describe it (the anchor text of web search). The links are those resolved to the note at its own
confidentiality level, the lowest that reads it (`rag.ingest.links`: one resolution per level), so
only links from notes at that level or below count, and only notes at that level or below decide
where they point: whoever may read the note may read every sentence in its vector, and no reader's
ranking moves on a note it may not read. (A reader above the note's level may see one of these links
resolved elsewhere, to a namesake of its own level that takes the link: the vector is one per note.)

Refreshed after a run that changed the vault, once its links are resolved (an edit elsewhere can
change a note's inbound lines), or when the model has none yet: each vector's source text is hashed,
and only changed ones are embedded again. BEIR
corpora have neither headings nor links and get none. `ask` and `search` read them through
rag.retrieval.note_signal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
from psycopg.rows import class_row

from rag.store.database import Connection, fetch_column

Embed = Callable[[Sequence[str], Sequence[str]], np.ndarray]  # (texts, owner paths) -> one row per text

_SOURCES = """
select d.id, d.source_path,
       coalesce((select array_agg(c.heading_path order by c.ordinal) from chunks c
                 where c.vault_id = d.vault_id and c.document_id = d.id),
                '{}') as heading_paths,
       coalesce((select array_agg(l.sentence order by s.source_path, l.line, l.id)
                 from link_targets r
                 join links l on l.vault_id = r.vault_id and l.id = r.link_id
                 join documents s on s.id = l.source_document_id
                 where r.target_document_id = d.id and r.level = coalesce(ragpg_level_rank(d.confidentiality), 4)
                   and l.source_document_id <> d.id and l.sentence <> ''
                   and coalesce(ragpg_level_rank(s.confidentiality), 4) <= r.level), '{}') as inbound,
       coalesce((select jsonb_object_agg(v.field, v.source_hash) from note_vectors v
                 where v.document_id = d.id and v.model_id = %(model)s), '{}') as hashes
from documents d where d.vault_id = %(vault)s
"""


@dataclass(frozen=True)
class _Sources:
    id: int
    source_path: str
    heading_paths: list[str]
    inbound: list[str]
    hashes: dict[str, str]


@dataclass(frozen=True)
class NoteText:
    document_id: int
    source_path: str
    field: str  # 'outline' or 'inbound'
    text: str

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def outline_text(source_path: str, heading_paths: Sequence[str], max_headings: int) -> str:
    """The note's name and its headings in order, each once ("Ribbon: Ribbon; Customize the ribbon")."""
    headings: list[str] = []
    for path in heading_paths:
        for part in path.split(" > "):
            heading = part.lstrip("#").strip()
            if heading and heading not in headings:
                headings.append(heading)
    return f"{PurePosixPath(source_path).stem}: " + "; ".join(headings[:max_headings])


def missing(conn: Connection, vault_id: int, model_id: int) -> bool:
    """Whether the vault holds notes but no note vector of this model (a new model, or an index built
    before note vectors): then an unchanged vault is refreshed too."""
    found = fetch_column(conn, bool, "select exists (select from documents where vault_id = %s) and not exists "
                         "(select from note_vectors where vault_id = %s and model_id = %s)",
                         (vault_id, vault_id, model_id))
    return found[0]


def refresh_note_vectors(conn: Connection, vault_id: int, model_id: int, embed: Embed, *,
                         max_headings: int, max_sentences: int) -> int:
    """Embed the notes' outline and inbound texts that changed since last time; returns how many."""
    with conn.cursor(row_factory=class_row(_Sources)) as cur:
        notes = cur.execute(_SOURCES, {"vault": vault_id, "model": model_id}).fetchall()
    wanted: list[NoteText] = []
    gone: list[tuple[int, str]] = []
    for n in notes:
        texts = {"outline": outline_text(n.source_path, n.heading_paths, max_headings),
                 "inbound": " ".join(list(dict.fromkeys(n.inbound))[:max_sentences])}
        for field, text in texts.items():
            item = NoteText(n.id, n.source_path, field, text)
            if not text:
                gone += [(n.id, field)] if field in n.hashes else []
            elif n.hashes.get(field) != item.source_hash:
                wanted.append(item)
    vectors = embed([w.text for w in wanted], [w.source_path for w in wanted]) if wanted else None
    with conn.transaction():
        if gone:
            conn.execute("delete from note_vectors v using unnest(%s::bigint[], %s::text[]) as g(id, field) "
                         "where v.document_id = g.id and v.field = g.field and v.model_id = %s",
                         ([g[0] for g in gone], [g[1] for g in gone], model_id))
        if wanted and vectors is not None:
            _write(conn, vault_id, model_id, wanted, vectors)
    return len(wanted)


def _write(conn: Connection, vault_id: int, model_id: int, items: Sequence[NoteText], vectors: np.ndarray) -> None:
    conn.execute("delete from note_vectors v using unnest(%s::bigint[], %s::text[]) as g(id, field) "
                 "where v.document_id = g.id and v.field = g.field and v.model_id = %s",
                 ([i.document_id for i in items], [i.field for i in items], model_id))
    with conn.cursor() as cur, cur.copy("copy note_vectors (vault_id, document_id, model_id, field, source_hash, "
                                        "embedding) from stdin with (format binary)") as copy:
        copy.set_types(["int8", "int8", "int4", "text", "text", "vector"])
        for item, vector in zip(items, vectors, strict=True):
            copy.write_row((vault_id, item.document_id, model_id, item.field, item.source_hash,
                            np.asarray(vector, dtype=np.float32)))
