"""BEIR datasets as vaults: one document per corpus entry, incremental by entry bytes."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from rag.config import Settings
from rag.store.vaults import NewVault, add_vault
from tests.ingest_db.helpers import index


def corpus(root: Path, entries: list[dict[str, object] | str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = [e if isinstance(e, str) else json.dumps(e) for e in entries]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


ENTRIES: list[dict[str, object] | str] = [
    {"_id": "d1", "title": "Statins", "text": "Statins lower cholesterol.", "metadata": {"year": 2001}},
    {"_id": "d2", "title": "", "text": "Untitled abstract about sleep."},
    {"_id": 3, "title": "Numeric id", "text": "Ids may be numbers in some dumps."},
    "{not json",
    {"title": "no id", "text": "dropped"},
    {"_id": "d1", "title": "Duplicate", "text": "second d1"},
]


def test_beir_corpus_loads_as_documents(aconn: psycopg.Connection, settings: Settings, tmp_path: Path) -> None:
    root = corpus(tmp_path / "ds", ENTRIES)
    add_vault(aconn, NewVault(name="ds", path=root, kind="beir"))
    report = index(settings).vaults[0]
    assert report.error is None and report.files_indexed == 3
    assert {(s.path, s.reason) for s in report.skipped} == {
        ("corpus.jsonl:4", "invalid_entry"), ("corpus.jsonl:5", "invalid_entry"), ("d1", "duplicate_id")}

    docs = {r["source_path"]: r for r in aconn.execute("select * from documents")}
    assert sorted(docs) == ["3", "d1", "d2"]
    assert docs["d1"]["title"] == "Statins" and docs["d1"]["metadata"] == {"year": 2001, "beir_id": "d1"}
    assert docs["d2"]["title"] == "d2"
    chunk = aconn.execute("select c.content, c.metadata from chunks c join documents d on d.id = c.document_id "
                          "where d.source_path = 'd1'").fetchone()
    assert chunk["content"] == "Statins\n\nStatins lower cholesterol."
    assert chunk["metadata"]["beir_id"] == "d1" and chunk["metadata"]["vault"] == "ds"

    noop = index(settings).vaults[0]
    assert (noop.files_unchanged, noop.files_indexed) == (3, 0)

    changed = [{**ENTRIES[0], "text": "Statins lower LDL."}, ENTRIES[2]]  # d1 changed, d2 gone
    corpus(root, changed)
    run = index(settings).vaults[0]
    assert (run.files_indexed, run.files_unchanged, run.files_removed, run.skipped) == (1, 1, 1, [])
    assert "LDL" in aconn.execute("select content from chunks c join documents d on d.id = c.document_id "
                                  "where d.source_path = 'd1'").fetchone()["content"]


def test_cli_add_beir_with_a_real_dataset_slice(cli, shared_data: Path, tmp_path: Path) -> None:
    lines = (shared_data / "beir" / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:150]
    root = tmp_path / "scifact"
    root.mkdir()
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = cli("vault", "add-beir", "scifact", str(root), "--json")
    assert code == 0 and json.loads(out)["kind"] == "beir"
    code, out, err = cli("index", "scifact", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["files_indexed"] == 150 and summary["files_skipped"] == 0
    assert summary["chunks_written"] >= 150

    code, out, err = cli("vault", "add-beir", "nope", str(tmp_path))
    assert code == 2 and err.strip() == f"error: not a BEIR dataset folder (no corpus.jsonl): {tmp_path}"
