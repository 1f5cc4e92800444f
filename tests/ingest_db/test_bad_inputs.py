"""Bad inputs: each one skipped (or warned about) with a clear one-line reason, nothing else lost."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from rag.config import Settings
from rag.embed import get_embedder
from rag.ingest import pipeline
from rag.ingest.walk import WalkResult, walk_vault
from tests.ingest_db.helpers import add, file_permissions_enforced, index
from tests.support.files import write_files

GOOD = {"good.md": "# Good\n\nkept\n", "sub/fine.md": "fine\n"}


def bad_vault(tmp_path: Path) -> Path:
    root = write_files(tmp_path / "bad", {
        **GOOD,
        "broken.md": "---\ntitle: [unclosed\n---\n# Body\n\nstill indexed\n",
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR",
        "late-nul.md": b"a" * 9000 + b"\x00",
        "latin1.md": "caf\u00e9\n".encode("latin-1"),
    })
    with open(root / "huge.md", "wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: 50 MB on paper, nothing on disk
    (tmp_path / "outside.md").write_text("secret outside the vault\n")
    os.symlink(tmp_path / "outside.md", root / "escape.md")
    os.symlink("loop.md", root / "loop.md")
    os.symlink("..", root / "sub" / "up")
    return root


EXPECTED_SKIPS = {
    ("binary.md", "binary"), ("escape.md", "symlink_outside_vault"), ("huge.md", "too_large"),
    ("late-nul.md", "binary"), ("latin1.md", "not_utf8"), ("loop.md", "symlink_loop"),
    ("sub/up", "symlink_loop"),
}


def test_every_bad_file_is_named_and_the_rest_indexed(aconn: psycopg.Connection, settings: Settings,
                                                      tmp_path: Path) -> None:
    add(aconn, "bad", bad_vault(tmp_path))
    report = index(settings).vaults[0]
    assert report.error is None
    assert {(s.path, s.reason) for s in report.skipped} == EXPECTED_SKIPS
    assert report.files_seen == 3 + len(EXPECTED_SKIPS) and report.files_indexed == 3
    assert len(report.warnings) == 1 and report.warnings[0].startswith("broken frontmatter in broken.md: ")
    paths = [r["source_path"] for r in aconn.execute("select source_path from documents order by 1")]
    assert paths == ["broken.md", "good.md", "sub/fine.md"]
    body = aconn.execute("select content from chunks c join documents d on d.id = c.document_id "
                         "where d.source_path = 'broken.md'").fetchone()["content"]
    assert "still indexed" in body


def test_cli_reports_each_skip(cli, tmp_path: Path) -> None:
    root = bad_vault(tmp_path)
    assert cli("vault", "add", "bad", str(root))[0] == 0
    code, out, err = cli("index", "bad", "--json")
    assert code == 0  # skips are not failures
    summary = json.loads(out)
    assert summary["files_skipped"] == len(EXPECTED_SKIPS) and summary["files_indexed"] == 3
    assert {(s["path"], s["reason"]) for s in summary["vaults"][0]["skipped"]} == EXPECTED_SKIPS
    lines = err.splitlines()
    assert "warning: bad: skipped huge.md: too_large (52428800 bytes > limit 10485760)" in lines
    assert "warning: bad: skipped late-nul.md: binary (NUL byte at byte 9000)" in lines
    assert any(line.startswith("warning: bad: broken frontmatter in broken.md: ") for line in lines)
    assert len([x for x in lines if x.startswith("warning: bad: skipped ")]) == len(EXPECTED_SKIPS)

    code, out, err = cli("reindex")  # human summary; a no-op still names the skips
    assert code == 0 and "bad: 10 files seen, 0 indexed, 3 unchanged, 7 skipped, 0 removed" in out
    assert "warning: bad: skipped binary.md: binary" in err


def test_file_turning_bad_is_removed_not_kept_stale(aconn: psycopg.Connection, settings: Settings,
                                                   tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", GOOD)
    add(aconn, "v", root)
    index(settings)
    (root / "good.md").write_bytes(b"\x00binary now")
    report = index(settings).vaults[0]
    assert [(s.path, s.reason) for s in report.skipped] == [("good.md", "binary")] and report.files_removed == 1


def test_file_deleted_between_walk_and_read(aconn: psycopg.Connection, settings: Settings, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_files(tmp_path / "v", {**GOOD, "gone.md": "here during the walk\n"})
    add(aconn, "v", root)

    def walk_then_delete(*args: object, **kwargs: object) -> WalkResult:
        result = walk_vault(*args, **kwargs)  # type: ignore[arg-type]
        (root / "gone.md").unlink()
        return result

    monkeypatch.setattr(pipeline, "walk_vault", walk_then_delete)
    report = index(settings).vaults[0]
    assert report.error is None
    assert [(s.path, s.reason) for s in report.skipped] == [("gone.md", "vanished")]
    assert report.skipped[0].message == "skipped gone.md: vanished (deleted before it could be read)"
    assert report.files_indexed == 2


def test_unreadable_file_is_reported_and_keeps_its_old_version(aconn: psycopg.Connection, settings: Settings,
                                                               tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {**GOOD, "locked.md": "# Locked\n\nold text\n"})
    vault = add(aconn, "v", root)
    index(settings)
    (root / "locked.md").write_text("# Locked\n\nnew text nobody can read\n")
    (root / "locked.md").chmod(0)
    embedder = get_embedder(settings.embedding.model, settings.embedding)
    model = pipeline.ensure_model(aconn, embedder)
    try:
        # A real EACCES from the kernel: as root, only with CAP_DAC_OVERRIDE dropped for this thread.
        with file_permissions_enforced():
            report = pipeline.index_vault(aconn, vault, settings, embedder, model, pipeline.NoProgress())
    finally:
        (root / "locked.md").chmod(0o644)
    assert report.error is None
    assert [s.message for s in report.skipped] == ["skipped locked.md: unreadable (Permission denied)"]
    assert (report.files_unchanged, report.files_removed) == (2, 0)
    content = aconn.execute("select content from chunks c join documents d on d.id = c.document_id "
                            "where d.source_path = 'locked.md'").fetchone()["content"]
    assert "old text" in content  # nothing lost: the last readable version stays searchable
    assert index(settings).vaults[0].files_indexed == 1  # readable again: picked up


def test_vault_folder_gone_at_index_time_loses_nothing(aconn: psycopg.Connection, settings: Settings, cli,
                                                      tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", GOOD)
    add(aconn, "v", root)
    add(aconn, "other", write_files(tmp_path / "o", {"x.md": "x\n"}))
    index(settings)
    root.rename(tmp_path / "unmounted")
    code, out, err = cli("reindex")
    assert code == 4 and f"error: vault 'v': vault folder not found: {root}" in err.splitlines()
    assert "other: 1 files seen, 0 indexed, 1 unchanged" in out  # the other vault still ran
    assert aconn.execute("select count(*) as n from documents d join vaults v on v.id = d.vault_id "
                         "where v.name = 'v'").fetchone()["n"] == 2


def test_parser_crash_on_one_file_is_reported_and_keeps_its_old_version(
        aconn: psycopg.Connection, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_files(tmp_path / "v", {**GOOD, "odd.md": "# Odd\n\nv1\n"})
    add(aconn, "v", root)
    index(settings)
    (root / "odd.md").write_text("# Odd\n\nv2 trips the parser\n")
    real = pipeline.parse_document

    def fragile(text: str, source_path: str):  # type: ignore[no-untyped-def]
        if source_path == "odd.md":
            raise RecursionError("maximum recursion depth exceeded")
        return real(text, source_path)

    monkeypatch.setattr(pipeline, "parse_document", fragile)
    report = index(settings).vaults[0]
    assert report.error is None and report.files_removed == 0
    assert [s.message for s in report.skipped] == [
        "skipped odd.md: parse_error (RecursionError: maximum recursion depth exceeded)"]
    assert aconn.execute("select count(*) as n from documents where source_path = 'odd.md'").fetchone()["n"] == 1
