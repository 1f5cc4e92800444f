"""Mask the secrets already stored: from this release the indexer masks before it writes.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02

No table changes; a data migration, in Python, with the masking rules of rag/secrets.py:
- documents: source_path and folder (masked per name, as the walk now does, so the next run finds
  each document under the same masked path), title, url, doc_type, persona, project, tags and the
  front matter in metadata (keys and values, nested);
- chunks: content and heading_path (a private-key block cut by a chunk boundary is followed into
  the chunks after it, in ordinal order), and metadata;
- index_runs: error texts and progress.
Chunks whose text changed lose their vectors in every model's table (they were computed from the
raw text); until the next `ragpg index`, those chunks are found by their words only. Every document
the migration changed gets a document_version no file can have, so the next index run parses and
embeds it again from its file, masked whole, exactly as a new note (and backfills a vector for any
chunk whose file is gone).

The chunks' triggers are off while this runs: they are whatever release's db/sql the database had
(db/sql is re-applied after the last revision), which need not fit these tables. What they would
keep in step is done here on the tables as revision 0011 left them: the changed chunks' tsvector and
length, their BM25 postings, the statistics of the vaults they are in; a vault's pg_textsearch
index, which holds the chunks' text, is dropped (the next index run, which the stale documents
bring about anyway, builds it again).

The downgrade changes nothing: masked text cannot be unmasked (the originals are in the files).
"""

# No `from __future__ import annotations`: alembic loads this file outside sys.modules, where
# dataclasses cannot resolve string annotations.
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from alembic import op
from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from rag.secrets import mask_path, mask_structure, mask_text

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

BATCH_ROWS = 500
STALE_VERSION_PREFIX = "masked-0012:"  # no sha256 looks like this: the next run re-indexes the document
PATH_KEYS = frozenset({"source_path", "folder", "beir_id"})
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_LINE = re.compile(r"[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*")
_KEY_FRAGMENT = re.compile(r"[ \t]*[A-Za-z0-9+/=]+[ \t]*")


@dataclass(frozen=True)
class _Document:
    id: int
    source_path: str
    folder: str
    title: str | None
    url: str | None
    doc_type: str | None
    persona: str | None
    project: str | None
    tags: list[str]
    metadata: dict[str, Any]


@dataclass(frozen=True)
class _Chunk:
    id: int
    document_id: int
    ordinal: int
    heading_path: str
    content: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class _Run:
    id: Any
    error: str | None
    progress: dict[str, Any]


@dataclass(frozen=True)
class _Table:
    embedding_table: str


def mask_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A stored metadata object masked as the indexer masks it now (paths per name, the rest by key)."""
    paths = {k: mask_path(v) for k, v in metadata.items() if k in PATH_KEYS and isinstance(v, str)}
    rest = mask_structure({k: v for k, v in metadata.items() if k not in paths})
    return {**rest, **paths}


def mask_document(d: _Document) -> _Document:
    def opt(v: str | None) -> str | None:
        return None if v is None else mask_text(v)

    return _Document(d.id, mask_path(d.source_path), mask_path(d.folder), opt(d.title), opt(d.url),
                     opt(d.doc_type), opt(d.persona), opt(d.project), [mask_text(t) for t in d.tags],
                     mask_metadata(d.metadata))


def mask_chunk_texts(texts: Sequence[str]) -> list[str]:
    """The chunks of one document, in order, masked. A key block whose BEGIN line is in an earlier
    chunk has no marker in the later ones: their leading key lines are masked while it is open."""
    out: list[str] = []
    open_block = False
    for text in texts:
        if open_block:
            text = _mask_leading_key_lines(text)
        out.append(mask_text(text))
        markers = sorted([(m.start(), True) for m in _KEY_BEGIN.finditer(text)]
                         + [(m.start(), False) for m in _KEY_END.finditer(text)])
        open_block = markers[-1][1] if markers else open_block
    return out


def _mask_leading_key_lines(text: str) -> str:
    """Key lines at the start of a chunk that begins inside a key block (the first may be the end
    of a line cut in two)."""
    lines = text.split("\n")
    n = 1 if lines and _KEY_FRAGMENT.fullmatch(lines[0]) and lines[0].strip() else 0
    while n < len(lines) and _KEY_LINE.fullmatch(lines[n]):
        n += 1
    if n == 0:
        return text
    return "\n".join(["[REDACTED:private_key]", *([""] * (n - 1)), *lines[n:]])


def upgrade() -> None:
    conn: psycopg.Connection[Any] = op.get_bind().connection.driver_connection
    conn.execute("alter table chunks disable trigger user")
    changed_docs = _mask_documents(conn)
    changed_chunks = _mask_chunks(conn)
    changed_docs |= {document_id for document_id, _ in changed_chunks}
    _reindex_text(conn, sorted(chunk_id for _, chunk_id in changed_chunks))
    conn.execute("alter table chunks enable trigger user")
    _mask_runs(conn)
    conn.execute("update documents set document_version = %s || document_version where id = any(%s)",
                 (STALE_VERSION_PREFIX, sorted(changed_docs)))


# What the chunks' triggers keep in step, for the chunks whose text changed, on 0011's tables. A bulk
# load that is deferring a vault's bookkeeping (bm25_deferred) leaves its rows above the watermark
# out of postings and statistics; its restore counts them.
_COUNTED = "not exists (select 1 from bm25_deferred d where d.vault_id = c.vault_id and c.id > d.after_chunk_id)"
_REINDEX_TEXT = [
    "update chunks set content_tsv = to_tsvector(text_search_config, heading_path || ' ' || content) "
    "where id = any(%(ids)s)",
    "update chunks set lexeme_count = ragpg_tsvector_token_count(content_tsv) where id = any(%(ids)s)",
    "delete from bm25_postings where chunk_id = any(%(ids)s)",
    "insert into bm25_postings (vault_id, lexeme, chunk_id, tf, dl, text_search_config) "
    "select c.vault_id, u.lexeme, c.id, coalesce(cardinality(u.positions), 1), c.lexeme_count, c.text_search_config "
    f"from chunks c cross join lateral unnest(c.content_tsv) as u where c.id = any(%(ids)s) and {_COUNTED}",
    "delete from bm25_vault_stats where vault_id = any(%(vaults)s)",
    "insert into bm25_vault_stats (vault_id, chunk_count, total_length) "
    f"select c.vault_id, count(*), sum(c.lexeme_count) from chunks c where c.vault_id = any(%(vaults)s) and {_COUNTED} "
    "group by 1",
    "delete from bm25_term_stats where vault_id = any(%(vaults)s)",
    "insert into bm25_term_stats (vault_id, lexeme, chunk_frequency) "
    "select c.vault_id, u.lexeme, count(*) from chunks c cross join lateral unnest(c.content_tsv) as u "
    f"where c.vault_id = any(%(vaults)s) and {_COUNTED} group by 1, 2",
    # its table holds the raw text; the trigger on bm25_indexes drops the table
    "delete from bm25_indexes where vault_id = any(%(vaults)s)",
]


def _reindex_text(conn: psycopg.Connection[Any], chunk_ids: list[int]) -> None:
    if not chunk_ids:
        return
    with conn.cursor(row_factory=class_row(_VaultId)) as cur:
        vaults = [r.vault_id for r in cur.execute("select distinct vault_id from chunks where id = any(%s)",
                                                    (chunk_ids,))]
    for statement in _REINDEX_TEXT:
        conn.execute(statement, {"ids": chunk_ids, "vaults": vaults})


def downgrade() -> None:
    """Nothing to undo: the originals are only in the users' files."""


def _pages(conn: psycopg.Connection[Any], query: sql.Composable, row: type) -> Iterable[list[Any]]:
    after = -1
    while True:
        with conn.cursor(row_factory=class_row(row)) as cur:
            rows = cur.execute(query, (after, BATCH_ROWS)).fetchall()
        if not rows:
            return
        yield rows
        after = rows[-1].id


def _mask_documents(conn: psycopg.Connection[Any]) -> set[int]:
    query = sql.SQL("select id, source_path, folder, title, url, doc_type, persona, project, tags, metadata "
                    "from documents where id > %s order by id limit %s")
    changed: set[int] = set()
    for rows in _pages(conn, query, _Document):
        updates = [m for d in rows if (m := mask_document(d)) != d]
        for m in updates:
            conn.execute(
                "update documents set source_path = %s, folder = %s, title = %s, url = %s, doc_type = %s, "
                "persona = %s, project = %s, tags = %s, metadata = %s where id = %s",
                (m.source_path, m.folder, m.title, m.url, m.doc_type, m.persona, m.project, m.tags,
                 Jsonb(m.metadata), m.id))
        changed.update(m.id for m in updates)
    return changed


def _mask_chunks(conn: psycopg.Connection[Any]) -> set[tuple[int, int]]:
    """Chunks document by document (a key block may span chunks); returns (document, chunk) of every
    chunk whose text or heading changed, and of those whose metadata alone did."""
    query = sql.SQL("select id from documents where id > %s order by id limit %s")
    with conn.cursor(row_factory=class_row(_Table)) as cur:
        tables = [t.embedding_table for t in cur.execute("select embedding_table from embedding_models")]
    changed: set[tuple[int, int]] = set()
    for docs in _pages(conn, query, _DocId):
        with conn.cursor(row_factory=class_row(_Chunk)) as cur:
            chunks = cur.execute("select id, document_id, ordinal, heading_path, content, metadata from chunks "
                                 "where document_id = any(%s) order by document_id, ordinal",
                                 ([d.id for d in docs],)).fetchall()
        rows, reembed = _masked_rows(chunks)
        if rows:
            conn.execute("update chunks c set heading_path = r.heading_path, content = r.content, "
                         "metadata = r.metadata from jsonb_to_recordset(%s) as "
                         "r(id bigint, heading_path text, content text, metadata jsonb) where c.id = r.id",
                         (Jsonb(rows),))
            changed.update((c.document_id, c.id) for c in chunks if c.id in {r["id"] for r in rows})
        for table in tables:
            conn.execute(sql.SQL("delete from {} where chunk_id = any(%s)").format(sql.Identifier(table)),
                         (reembed,))
    return changed


@dataclass(frozen=True)
class _DocId:
    id: int


@dataclass(frozen=True)
class _VaultId:
    vault_id: int


def _masked_rows(chunks: Sequence[_Chunk]) -> tuple[list[dict[str, Any]], list[int]]:
    """(update rows for the chunks that change, ids of those whose embedded text changed)."""
    by_doc: dict[int, list[_Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.document_id, []).append(c)
    rows: list[dict[str, Any]] = []
    reembed: list[int] = []
    for doc_chunks in by_doc.values():
        contents = mask_chunk_texts([c.content for c in doc_chunks])
        for c, content in zip(doc_chunks, contents, strict=True):
            heading = mask_text(c.heading_path)
            metadata = mask_metadata(c.metadata)
            if (heading, content) != (c.heading_path, c.content):
                reembed.append(c.id)
            if (heading, content, metadata) != (c.heading_path, c.content, c.metadata):
                rows.append({"id": c.id, "heading_path": heading, "content": content, "metadata": metadata})
    return rows, reembed


def _mask_runs(conn: psycopg.Connection[Any]) -> None:
    with conn.cursor(row_factory=class_row(_Run)) as cur:
        runs = cur.execute("select id, error, progress from index_runs").fetchall()
    for r in runs:
        error, progress = None if r.error is None else mask_text(r.error), mask_structure(r.progress)
        if (error, progress) != (r.error, r.progress):
            conn.execute("update index_runs set error = %s, progress = %s where id = %s", (error, Jsonb(progress), r.id))
