"""BEIR corpora are checked once and read entry by entry: discovery keeps positions, not text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.ingest import beir


def write_corpus(root: Path, lines: list[bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / beir.CORPUS_FILE).write_bytes(b"".join(lines))
    return root


def line(doc_id: str, text: str, end: bytes = b"\n") -> bytes:
    return json.dumps({"_id": doc_id, "title": f"T {doc_id}", "text": text}).encode() + end


def test_entries_are_positions_and_each_reads_back_as_its_line(tmp_path: Path) -> None:
    lines = [line("a", "first"), b"\n", line("b", "second \u00e9", b"\r\n"), b"not json\n", line("a", "again"),
             line("c", "last, no newline", b"")]
    corpus = beir.read_corpus(write_corpus(tmp_path / "ds", lines), max_document_bytes=10_000)
    assert [r.doc_id for r in corpus.entries] == ["a", "b", "c"]
    assert all(isinstance(r, beir.BeirEntryRef) for r in corpus.entries)  # no entry text held
    assert [p.reason for p in corpus.problems] == ["invalid_entry", "duplicate_id"]
    for ref, expected in zip(corpus.entries, (lines[0], lines[2], lines[5]), strict=True):
        raw = corpus.read(ref)
        assert raw == expected.rstrip(b"\r\n")
        entry = corpus.entry(ref, raw)
        assert entry.doc_id == ref.doc_id and entry.raw == raw and entry.title == f"T {ref.doc_id}"


def test_a_corpus_rewritten_after_discovery_is_refused_entry_by_entry(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "ds", [line("a", "one"), line("b", "two")])
    corpus = beir.read_corpus(root, max_document_bytes=10_000)
    write_corpus(root, [line("b", "two"), line("a", "one")])  # same entries, other places
    with pytest.raises(ValueError, match="changed during the run"):
        corpus.entry(corpus.entries[0], corpus.read(corpus.entries[0]))
