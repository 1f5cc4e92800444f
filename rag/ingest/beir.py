"""BEIR-format datasets as vaults: each `corpus.jsonl` entry becomes one document.

An entry `{"_id", "title", "text", "metadata"?}` is stored with `source_path = _id` (secrets masked), the corpus
title, and content `title + "\\n\\n" + text` chunked as plain text with the vault chunking limits.
Its `document_version` is the sha256 of the entry's own line, so re-loading an unchanged corpus
writes nothing. Line and byte positions of chunks refer to that content, not to corpus.jsonl.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.config import ChunkingSettings
from rag.errors import InputError, NotFoundError
from rag.ingest.chunk import chunk_plain_text
from rag.ingest.store import PreparedDocument, attach_chunks
from rag.secrets import mask_path, mask_text

CORPUS_FILE = "corpus.jsonl"


@dataclass(frozen=True)
class BeirEntry:
    doc_id: str
    title: str
    text: str
    raw: bytes  # the entry's line (without its newline): what document_version hashes
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def content(self) -> str:
        return f"{self.title}\n\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class CorpusProblem:
    """An entry that cannot be loaded; `where` names it (its _id, or the line number)."""

    where: str
    reason: str  # invalid_entry | duplicate_id | too_large
    detail: str


@dataclass(frozen=True)
class BeirEntryRef:
    """Where a loadable entry's line is in corpus.jsonl. The corpus is checked once up front and each
    entry read again when its turn comes, so an index run never holds the whole corpus (a 200k-entry
    corpus kept in memory took the client to 1.06 GB)."""

    doc_id: str
    offset: int
    length: int
    line_no: int


@dataclass(frozen=True)
class BeirCorpus:
    path: Path
    entries: list[BeirEntryRef]
    problems: list[CorpusProblem]

    def read(self, ref: BeirEntryRef) -> bytes:
        """The entry's line (without its newline)."""
        with self.path.open("rb") as fh:
            fh.seek(ref.offset)
            return fh.read(ref.length).rstrip(b"\r\n")

    def entry(self, ref: BeirEntryRef, raw: bytes) -> BeirEntry:
        """The entry parsed from `raw` (what `read` returned); ValueError when the file changed since."""
        entry = _parse_entry(raw, ref.line_no, [])
        if entry is None or entry.doc_id != ref.doc_id:
            raise ValueError(f"{CORPUS_FILE} changed during the run (line {ref.line_no} no longer holds this entry)")
        return entry


def read_corpus(root: Path, *, max_document_bytes: int) -> BeirCorpus:
    """Every loadable entry of `root/corpus.jsonl` (first of duplicate ids wins) and the rest, named."""
    path = root / CORPUS_FILE
    entries: dict[str, BeirEntryRef] = {}
    problems: list[CorpusProblem] = []
    for line_no, offset, line in _lines(path):
        raw = line.rstrip(b"\r\n")
        if not raw.strip():
            continue
        if len(raw) > max_document_bytes:
            problems.append(CorpusProblem(f"{CORPUS_FILE}:{line_no}", "too_large",
                                          f"{len(raw)} bytes > limit {max_document_bytes}"))
            continue
        entry = _parse_entry(raw, line_no, problems)
        if entry is None:
            continue
        if entry.doc_id in entries:
            problems.append(CorpusProblem(entry.doc_id, "duplicate_id", f"line {line_no} repeats an earlier _id"))
            continue
        entries[entry.doc_id] = BeirEntryRef(entry.doc_id, offset, len(line), line_no)
    return BeirCorpus(path, list(entries.values()), problems)


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line with its newline)."""
    try:
        with path.open("rb") as fh:
            offset = 0
            for line_no, line in enumerate(fh, start=1):
                yield line_no, offset, line
                offset += len(line)
    except FileNotFoundError:
        raise NotFoundError(f"BEIR corpus not found: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read BEIR corpus {path}: {exc.strerror}") from None


def _parse_entry(raw: bytes, line_no: int, problems: list[CorpusProblem]) -> BeirEntry | None:
    where = f"{CORPUS_FILE}:{line_no}"
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(CorpusProblem(where, "invalid_entry", f"not a JSON object: {exc}"))
        return None
    if not isinstance(obj, dict):
        problems.append(CorpusProblem(where, "invalid_entry", "not a JSON object"))
        return None
    doc_id = obj.get("_id")
    if not isinstance(doc_id, str | int) or not str(doc_id).strip():
        problems.append(CorpusProblem(where, "invalid_entry", "missing _id"))
        return None
    title, text = obj.get("title") or "", obj.get("text") or ""
    if not isinstance(title, str) or not isinstance(text, str):
        problems.append(CorpusProblem(str(doc_id), "invalid_entry", "title and text must be strings"))
        return None
    if "\x00" in title or "\x00" in text:
        problems.append(CorpusProblem(str(doc_id), "invalid_entry", "NUL character in title or text"))
        return None
    meta = obj.get("metadata")
    return BeirEntry(str(doc_id).strip(), title.strip(), text, raw, meta if isinstance(meta, dict) else {})


def prepare_entry(entry: BeirEntry, vault_name: str, version: str,
                  chunking: ChunkingSettings) -> tuple[PreparedDocument, list[str]]:
    """The entry as a document with its chunks (vectors still to come), plus warnings."""
    doc_id = mask_path(entry.doc_id)  # the identity the run compares, as for a file's path
    metadata = {**entry.metadata, "beir_id": doc_id}
    doc = PreparedDocument(
        source_path=doc_id, folder="", title=entry.title or doc_id, url=None, doc_type=None,
        persona=None, tags=[], project=None, confidentiality="public", doc_date=None,
        document_version=version, size_bytes=len(entry.raw), metadata=metadata,
    )
    result = chunk_plain_text(mask_text(entry.content), soft_bytes=chunking.soft_bytes, hard_bytes=chunking.hard_bytes,
                              overlap_bytes=chunking.overlap_bytes, max_chunks=chunking.max_chunks_per_document)
    attach_chunks(doc, vault_name, result.chunks, {"beir_id": doc_id})
    warnings = []
    if result.truncated:
        warnings.append(f"{doc_id}: {result.total} chunks, only the first "
                        f"{chunking.max_chunks_per_document} indexed")
    return doc, warnings
