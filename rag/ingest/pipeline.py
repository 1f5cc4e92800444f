"""Index vaults incrementally: walk, hash, parse and chunk what changed, embed, write, prune.

Guarantees (each one tested):
- a file whose sha256 (`document_version`) is unchanged is not parsed or embedded again;
- changed documents are embedded OUTSIDE any transaction, then written a small batch per
  transaction (old chunks out, new ones in; batches queued behind a slow write are merged into
  the next one), so a killed run leaves every document old or new and rerunning finishes the job;
- documents whose files are gone are deleted; a file skipped as `unreadable` (or one the parser
  chokes on, `parse_error`) keeps its old version, any other skip removes it (the index mirrors disk);
- every chunk ends up with a vector in the CURRENT model's table: chunks stored under another
  model are embedded again without re-chunking (vector spaces never mix);
- every skip is reported, never silent; `vaults.last_indexed_at` moves only after a complete run.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

import numpy as np
import psycopg

from rag.config import Settings
from rag.embed import Embedder, get_embedder
from rag.errors import EmbeddingError, RagError
from rag.ingest import beir, bulk, links, note_vectors, presence, store
from rag.ingest.chunk import chunk_markdown, chunk_plain_text
from rag.ingest.embedding_model import ensure_model
from rag.ingest.formats import document_text
from rag.ingest.hnsw import BulkLoadPolicy
from rag.ingest.parse import DATE_KEYS, UNKNOWN_CONFIDENTIALITY, parse_document
from rag.ingest.passage_text import PASSAGE_TEXT_VERSION, embedding_text
from rag.ingest.report import IndexProgress, IndexReport, NoProgress, SkipRecord, VaultReport, peak_rss_mb
from rag.ingest.walk import SkippedFile, VaultFile, read_document, walk_vault
from rag.ingest.writer import BatchWriter
from rag.secrets import MASK_RULES_VERSION, mask_path, mask_text
from rag.store import lexical_backend
from rag.store.database import Connection
from rag.store.locate import connect
from rag.store.models import EmbeddingModelRef
from rag.store.vaults import Vault, mark_indexed, resolve_vaults

# A stored document survives these skips: the file is still there, just not usable right now (a PDF
# indexed where the pdf extra is installed is kept by a run without it, e.g. the server's image).
KEEP_ON_SKIP = frozenset({"unreadable", "parse_error", "needs_extra"})


@dataclass(frozen=True)
class Source:
    """One document candidate: how to get its bytes, and how to turn them into a document."""

    path: str
    read: Callable[[], bytes | SkipRecord]
    prepare: Callable[[bytes, str], tuple[store.PreparedDocument, list[str]]]  # (bytes, version)
    # Part of the stored version beside the bytes' sha256: what else decides the document (a PDF's
    # level comes from a setting, so changing it indexes each PDF again at the next run).
    decided_by: str = ""


def index_vaults(settings: Settings, names: Sequence[str] | None = None, *,
                 progress: IndexProgress | None = None, embedder: Embedder | None = None,
                 allow_empty: bool = False) -> IndexReport:
    """Index the named vaults (none = all). A vault that fails is reported; the others still run.

    `allow_empty` confirms that a vault folder found empty (or without the `.obsidian` folder it had)
    was really emptied: its documents are then removed instead of the vault being reported unavailable."""
    embedder = embedder or get_embedder(settings.embedding.model, settings.embedding)
    report = IndexReport(embedding_model=embedder.model_key)
    started = time.perf_counter()
    progress = progress or NoProgress()
    progress.phase("connecting to the database")
    with connect(settings, autocommit=True) as conn:
        vaults = resolve_vaults(conn, names)
        model: EmbeddingModelRef | None = None
        for vault in vaults:
            try:
                model = model or ensure_model(conn, embedder)
            except RagError as exc:
                report.vaults.append(VaultReport(vault.name, embedder.model_key, error=str(exc),
                                                 error_code=exc.exit_code))
                continue
            report.vaults.append(index_vault(conn, vault, settings, embedder, model, progress, allow_empty=allow_empty))
    report.seconds = time.perf_counter() - started
    report.peak_rss_mb = peak_rss_mb()
    return report


def index_vault(conn: Connection, vault: Vault, settings: Settings, embedder: Embedder,
                model: EmbeddingModelRef, progress: IndexProgress, *, allow_empty: bool = False) -> VaultReport:
    """One incremental run over one vault, on an autocommit connection (transactions are explicit)."""
    run = _VaultRun(conn, vault, settings, embedder, model, progress, allow_empty)
    started = time.perf_counter()
    try:
        with store.vault_lock(conn, vault.id):
            run.execute()
    except RagError as exc:
        run.report.error, run.report.error_code = str(exc), exc.exit_code
    except psycopg.DataError as exc:  # a value Postgres refused: this vault fails, the others still run
        run.report.error, run.report.error_code = f"the database refused a value: {exc}".splitlines()[0], 1
    except Exception as exc:  # nobody planned for it: still this vault's failure alone, in one line
        detail = (str(exc).strip().splitlines() or [""])[0]
        run.report.error, run.report.error_code = f"unexpected {type(exc).__name__}: {detail}".rstrip(": "), 1
    run.report.seconds = time.perf_counter() - started
    return run.report


class _VaultRun:
    def __init__(self, conn: Connection, vault: Vault, settings: Settings, embedder: Embedder,
                 model: EmbeddingModelRef, progress: IndexProgress, allow_empty: bool = False) -> None:
        self.conn, self.vault, self.settings, self.allow_empty = conn, vault, settings, allow_empty
        self.embedder, self.model, self.progress = embedder, model, progress
        self.report = VaultReport(vault.name, embedder.model_key)
        self.pending: list[store.PreparedDocument] = []
        self.unparsed_edits: list[str] = []  # stored documents whose new text could not be parsed
        self.identity: tuple[int, int] | None = None  # the root's (device, inode) after the walk
        self.writer: BatchWriter | None = None
        ingest = settings.ingest
        self.bulk = BulkLoadPolicy(ingest.bulk_load_min_vectors, ingest.bulk_load_min_fraction)
        self.new_documents = 0  # documents not stored yet: each will add at least one vector, most do
        self.deferral: bulk.Deferral | None = None  # decided by the first write
        self.model_loaded = False

    def execute(self) -> None:
        if self.vault.kind != "beir":  # deletions later need the very root the walk listed
            self.identity = presence.root_identity_or_none(self.vault.root)
        self.progress.phase(f"{self.vault.name}: walking the folder")
        sources, skipped = discover(self.vault, self.settings)  # a missing or unreadable root raises here
        if self.vault.kind != "beir" and self.identity is None:
            self.identity = presence.root_identity(self.vault.root)
        self.report.skipped.extend(skipped)
        self.report.files_seen = len(sources) + len(skipped)
        self.progress.begin_vault(self.vault.name, len(sources))
        self.progress.phase(f"{self.vault.name}: reading files")
        stored = store.stored_versions(self.conn, self.vault.id)
        self.links = links.VaultLinks(self.conn, self.vault.id, self.settings.ingest.link_sentence_max_chars)
        gone = presence.not_seen(stored, [s.path for s in sources] + [s.path for s in skipped],
                                 [s.path for s in skipped if s.reason == "unreadable"])
        marker = self.check_available(len(sources) + len(skipped), len(stored), len(gone))
        keep = {s.path for s in skipped if s.reason in KEEP_ON_SKIP}
        bulk.Deferral.finish_leftovers(self.conn, self.vault.id)  # what a killed run or load left deferred
        self.new_documents = sum(1 for s in sources if s.path not in stored)
        try:
            # While the writer thread owns the connection, this thread reads, parses and embeds.
            with BatchWriter(self.write) as self.writer:
                for source in sources:
                    if self.visit(source, stored):
                        keep.add(source.path)
                self.flush()
        finally:
            if self.deferral is not None:  # also after Ctrl-C: the screen says why it has not stopped yet
                self.progress.phase(f"{self.vault.name}: building indexes")
                vectors = bulk.row_estimate(self.conn, self.model.embedding_table) + self.report.chunks_written
                self.deferral.finish(vectors, {})
        self.progress.phase(f"{self.vault.name}: building indexes")
        store.restrict_documents(self.conn, self.vault.id, self.unparsed_edits, UNKNOWN_CONFIDENTIALITY)
        self.report.files_removed = store.delete_documents(self.conn, self.vault.id, self.deletable(stored, keep))
        changed = self.report.files_indexed + self.report.files_removed + len(self.unparsed_edits) > 0
        changed = self.links.finish(self.conn, vault_changed=changed)
        if self.vault.kind != "beir" and (changed or note_vectors.missing(self.conn, self.vault.id, self.model.id)):
            ing = self.settings.ingest
            note_vectors.refresh_note_vectors(self.conn, self.vault.id, self.model.id, self.embed_texts,
                                              max_headings=ing.note_outline_max_headings,
                                              max_sentences=ing.note_inbound_max_sentences)
        self.backfill_embeddings()
        # After the writes: a first run builds the vault's bm25 index once, from every chunk, instead
        # of growing it a batch at a time; later runs find it kept in step by the chunk triggers.
        r = self.settings.retrieval
        self.report.lexical_backend = lexical_backend.choose_for_vault(
            self.conn, self.vault.name, r.lexical_backend, r.bm25_k1, r.bm25_b)
        if marker is not None and marker != self.vault.settings.get(store.MARKER_SETTING):
            store.record_root_marker(self.conn, self.vault.id, marker)
        mark_indexed(self.conn, self.vault.id)

    def check_available(self, files_found: int, stored_documents: int, files_gone: int) -> bool | None:
        """Whether a folder vault's root holds its marker (None for a BEIR vault); raises, before
        anything is written or deleted, when the root looks unmounted (rag.ingest.presence)."""
        if self.vault.kind == "beir":
            return None
        return presence.check_available(
            self.vault.root, self.vault.name, files_found=files_found, stored_documents=stored_documents,
            files_gone=files_gone, max_gone_share=self.settings.ingest.max_gone_share,
            had_marker=self.vault.settings.get(store.MARKER_SETTING) is True, allow_empty=self.allow_empty)

    def deletable(self, stored: dict[str, str], keep: set[str]) -> list[str]:
        """Stored documents whose files are positively gone (see rag.ingest.presence); raises, deleting
        nothing, when the vault's folder changed under the run."""
        candidates = set(stored) - keep
        if self.identity is None or not candidates:
            return sorted(candidates)
        presence.check_root_unchanged(self.vault.root, self.identity)
        unreadable = [s.path for s in self.report.skipped if s.reason == "unreadable"]
        candidates = {p for p in candidates if not presence.under_any(p, unreadable)}
        vanished = sorted({(s.path, s.disk_path) for s in self.report.skipped
                           if s.reason == "vanished" and s.path in candidates})
        confirmed = presence.confirm_vanished(self.vault.root, vanished)
        return sorted((candidates - {path for path, _ in vanished}) | confirmed)

    def visit(self, source: Source, stored: dict[str, str]) -> bool:
        """Handle one candidate; True when its document stays (indexed or unchanged)."""
        data = source.read()
        if isinstance(data, SkipRecord):
            if data.reason == "vanished" and self.identity is not None:
                # a moved or unmounted root makes every file vanish: one error, not a warning per file
                presence.check_root_unchanged(self.vault.root, self.identity)
            self.report.skipped.append(data)
            self.progress.files_done(1)
            return data.reason in KEEP_ON_SKIP
        version = hashlib.sha256(data).hexdigest() + source.decided_by
        if stored.get(source.path) == version:
            self.report.files_unchanged += 1
            self.links.unchanged(source.path, data)
            self.progress.files_done(1)
            return True
        try:
            doc, warnings = source.prepare(data, version)
        except RagError:
            raise  # a settings problem, not this file's: it would fail every file
        except Exception as exc:  # one odd file must not stop a nightly run; it is reported, never silent
            self.report.skipped.append(SkipRecord(source.path, "parse_error", f"{type(exc).__name__}: {exc}"))
            if source.path in stored:  # fail closed: the edit may have tightened confidentiality
                self.unparsed_edits.append(source.path)
                self.report.warnings.append(f"{source.path}: old version kept as {UNKNOWN_CONFIDENTIALITY} "
                                            "until the new one can be parsed")
            self.progress.files_done(1)
            return True
        self.report.warnings.extend(warnings)
        self.report.files_failed_closed += doc.failed_closed
        doc.replaces = source.path in stored
        self.pending.append(doc)
        self.progress.files_done(1)  # read and parsed: its chunks count as embedded, batch by batch
        # Bounded by documents and by chunks (one document may have up to max_chunks_per_document).
        if (len(self.pending) >= self.settings.ingest.upsert_batch_documents
                or sum(len(d.chunks) for d in self.pending) >= self.settings.chunking.max_chunks_per_document):
            self.flush()
        return True

    def flush(self) -> None:
        if not self.pending:
            return
        assert self.writer is not None
        docs, self.pending = self.pending, []
        self.embed(docs)
        self.writer.put(docs)

    def write(self, docs: list[store.PreparedDocument]) -> None:
        """Runs on the writer thread: one transaction for the batch.

        The first write places the vault (`bulk.place_vault`) and decides for the whole run what is
        built once at the end (`bulk.Deferral`: the HNSW graph, the chunks' secondary indexes, the
        vault's BM25 bookkeeping), counting the documents still to come: a first load of many
        one-chunk documents is a bulk load though each batch is small (found by vectors only till then)."""
        if self.deferral is None:
            expected = max(sum(len(d.chunks) for d in docs), self.new_documents)
            bulk.place_vault(self.conn, self.vault.id, expected, self.settings.ingest)
            self.deferral = bulk.Deferral(self.conn, self.vault.id, self.model, self.settings.ingest)
            self.deferral.start(expected)
        written = store.write_documents(self.conn, self.vault.id, self.vault.text_search_config, docs, self.model,
                                        None if self.deferral.hnsw else self.bulk)
        self.report.files_indexed += len(docs)
        self.report.chunks_written += written

    def embed(self, docs: Sequence[store.PreparedDocument]) -> None:
        owners = [d.source_path for d in docs for _ in d.chunks]
        texts = [embedding_text(c.heading_path, c.content, c.metadata) for d in docs for c in d.chunks]
        if not self.model_loaded:  # the first batch would load it unannounced (a minute for the local model)
            self.progress.phase(f"loading the embedding model ({self.embedder.model_key})")
            self.embedder.load()
            self.model_loaded = True
        self.progress.phase(f"{self.vault.name}: embedding")
        vectors = self.embed_texts(texts, owners, counted=True)
        start = 0
        for doc in docs:
            doc.vectors = vectors[start : start + len(doc.chunks)]
            start += len(doc.chunks)

    def embed_texts(self, texts: Sequence[str], owners: Sequence[str], *, counted: bool = False) -> np.ndarray:
        """Embed in provider-sized slices so a failure names the file whose chunks were in flight;
        `counted`: the texts are chunks, shown as queued, then done slice by slice.

        Texts are sliced in order of length, not document order: a batch is padded to its longest
        text, so mixing short and long chunks costs a transformer about twice the work (measured
        with the local model on the Obsidian help vault). Rows come back in the caller's order.
        """
        size = max(1, self.embedder.batch_size)
        order = np.argsort(np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts)), kind="stable")
        vectors = np.zeros((len(texts), self.model.dims), dtype=np.float32)
        if counted:
            self.progress.chunks_queued(len(texts))
        for start in range(0, len(texts), size):
            rows = order[start : start + size]
            try:
                vectors[rows] = self.embedder.embed_documents([texts[i] for i in rows])
            except Exception as exc:  # any provider failure becomes one line naming the file
                files = sorted({owners[i] for i in rows})
                named = files[0] + (f" (and {len(files) - 1} more)" if len(files) > 1 else "")
                cause = str(exc) if isinstance(exc, RagError) else f"{type(exc).__name__}: {exc}"
                raise EmbeddingError(f"embedding failed for {named} in vault '{self.vault.name}': {cause}") from exc
            if counted:
                self.progress.chunks_done(len(rows))
        return vectors

    def backfill_embeddings(self) -> None:
        """Vectors for stored chunks the current model lacks (e.g. after switching models)."""
        after = 0
        page = self.embedder.batch_size * 8
        while chunks := store.chunks_missing_embeddings(self.conn, self.vault.id, self.model,
                                                         after_id=after, limit=page):
            texts = [embedding_text(c.heading_path, c.content, c.metadata) for c in chunks]
            owners = [f"chunk {c.id}" for c in chunks]
            vectors = self.embed_texts(texts, owners, counted=True)
            store.add_embeddings(self.conn, self.model, [c.id for c in chunks], list(vectors))
            self.report.chunks_reembedded += len(chunks)
            after = chunks[-1].id


# --- discovering sources --------------------------------------------------------------------------

def discover(vault: Vault, settings: Settings) -> tuple[list[Source], list[SkipRecord]]:
    if vault.kind == "beir":
        return _beir_sources(vault, settings)
    return _folder_sources(vault, settings)


def _folder_sources(vault: Vault, settings: Settings) -> tuple[list[Source], list[SkipRecord]]:
    ingest = settings.ingest
    walked = walk_vault(vault.root, denylist=vault.denylist, skip_hidden=ingest.skip_hidden_folders,
                        max_document_bytes=ingest.max_document_bytes, max_pdf_bytes=ingest.max_pdf_bytes)
    skipped = [_skip(s) for s in walked.skipped]
    return [_file_source(f, vault, settings) for f in walked.files], skipped


def _skip(s: SkippedFile) -> SkipRecord:
    return SkipRecord(s.source_path, s.reason, s.detail, s.disk_path)


def _file_source(f: VaultFile, vault: Vault, settings: Settings) -> Source:
    def read() -> bytes | SkipRecord:
        i = settings.ingest
        data = read_document(f, i.max_document_bytes, max_pdf_bytes=i.max_pdf_bytes, max_pdf_pages=i.max_pdf_pages)
        return _skip(data) if isinstance(data, SkippedFile) else data

    def prepare(data: bytes, version: str) -> tuple[store.PreparedDocument, list[str]]:
        return prepare_file(f, data, version, vault.name, settings)

    pdf_level = f" level={settings.ingest.pdf_confidentiality}" if f.kind == "pdf" else ""
    decided_by = f" text={PASSAGE_TEXT_VERSION} mask={MASK_RULES_VERSION}{pdf_level}"  # new rules: each note again
    return Source(f.source_path, read, prepare, decided_by)


def prepare_file(f: VaultFile, data: bytes, version: str, vault_name: str,
                 settings: Settings) -> tuple[store.PreparedDocument, list[str]]:
    """Parse frontmatter and chunk one file (markdown structure, or blank-line blocks for .txt; a canvas
    or PDF as the markdown rag.ingest.formats makes of it).

    The body is masked (rag/secrets.py) before it is chunked; the parsed fields are masked with the
    chunks (`store.attach_chunks`). Nothing of the file leaves this function unmasked."""
    text, notes = document_text(f.kind, f.source_path, data, settings.ingest)
    parsed = parse_document(text, f.source_path)
    folder = str(PurePosixPath(f.source_path).parent)
    doc_date, date_source = parsed.date, "frontmatter"
    stated = any(str(k).lower() in DATE_KEYS for k in parsed.frontmatter)  # a bad stated date stays unset
    if doc_date is None and not stated and f.mtime is not None:  # no date in the frontmatter: the file's mtime
        doc_date, date_source = datetime.fromtimestamp(f.mtime, UTC).date().isoformat(), "file_mtime"
    doc = store.PreparedDocument(
        source_path=f.source_path, folder="" if folder == "." else folder, title=parsed.title, url=parsed.url,
        doc_type=parsed.doc_type, persona=parsed.persona, tags=list(parsed.tags), project=parsed.project,
        confidentiality=settings.ingest.pdf_confidentiality if f.kind == "pdf" else parsed.confidentiality,
        doc_date=doc_date, document_version=version,
        size_bytes=len(data), metadata=dict(parsed.frontmatter), failed_closed=parsed.failed_closed,
        aliases=list(parsed.aliases), date_source=date_source,
    )
    chunker = chunk_plain_text if f.kind == "text" else chunk_markdown
    c = settings.chunking
    result = chunker(mask_text(parsed.body(text)), body_start_line=parsed.body_start_line,
                     body_start_byte=parsed.body_start_byte, soft_bytes=c.soft_bytes, hard_bytes=c.hard_bytes,
                     overlap_bytes=c.overlap_bytes, max_chunks=c.max_chunks_per_document)
    store.attach_chunks(doc, vault_name, result.chunks)
    if f.kind != "text":  # markdown, and the markdown a canvas or PDF becomes
        doc.links = links.links_of(mask_text(text), settings.ingest.link_sentence_max_chars)
    warnings = [*notes, *parsed.warnings]
    if result.truncated:
        warnings.append(f"{f.source_path}: {result.total} chunks, only the first {c.max_chunks_per_document} indexed")
    return doc, warnings


def _beir_sources(vault: Vault, settings: Settings) -> tuple[list[Source], list[SkipRecord]]:
    corpus = beir.read_corpus(vault.root, max_document_bytes=settings.ingest.max_document_bytes)
    skipped = [SkipRecord(p.where, p.reason, p.detail) for p in corpus.problems]
    return [_entry_source(corpus, ref, vault, settings) for ref in corpus.entries], skipped


def _entry_source(corpus: beir.BeirCorpus, ref: beir.BeirEntryRef, vault: Vault, settings: Settings) -> Source:
    def prepare(data: bytes, version: str) -> tuple[store.PreparedDocument, list[str]]:
        return beir.prepare_entry(corpus.entry(ref, data), vault.name, version, settings.chunking)

    return Source(mask_path(ref.doc_id), lambda: corpus.read(ref), prepare)
