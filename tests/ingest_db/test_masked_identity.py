"""A document whose file name holds a secret is stored under its masked name, and everything that
finds a document by name still works: incremental runs, edits, deletions, a file vanishing between
walk and read, citations by line after a masked key block."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from rag.config import Settings
from rag.ingest import pipeline
from rag.ingest.walk import WalkResult
from tests.ingest_db.helpers import add, index
from tests.support.files import write_files

TOKEN = "ghp_" + "Ab1" * 12
FOLDER = f"keys {TOKEN}"
NAME = f"{FOLDER}/deploy AKIAIOSFODNN7EXAMPLE.md"
PEM = ("-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7\n" * 6
       + "-----END RSA PRIVATE KEY-----\n")
BODY = f"# Deploy\n\nThe deploy steps.\n\n{PEM}\n## After the key\n\nRotate the bucket credentials monthly.\n"


def stored(conn: psycopg.Connection) -> list[dict]:
    return [dict(r) for r in conn.execute(
        "select d.source_path, d.folder, d.title, c.ordinal, c.heading_path, c.content, c.start_line, c.end_line "
        "from documents d join chunks c on c.document_id = d.id order by c.ordinal").fetchall()]


@pytest.mark.security
def test_masked_name_keeps_the_document_identity_across_runs(aconn: psycopg.Connection, settings: Settings,
                                                             tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {NAME: BODY, "plain.md": "plain note\n"})
    add(aconn, "v", root)
    first = index(settings).vaults[0]
    assert first.error is None and first.files_indexed == 2
    rows = stored(aconn)
    path = rows[0]["source_path"]
    assert TOKEN not in path and "AKIAIOSFODNN7EXAMPLE" not in path and "[REDACTED:github_token~" in path
    assert rows[0]["folder"] == path.rsplit("/", 1)[0] and TOKEN not in str(rows)

    again = index(settings).vaults[0]  # unchanged: found under its masked name, nothing redone
    assert (again.files_unchanged, again.files_indexed, again.files_removed) == (2, 0, 0)

    (root / NAME).write_text(BODY + "\nOne more line.\n")
    edited = index(settings).vaults[0]
    assert (edited.files_indexed, edited.files_removed) == (1, 0)
    assert aconn.execute("select count(*) as n from documents").fetchone()["n"] == 2

    (root / NAME).unlink()
    gone = index(settings).vaults[0]
    assert gone.error is None and gone.files_removed == 1
    assert [r["source_path"] for r in aconn.execute("select source_path from documents")] == ["plain.md"]


def test_a_masked_file_vanishing_after_the_walk_is_confirmed_gone_on_disk(
        aconn: psycopg.Connection, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_files(tmp_path / "v", {NAME: BODY, "plain.md": "plain note\n"})
    add(aconn, "v", root)
    index(settings)
    (root / NAME).write_text(BODY + "edited\n")
    real = pipeline.walk_vault

    def walk(*args, **kwargs) -> WalkResult:
        result = real(*args, **kwargs)
        (root / NAME).unlink()  # gone between the walk and the read
        return result

    monkeypatch.setattr(pipeline, "walk_vault", walk)
    report = index(settings).vaults[0]
    assert report.error is None and [s.reason for s in report.skipped] == ["vanished"]
    assert TOKEN not in report.skipped[0].path and report.files_removed == 1


def test_citations_by_line_hold_after_a_masked_key_block(aconn: psycopg.Connection, settings: Settings,
                                                         tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {"n.md": BODY})
    add(aconn, "v", root)
    index(settings)
    file_lines = BODY.splitlines()
    rows = stored(aconn)
    assert "MIIEow" not in str(rows)
    after = next(r for r in rows if "Rotate the bucket" in r["content"])
    assert file_lines[after["end_line"] - 1] == "Rotate the bucket credentials monthly."
    for r in rows:  # every chunk's first and last lines are the file's, masking aside
        first, last = r["content"].strip("\n").splitlines()[0], r["content"].strip("\n").splitlines()[-1]
        assert first == file_lines[r["start_line"] - 1] or "REDACTED" in first
        assert last == file_lines[r["end_line"] - 1] or "REDACTED" in last
