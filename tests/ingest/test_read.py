from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.ingest.walk import SkippedFile, VaultFile, read_document, walk_vault

NOBODY = 65534
REPO = Path(__file__).resolve().parents[2]


def only_file(root: Path) -> VaultFile:
    [f] = walk_vault(root).files
    return f


def test_reads_valid_utf8(tmp_path: Path) -> None:
    content = "# Café\n\n漢字 and emoji 😀\r\n".encode()
    (tmp_path / "ok.md").write_bytes(content)
    assert read_document(only_file(tmp_path)) == content


def test_binary_file_named_md(tmp_path: Path) -> None:
    (tmp_path / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    result = read_document(only_file(tmp_path))
    assert isinstance(result, SkippedFile)
    assert (result.source_path, result.reason) == ("image.md", "binary")
    assert "image.md" in result.message and "binary" in result.message


def test_late_nul_is_binary_too(tmp_path: Path) -> None:
    """Postgres text cannot hold NUL, so a NUL past the 8 KB sniff window is rejected as well."""
    (tmp_path / "late.md").write_bytes(b"a" * 9000 + b"\x00tail")
    result = read_document(only_file(tmp_path))
    assert isinstance(result, SkippedFile) and result.reason == "binary"
    assert result.detail == "NUL byte at byte 9000"


def test_invalid_utf8(tmp_path: Path) -> None:
    (tmp_path / "latin1.md").write_bytes("naïve café\n".encode("latin-1"))
    result = read_document(only_file(tmp_path))
    assert isinstance(result, SkippedFile)
    assert result.reason == "not_utf8"
    assert result.message == "skipped latin1.md: not_utf8 (invalid UTF-8 at byte 2)"


def test_too_large_checked_before_reading(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("small\n")
    f = only_file(tmp_path)  # walked while small
    with (tmp_path / "n.md").open("r+b") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse 50 MB
    result = read_document(f, max_document_bytes=10 * 1024 * 1024)
    assert isinstance(result, SkippedFile) and result.reason == "too_large"
    assert "52428800 bytes" in result.message


def test_vanished_between_walk_and_read(tmp_path: Path) -> None:
    (tmp_path / "gone.md").write_text("soon gone\n")
    f = only_file(tmp_path)
    (tmp_path / "gone.md").unlink()
    result = read_document(f)
    assert isinstance(result, SkippedFile)
    assert (result.source_path, result.reason) == ("gone.md", "vanished")


def test_path_replaced_by_fifo_does_not_block(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("x\n")
    f = only_file(tmp_path)
    (tmp_path / "n.md").unlink()
    os.mkfifo(tmp_path / "n.md")
    result = read_document(f)
    assert isinstance(result, SkippedFile) and result.reason == "unreadable"


@pytest.fixture
def world_traversable_dir() -> Iterator[Path]:
    """pytest's tmp dirs are 0700 root-owned; the unprivileged reader must reach the file itself."""
    path = Path(tempfile.mkdtemp(prefix="ragpg-perm-"))
    path.chmod(0o755)
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=True)


def read_as_unprivileged(vault: Path, rels: list[str]) -> dict[str, object]:
    """read_document for each vault/rel (and a walk), as `nobody` when running as root, which
    ignores mode 000."""
    code = f"""
import json, os
from pathlib import Path
from rag.ingest.walk import SkippedFile, VaultFile, read_document, walk_vault
if os.geteuid() == 0:
    os.setgid({NOBODY}); os.setuid({NOBODY})
out = {{}}
for rel in {rels!r}:
    r = read_document(VaultFile(rel, Path({str(vault)!r}) / rel, "markdown", 0))
    out[rel] = r.message if isinstance(r, SkippedFile) else r.decode()
out["walk_skipped"] = {{s.source_path: s.reason for s in walk_vault(Path({str(vault)!r})).skipped}}
print(json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout)


def test_unreadable_file_and_folder(world_traversable_dir: Path) -> None:
    vault = world_traversable_dir
    (vault / "readable.md").write_text("fine\n")
    (vault / "readable.md").chmod(0o644)
    (vault / "locked.md").write_text("private\n")
    (vault / "locked.md").chmod(0o000)
    (vault / "locked_dir").mkdir()
    (vault / "locked_dir" / "x.md").write_text("x\n")
    (vault / "locked_dir").chmod(0o000)

    result = read_as_unprivileged(vault, ["readable.md", "locked.md"])
    assert result["readable.md"] == "fine\n"  # the folder is reachable: the failure below is the file's mode
    assert result["locked.md"] == "skipped locked.md: unreadable (Permission denied)"
    assert result["walk_skipped"] == {"locked_dir": "unreadable"}
