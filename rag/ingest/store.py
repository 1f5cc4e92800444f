"""Writes of the indexer: documents, chunks and embeddings, one transaction per document batch.

A batch replaces its documents atomically: old chunks go (their embeddings cascade), documents
are upserted, new chunks and their vectors are inserted, and the documents' links replaced. Chunks are inserted with ONE statement
per batch (``jsonb_to_recordset``) because the BM25 statistics triggers are statement-level: one
firing per batch instead of one per chunk. Vectors are COPYed in binary.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from rag.ingest.chunk import Chunk
from rag.ingest.guard import assess_injection
from rag.ingest.hnsw import BulkLoadPolicy, indexes_rebuilt
from rag.ingest.links import PreparedLink, write_links
from rag.secrets import mask_structure, mask_text
from rag.store.database import Connection, fetch_column
from rag.store.models import EmbeddingModelRef
from rag.store.vaults import vault_label
from rag.tokens import count_tokens
from rag.types import ChunkSpan

# First key of the two-key advisory lock that serialises index runs of one vault ("RAGP").
log = logging.getLogger(__name__)
INDEX_LOCK_CLASS = 0x52414750


@dataclass(frozen=True)
class PreparedChunk(ChunkSpan):
    metadata: dict[str, Any]


@dataclass
class PreparedDocument:
    """One parsed and chunked document, ready to write once `vectors` holds one row per chunk."""

    source_path: str
    folder: str
    title: str | None
    url: str | None
    doc_type: str | None
    persona: str | None
    tags: list[str]
    project: str | None
    confidentiality: str
    doc_date: str | None  # ISO date
    document_version: str
    size_bytes: int
    metadata: dict[str, Any]
    chunks: list[PreparedChunk] = field(default_factory=list)
    vectors: np.ndarray | None = None
    replaces: bool = False  # a stored version exists: its chunks must go first
    failed_closed: bool = False  # confidentiality could not be trusted: stored as the most restricted level
    aliases: list[str] = field(default_factory=list)  # other names of the note (frontmatter `aliases`)
    date_source: str | None = None  # "frontmatter" or "file_mtime" (set by the notes walk)
    links: list[PreparedLink] = field(default_factory=list)  # read from the masked text (rag.ingest.links)


@dataclass(frozen=True)
class StoredVersion:
    source_path: str
    document_version: str


@dataclass(frozen=True)
class PendingChunk:
    """A stored chunk that has no vector in the current model's table yet."""

    id: int
    heading_path: str
    content: str
    metadata: dict[str, Any]  # what the passage's text is built from beside them (rag.ingest.passage_text)


@dataclass(frozen=True)
class _ChunkId:
    id: int
    document_id: int
    ordinal: int


@dataclass(frozen=True)
class _DocId:
    id: int
    source_path: str


@contextmanager
def vault_lock(conn: Connection, vault_id: int) -> Iterator[None]:
    """Serialise index runs of one vault across processes (watch + cron): session advisory lock. A run that
    finds the vault busy says so (a warning on stderr, so cron logs show why it took long), then waits."""
    free = fetch_column(conn, bool, "select pg_try_advisory_lock(%s::int, %s::int)", (INDEX_LOCK_CLASS, vault_id))
    if free != [True]:
        names = fetch_column(conn, str, "select name from vaults where id = %s", (vault_id,))
        log.warning("waiting for another index run of vault %s to finish (it holds the vault's lock)",
                    vault_label(names[0] if names else str(vault_id)))
        conn.execute("select pg_advisory_lock(%s::int, %s::int)", (INDEX_LOCK_CLASS, vault_id))
    try:
        yield
    finally:
        if not conn.closed:
            conn.execute("select pg_advisory_unlock(%s::int, %s::int)", (INDEX_LOCK_CLASS, vault_id))


def stored_versions(conn: Connection, vault_id: int) -> dict[str, str]:
    """source_path -> document_version of every document of the vault."""
    with conn.cursor(row_factory=class_row(StoredVersion)) as cur:
        rows = cur.execute("select source_path, document_version from documents where vault_id = %s",
                           (vault_id,)).fetchall()
    return {r.source_path: r.document_version for r in rows}


def delete_documents(conn: Connection, vault_id: int, source_paths: Sequence[str]) -> int:
    """Remove documents (and their chunks and vectors) in one transaction; returns how many went."""
    if not source_paths:
        return 0
    with conn.transaction():
        _delete_chunks_of(conn, vault_id, source_paths)
        cur = conn.execute("delete from documents where vault_id = %s and source_path = any(%s)",
                           (vault_id, list(source_paths)))
        return cur.rowcount


def restrict_documents(conn: Connection, vault_id: int, source_paths: Sequence[str], level: str) -> int:
    """Raise stored documents (and their chunks' metadata, which SQL filters read) to `level`.

    For a changed file that could not be parsed: its old version stays searchable (the file is
    still there), but no longer at a level the new text may have tightened."""
    if not source_paths:
        return 0
    with conn.transaction():
        conn.execute(
            "update chunks set metadata = jsonb_set(metadata, '{confidentiality}', to_jsonb(%s::text)) "
            "where document_id in (select id from documents where vault_id = %s and source_path = any(%s))",
            (level, vault_id, list(source_paths)))
        cur = conn.execute("update documents set confidentiality = %s where vault_id = %s and source_path = any(%s)",
                           (level, vault_id, list(source_paths)))
        return cur.rowcount


MARKER_SETTING = "root_marker"  # vaults.settings: whether the root held the .obsidian folder at the last run


def record_root_marker(conn: Connection, vault_id: int, present: bool) -> None:
    conn.execute("update vaults set settings = jsonb_set(settings, array[%s], to_jsonb(%s::boolean)) "
                 "where id = %s", (MARKER_SETTING, present, vault_id))


def _delete_chunks_of(conn: Connection, vault_id: int, source_paths: Sequence[str]) -> None:
    # One statement for all documents: a cascade from documents would fire the BM25 trigger per document.
    conn.execute(
        "delete from chunks where document_id in "
        "(select id from documents where vault_id = %s and source_path = any(%s))",
        (vault_id, list(source_paths)))


_DOC_COLUMNS = ("source_path", "folder", "title", "url", "doc_type", "persona", "tags", "project",
                "confidentiality", "doc_date", "document_version", "size_bytes", "metadata")

_UPSERT_DOCUMENTS = sql.SQL(
    "insert into documents (vault_id, {cols}) "
    "select %s, {cols} from jsonb_to_recordset(%s) as r(source_path text, folder text, title text, url text, "
    " doc_type text, persona text, tags text[], project text, confidentiality text, doc_date date, "
    " document_version text, size_bytes bigint, metadata jsonb) "
    "on conflict (vault_id, source_path) do update set {updates}, indexed_at = now() "
    "returning id, source_path"
).format(
    cols=sql.SQL(", ").join(map(sql.Identifier, _DOC_COLUMNS)),
    updates=sql.SQL(", ").join(
        sql.SQL("{} = excluded.{}").format(sql.Identifier(c), sql.Identifier(c)) for c in _DOC_COLUMNS[1:]),
)

_CHUNK_COLUMNS = ("document_id", "ordinal", "heading_path", "content", "token_count", "start_line", "end_line",
                  "start_byte", "end_byte", "risk_flags", "risk_score", "metadata")

_INSERT_CHUNKS = sql.SQL(
    "insert into chunks (vault_id, text_search_config, {cols}) "
    "select %s, %s::regconfig, {cols} from jsonb_to_recordset(%s) as r(document_id bigint, ordinal integer, "
    " heading_path text, content text, token_count integer, start_line integer, end_line integer, "
    " start_byte integer, end_byte integer, risk_flags text[], risk_score real, metadata jsonb) "
    "returning id, document_id, ordinal"
).format(cols=sql.SQL(", ").join(map(sql.Identifier, _CHUNK_COLUMNS)))


def write_documents(conn: Connection, vault_id: int, text_search_config: str,
                    docs: Sequence[PreparedDocument], model: EmbeddingModelRef,
                    bulk: BulkLoadPolicy | None = None) -> int:
    """Replace `docs` (old chunks and vectors out, new ones in) in ONE transaction; returns chunks written.

    Every document must carry its vectors: embedding happens before, outside the transaction, so
    the write is short and a killed process leaves each document either old or new. When `bulk`
    applies to the batch's size, the model's HNSW index is rebuilt instead of inserted into.
    """
    if not docs:
        return 0
    with conn.transaction():
        replaced = [d.source_path for d in docs if d.replaces]
        if replaced:  # skipped for new documents: even an empty delete fires the BM25 trigger
            _delete_chunks_of(conn, vault_id, replaced)
        doc_ids = _upsert_documents(conn, vault_id, docs)
        chunk_ids = _insert_chunks(conn, vault_id, text_search_config, docs, doc_ids)
        write_links(conn, vault_id, {doc_ids[d.source_path]: d.links for d in docs})
        ids: list[int] = []
        vectors: list[np.ndarray] = []
        for doc in docs:
            assert doc.vectors is not None and len(doc.vectors) == len(doc.chunks)
            doc_id = doc_ids[doc.source_path]
            for chunk, vector in zip(doc.chunks, doc.vectors, strict=True):
                ids.append(chunk_ids[(doc_id, chunk.ordinal)])
                vectors.append(vector)
        vaults = [vault_id] * len(ids)
        if bulk is not None and bulk.applies(conn, model.embedding_table, len(ids)):
            with indexes_rebuilt(conn, model.embedding_table):
                copy_embeddings(conn, model, ids, vectors, vaults)
        else:
            copy_embeddings(conn, model, ids, vectors, vaults)
    return len(ids)


def _upsert_documents(conn: Connection, vault_id: int, docs: Sequence[PreparedDocument]) -> dict[str, int]:
    rows = [{c: getattr(d, c) for c in _DOC_COLUMNS} for d in docs]
    with conn.cursor(row_factory=class_row(_DocId)) as cur:
        found = cur.execute(_UPSERT_DOCUMENTS, (vault_id, Jsonb(rows))).fetchall()
    return {r.source_path: r.id for r in found}


def _insert_chunks(conn: Connection, vault_id: int, text_search_config: str,
                   docs: Sequence[PreparedDocument], doc_ids: dict[str, int]) -> dict[tuple[int, int], int]:
    # vars(), not asdict(): a shallow view is enough for one JSON dump, and asdict's deep copy of
    # every chunk's metadata cost the writer thread (and the GIL) ~40x more.
    rows = [{"document_id": doc_ids[d.source_path], **vars(c)} for d in docs for c in d.chunks]
    if not rows:
        return {}
    with conn.cursor(row_factory=class_row(_ChunkId)) as cur:
        found = cur.execute(_INSERT_CHUNKS, (vault_id, text_search_config, Jsonb(rows))).fetchall()
    return {(r.document_id, r.ordinal): r.id for r in found}


def copy_embeddings(conn: Connection, model: EmbeddingModelRef, chunk_ids: Sequence[int],
                    vectors: Sequence[np.ndarray], vault_ids: Sequence[int], *, table: str | None = None) -> None:
    """Binary COPY into the model's table, or `table` (one vault's partition of it, which a bulk
    load holds detached); the caller holds the transaction. Each row names its chunk's vault: the
    table is partitioned by vault (db/sql/12_vault_partitions.sql)."""
    if not chunk_ids:
        return
    statement = sql.SQL("copy {} (vault_id, chunk_id, embedding) from stdin with (format binary)").format(
        sql.Identifier(table or model.embedding_table))
    with conn.cursor() as cur, cur.copy(statement) as copy:
        copy.set_types(["int8", "int8", "vector"])
        for vault_id, chunk_id, vector in zip(vault_ids, chunk_ids, vectors, strict=True):
            copy.write_row((vault_id, chunk_id, np.asarray(vector, dtype=np.float32)))


def chunks_missing_embeddings(conn: Connection, vault_id: int, model: EmbeddingModelRef, *,
                              after_id: int, limit: int) -> list[PendingChunk]:
    """Up to `limit` chunks of the vault (ids above `after_id`) without a vector for `model`."""
    query = sql.SQL(
        "select c.id, c.heading_path, c.content, c.metadata from chunks c "
        "where c.vault_id = %s and c.id > %s "
        "and not exists (select 1 from {} e where e.chunk_id = c.id) "
        "order by c.id limit %s").format(sql.Identifier(model.embedding_table))
    with conn.cursor(row_factory=class_row(PendingChunk)) as cur:
        return cur.execute(query, (vault_id, after_id, limit)).fetchall()


def add_embeddings(conn: Connection, model: EmbeddingModelRef, chunk_ids: Sequence[int],
                   vectors: Sequence[np.ndarray]) -> None:
    """Vectors for existing chunks, in their own transaction (chunks deleted meanwhile are skipped)."""
    with conn.transaction():
        alive = _existing_chunk_ids(conn, chunk_ids)
        pairs = [(i, v) for i, v in zip(chunk_ids, vectors, strict=True) if i in alive]
        copy_embeddings(conn, model, [i for i, _ in pairs], [v for _, v in pairs], [alive[i] for i, _ in pairs])


def _existing_chunk_ids(conn: Connection, chunk_ids: Sequence[int]) -> dict[int, int]:
    """Each existing chunk's vault, by chunk id."""
    with conn.cursor(row_factory=class_row(_ChunkIdOnly)) as cur:
        rows = cur.execute("select id, vault_id from chunks where id = any(%s) for share",
                           (list(chunk_ids),)).fetchall()
    return {r.id: r.vault_id for r in rows}


@dataclass(frozen=True)
class _ChunkIdOnly:
    id: int
    vault_id: int


# --- building rows ----------------------------------------------------------------------------

def document_metadata(vault_name: str, doc: PreparedDocument) -> dict[str, Any]:
    """The document's fields as every chunk carries them in `metadata` (absent values omitted,
    so `$exists` filters mean something)."""
    fields: dict[str, Any] = {
        "vault": vault_name, "folder": doc.folder, "source_path": doc.source_path, "title": doc.title,
        "tags": list(doc.tags), "doc_type": doc.doc_type, "persona": doc.persona, "project": doc.project,
        "confidentiality": doc.confidentiality, "date": doc.doc_date, "url": doc.url,
        "aliases": list(doc.aliases) or None, "date_source": doc.date_source if doc.doc_date else None,
    }
    return {k: v for k, v in fields.items() if v is not None}


def attach_chunks(doc: PreparedDocument, vault_name: str, chunks: Sequence[Chunk],
                  extra_metadata: dict[str, Any] | None = None) -> None:
    """Turn chunker output into rows: secrets masked, token counts, injection flags, denormalised metadata.

    Every way of building a document's rows goes through here, so this is where its fields are
    masked (rag/secrets.py), before anything is embedded or written. The caller masks the whole
    text before chunking (`mask_text`: a token cut by a chunk boundary is still whole there), and
    the path in the walk (`mask_path`: it is the document's identity); each chunk is masked again,
    which changes nothing unless a cut made a new match."""
    _mask_document(doc)
    base = {**document_metadata(vault_name, doc), **mask_structure(extra_metadata or {})}
    doc.chunks = [_prepared_chunk(c, base) for c in chunks]


def _mask_document(doc: PreparedDocument) -> None:
    doc.title, doc.url, doc.doc_type, doc.persona, doc.project = (
        None if v is None else mask_text(v) for v in (doc.title, doc.url, doc.doc_type, doc.persona, doc.project))
    doc.tags = [mask_text(t) for t in doc.tags]
    doc.aliases = [mask_text(a) for a in doc.aliases]
    doc.metadata = mask_structure(doc.metadata)


def _prepared_chunk(c: Chunk, base: dict[str, Any]) -> PreparedChunk:
    text, heading_path = mask_text(c.text), mask_text(c.heading_path)
    risk = assess_injection(text)
    return PreparedChunk(
        ordinal=c.ordinal, heading_path=heading_path, content=text, token_count=count_tokens(text),
        start_line=c.start_line, end_line=c.end_line, start_byte=c.start_byte, end_byte=c.end_byte,
        risk_flags=list(risk.flags), risk_score=risk.risk_score,
        metadata={**base, "ordinal": c.ordinal, "heading_path": heading_path},
    )
