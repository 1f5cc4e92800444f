"""Bulk loads of precomputed rows: documents, chunks and their vectors, streamed in bounded COPY batches.

For a first import of many documents whose chunks and embeddings already exist (a migration, a
benchmark corpus): `load_documents(conn, vault, model, documents, settings)` takes any iterable
of `PreparedDocument` (with `vectors` set) and never holds more than one batch.

1. Under the vault's index lock, whatever a killed load or index run left deferred is finished first.
2. When the load dwarfs what is stored (`BulkLoadPolicy`, as for index runs), work that is cheaper
   done once than row by row is deferred (`Deferral`): the vault's HNSW graph when the load dwarfs
   the vault's vectors (its partition of the model's table is detached, loaded, and attached back,
   which builds that graph alone; other vaults' graphs are untouched), the chunks table's
   secondary indexes when it dwarfs every vault's chunks (all recorded in `deferred_indexes`), and
   the vault's BM25 bookkeeping is switched to one set-based pass at the end (`ragpg_bm25_defer`). Measured on 50k
   chunks: 31.7 s to COPY with per-statement BM25 triggers and GIN indexes, 8.7 s without; the
   set-based BM25 pass and the GIN builds then take ~13 s, with the same statistics and postings.
3. Each batch of up to `bulk_batch_rows` chunks is one transaction of three COPYs (documents,
   chunks, vectors), ids drawn from the tables' sequences up front so nothing is read back. A
   document marked `replaces` has its stored version deleted in the same transaction.
4. Then BM25 (`ragpg_bm25_restore`), the chunks' indexes, the HNSW index (with session memory
   sized by `build_memory`) and VACUUM (ANALYZE), each timed in the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from rag.config import IngestSettings
from rag.ingest import build_memory, hnsw, store
from rag.ingest.hnsw import BulkLoadPolicy
from rag.ingest.report import peak_rss_mb
from rag.store.database import Connection, fetch_column
from rag.store.models import EmbeddingModelRef
from rag.store.vaults import Vault

_DOC_COLUMNS = ("id", "vault_id", "source_path", "folder", "title", "url", "doc_type", "persona", "tags",
                "project", "confidentiality", "doc_date", "document_version", "size_bytes", "metadata")
_CHUNK_COLUMNS = ("id", "document_id", "vault_id", "ordinal", "heading_path", "content", "token_count",
                  "start_line", "end_line", "start_byte", "end_byte", "risk_flags", "risk_score", "metadata",
                  "text_search_config")
_COPY_DOCUMENTS = sql.SQL("copy documents ({}) from stdin").format(
    sql.SQL(", ").join(map(sql.Identifier, _DOC_COLUMNS)))
_COPY_CHUNKS = sql.SQL("copy chunks ({}) from stdin").format(sql.SQL(", ").join(map(sql.Identifier, _CHUNK_COLUMNS)))
_PARTITION = sql.SQL("select ragpg_vault_partition_name(%s, %s)")
_OWN_PARTITION = sql.SQL("select ragpg_vault_has_own_partition(%s)")
_PLACE = sql.SQL("select ragpg_place_vault(%s, %s, %s) as moved")
# COPY writes identity columns as given (like OVERRIDING SYSTEM VALUE), so ids come from the sequence.
_NEXT_IDS = sql.SQL("select nextval(pg_get_serial_sequence({}, 'id')) as id from generate_series(1, %s)")


@dataclass
class LoadReport:
    documents: int = 0
    chunks: int = 0
    deferred: dict[str, bool] = field(default_factory=dict)  # bm25, chunk_indexes, hnsw
    seconds: dict[str, float] = field(default_factory=dict)  # copy, bm25, chunk_indexes, hnsw, vacuum_analyze, total
    memory: dict[str, Any] = field(default_factory=dict)
    peak_rss_mb: float = 0.0

    @property
    def chunks_per_s(self) -> float:
        total = self.seconds.get("total", 0.0)
        return self.chunks / total if total > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "chunks": self.chunks, "deferred": dict(self.deferred),
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "chunks_per_s": round(self.chunks_per_s, 1), "memory": dict(self.memory),
                "peak_rss_mb": round(self.peak_rss_mb, 1)}


class Deferral:
    """What one load (or index run) of a vault deferred, and how to finish it.

    `start` decides and commits (call it on an autocommit connection, outside a transaction);
    `finish` builds everything deferred, timing each step into `seconds`."""

    def __init__(self, conn: Connection, vault_id: int, model: EmbeddingModelRef, settings: IngestSettings, *,
                 vault_graph: bool = False) -> None:
        self.conn, self.vault_id, self.model, self.settings = conn, vault_id, model, settings
        self.bm25 = self.chunk_indexes = self.hnsw = False
        # vault_graph: defer only this vault's HNSW graph (its partition of the model's table,
        # detached meanwhile: db/sql/25_bulk_load.sql), not every vault's
        self.hnsw_table = model.embedding_table
        # (a vault in the shared partition has no graph of its own to defer: the shared graph is every
        # small vault's, and its load is small, 12_vault_partitions.sql)
        self.shared_graph = vault_graph and not fetch_column(conn, bool, _OWN_PARTITION, (vault_id,))[0]
        if vault_graph and not self.shared_graph:
            self.hnsw_table = fetch_column(conn, str, _PARTITION, (model.embedding_table, vault_id))[0]

    @property
    def embedding_target(self) -> str:
        """Where this vault's vectors are COPYed: its detached partition while its graph is deferred."""
        return self.hnsw_table if self.hnsw else self.model.embedding_table

    @staticmethod
    def finish_leftovers(conn: Connection, vault_id: int) -> None:
        """BM25 of a killed load of this vault, and indexes of dead runs (any table)."""
        conn.execute("select ragpg_bm25_restore(%s)", (vault_id,))
        hnsw.restore_deferred(conn)

    def start(self, expected_chunks: int | None) -> None:
        policy = BulkLoadPolicy(self.settings.bulk_load_min_vectors, self.settings.bulk_load_min_fraction)
        self.hnsw = not self.shared_graph and hnsw.defer_indexes(self.conn, self.hnsw_table, policy, expected_chunks)
        self.chunk_indexes = hnsw.defer_indexes(self.conn, "chunks", policy, expected_chunks)
        if self._vault_is_small(policy, expected_chunks):
            row = self.conn.execute("select ragpg_bm25_defer(%s) as deferred", (self.vault_id,)).fetchone()
            self.bm25 = bool(row and row["deferred"])

    def _vault_is_small(self, policy: BulkLoadPolicy, expected: int | None) -> bool:
        if expected is None:
            return True
        if expected < policy.min_vectors:
            return False
        row = self.conn.execute("select coalesce(sum(chunk_count), 0) as n from bm25_vault_stats where vault_id = %s",
                                (self.vault_id,)).fetchone()
        return row is not None and row["n"] <= expected / policy.min_fraction

    def to_dict(self) -> dict[str, bool]:
        return {"bm25": self.bm25, "chunk_indexes": self.chunk_indexes, "hnsw": self.hnsw}

    def finish(self, vectors: int, seconds: dict[str, float]) -> build_memory.BuildMemory:
        """BM25, then the chunks' indexes, then HNSW (the largest last), each with `memory` set."""
        memory = build_memory.plan(self.conn, self.settings, vectors, self.model.dims)
        with build_memory.build_session(self.conn, memory):
            if self.bm25:
                started = time.perf_counter()
                self.conn.execute("select ragpg_bm25_restore(%s)", (self.vault_id,))
                self.bm25 = False
                seconds["bm25"] = time.perf_counter() - started
            if self.chunk_indexes:
                started = time.perf_counter()
                hnsw.restore_deferred(self.conn, "chunks")
                self.chunk_indexes = False
                seconds["chunk_indexes"] = time.perf_counter() - started
            if self.hnsw:
                started = time.perf_counter()
                hnsw.restore_deferred(self.conn, self.hnsw_table)
                self.hnsw = False
                seconds["hnsw"] = time.perf_counter() - started
        return memory


def load_documents(conn: Connection, vault: Vault, model: EmbeddingModelRef,
                   documents: Iterable[store.PreparedDocument], settings: IngestSettings, *,
                   expected_chunks: int | None = None,
                   on_batch: Callable[[int], None] | None = None) -> LoadReport:
    """Load `documents` (each with its chunks and `vectors`) into `vault`; see the module docstring.

    `conn` must be in autocommit mode (every batch and step is its own transaction).
    `expected_chunks` (None: unknown, treated as large) decides what is deferred."""
    if not conn.autocommit:
        raise ValueError("load_documents needs an autocommit connection")
    report = LoadReport()
    started = time.perf_counter()
    before = row_estimate(conn, model.embedding_table)
    with store.vault_lock(conn, vault.id):
        Deferral.finish_leftovers(conn, vault.id)
        place_vault(conn, vault.id, expected_chunks, settings)
        deferral = Deferral(conn, vault.id, model, settings, vault_graph=True)
        deferral.start(expected_chunks)
        report.deferred = deferral.to_dict()
        try:
            for batch in _batches(documents, settings.bulk_batch_rows):
                report.chunks += copy_batch(conn, vault, model, batch, embedding_table=deferral.embedding_target)
                report.documents += len(batch)
                if on_batch is not None:
                    on_batch(report.chunks)
        except Exception:
            deferral.finish(before + report.chunks, {})  # never leave the vault without its indexes
            raise
        report.seconds["copy"] = time.perf_counter() - started
        memory = deferral.finish(before + report.chunks, report.seconds)
    report.memory = memory.to_dict()
    analyzed = time.perf_counter()
    # VACUUM too: BM25 scoring reads bm25_postings index-only, which needs the visibility map that
    # only a vacuum sets; until autovacuum gets there every posting read would also visit the heap.
    for table in ("documents", "chunks", model.embedding_table, "bm25_postings", "bm25_term_stats"):
        conn.execute(sql.SQL("vacuum (analyze) {}").format(sql.Identifier(table)))
    report.seconds["vacuum_analyze"] = time.perf_counter() - analyzed
    report.seconds["total"] = time.perf_counter() - started
    report.peak_rss_mb = peak_rss_mb()
    return report


def place_vault(conn: Connection, vault_id: int, expected_chunks: int | None, settings: IngestSettings) -> bool:
    """Before an index run or load writes: a vault whose stored chunks plus `expected_chunks` pass
    ingest.own_partition_min_chunks moves out of the shared partition into partitions of its own
    (db/sql/12_vault_partitions.sql), with every row as it was. True when it moved."""
    row = conn.execute(_PLACE, (vault_id, expected_chunks or 0, settings.own_partition_min_chunks)).fetchone()
    return bool(row and row["moved"])


def row_estimate(conn: Connection, table: str) -> int:
    """Rows of `table` as the planner last counted them (0 before any VACUUM or ANALYZE)."""
    row = conn.execute("select greatest(reltuples, 0)::bigint as n from pg_class where oid = to_regclass(%s)",
                       (table,)).fetchone()
    return int(row["n"]) if row else 0


def _batches(documents: Iterable[store.PreparedDocument], rows: int) -> Iterator[list[store.PreparedDocument]]:
    batch: list[store.PreparedDocument] = []
    size = 0
    for doc in documents:
        batch.append(doc)
        size += len(doc.chunks)
        if size >= rows:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _next_ids(conn: Connection, table: str, n: int) -> list[int]:
    return fetch_column(conn, int, _NEXT_IDS.format(sql.Literal(table)), (n,))


def copy_batch(conn: Connection, vault: Vault, model: EmbeddingModelRef,
               docs: Sequence[store.PreparedDocument], *, embedding_table: str | None = None) -> int:
    """One transaction: stored versions of `replaces` documents out, then three COPYs. Returns chunks
    written. `embedding_table`: where the vectors go (`Deferral.embedding_target`; default the model's)."""
    n_chunks = sum(len(d.chunks) for d in docs)
    vectors = [v for d in docs for v in _vectors_of(d)]
    with conn.transaction():
        replaced = [d.source_path for d in docs if d.replaces]
        if replaced:
            store.delete_documents(conn, vault.id, replaced)
        doc_ids = _next_ids(conn, "documents", len(docs))
        chunk_ids = _next_ids(conn, "chunks", n_chunks) if n_chunks else []
        with conn.cursor() as cur:
            with cur.copy(_COPY_DOCUMENTS) as copy:
                for doc_id, d in zip(doc_ids, docs, strict=True):
                    copy.write_row((doc_id, vault.id, d.source_path, d.folder, d.title, d.url, d.doc_type, d.persona,
                                    d.tags, d.project, d.confidentiality, d.doc_date, d.document_version,
                                    d.size_bytes, Jsonb(d.metadata)))
            ids = iter(chunk_ids)
            with cur.copy(_COPY_CHUNKS) as copy:
                for doc_id, d in zip(doc_ids, docs, strict=True):
                    for c in d.chunks:
                        copy.write_row((next(ids), doc_id, vault.id, c.ordinal, c.heading_path, c.content,
                                        c.token_count, c.start_line, c.end_line, c.start_byte, c.end_byte,
                                        c.risk_flags, c.risk_score, Jsonb(c.metadata), vault.text_search_config))
        store.copy_embeddings(conn, model, chunk_ids, vectors, [vault.id] * len(chunk_ids), table=embedding_table)
    return n_chunks


def _vectors_of(doc: store.PreparedDocument) -> Sequence[Any]:
    if doc.vectors is None or len(doc.vectors) != len(doc.chunks):
        raise ValueError(f"{doc.source_path}: {len(doc.chunks)} chunks need as many vectors")
    return list(doc.vectors)
