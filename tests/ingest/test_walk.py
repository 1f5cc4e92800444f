from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag.errors import InputError, NotFoundError
from rag.ingest.walk import SkippedFile, VaultFile, is_denied, walk_vault
from tests.support.files import write_files


def write(root: Path, rel: str, content: str | bytes = "text\n") -> Path:
    return write_files(root, {rel: content}) / rel


def rels(files: list[VaultFile]) -> list[str]:
    return [f.source_path for f in files]


def reasons(skipped: list[SkippedFile]) -> dict[str, str]:
    return {s.source_path: s.reason for s in skipped}


def test_candidates_kinds_and_sorted_order(tmp_path: Path) -> None:
    for rel in ["b.md", "a/z.txt", "a/y.MARKDOWN", "c.pdf", "d.canvas", "image.png", "a/notes.md.bak", ".hidden.md"]:
        write(tmp_path, rel)
    result = walk_vault(tmp_path)
    assert rels(result.files) == [".hidden.md", "a/y.MARKDOWN", "a/z.txt", "b.md", "c.pdf", "d.canvas"]
    assert [f.kind for f in result.files] == ["markdown", "markdown", "text", "markdown", "pdf", "canvas"]
    assert result.skipped == []  # other extensions are not candidates, so not reported
    first = result.files[1]
    assert first.abs_path == tmp_path / "a" / "y.MARKDOWN" and first.abs_path.is_absolute()
    assert first.size_bytes == len("text\n")


def test_hidden_and_configured_folders_are_not_descended(tmp_path: Path) -> None:
    for rel in [".obsidian/workspace.md", ".git/x.md", ".trash/old.md", ".cache/c.md", "attachments/a.md",
                "keep/k.md"]:
        write(tmp_path, rel)
    result = walk_vault(tmp_path, skip_hidden=("attachments",))
    assert rels(result.files) == ["keep/k.md"]
    assert result.skipped == []


@pytest.mark.parametrize(
    ("pattern", "denied", "allowed"),
    [
        ("private/**", ["private/a.md", "private/deep/er/b.md"], ["public/private.md", "privateer/c.md"]),
        ("private", ["private/a.md", "private/deep/b.md"], ["x/private.md"]),
        ("private/", ["private/a.md"], ["privately.md"]),
        ("*.secret.md", ["a.secret.md", "deep/down/b.secret.md"], ["secret.md", "a.secret.md.txt"]),
        ("drafts/*", ["drafts/x.md", "drafts/sub/y.md"], ["other/drafts.md", "x/drafts/z.md"]),
        ("**/tmp/*.md", ["tmp/a.md", "x/y/tmp/b.md"], ["tmp.md", "x/tmp.md"]),
        ("notes/2024-0?.md", ["notes/2024-01.md"], ["notes/2024-10.md"]),
        ("notes/[ab]*.md", ["notes/alpha.md", "notes/beta.md"], ["notes/gamma.md"]),
        ("notes/[!ab]*.md", ["notes/gamma.md"], ["notes/alpha.md"]),
    ],
)
def test_denylist_globs(pattern: str, denied: list[str], allowed: list[str]) -> None:
    for rel in denied:
        assert is_denied(rel, [pattern]), (pattern, rel)
    for rel in allowed:
        assert not is_denied(rel, [pattern]), (pattern, rel)


def test_denylisted_candidates_are_reported(tmp_path: Path) -> None:
    for rel in ["private/a.md", "private/sub/b.txt", "private/pic.png", "x.secret.md", "ok.md"]:
        write(tmp_path, rel)
    result = walk_vault(tmp_path, denylist=["private/**", "*.secret.md", "   "])
    assert rels(result.files) == ["ok.md"]
    assert reasons(result.skipped) == {
        "private/a.md": "denylisted", "private/sub/b.txt": "denylisted", "x.secret.md": "denylisted",
    }


def test_too_large_from_stat_without_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    with big.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: no 50 MB written or read
    write(tmp_path, "small.md", "x" * 100)
    result = walk_vault(tmp_path, max_document_bytes=1024)
    assert rels(result.files) == ["small.md"]
    [skipped] = result.skipped
    assert (skipped.source_path, skipped.reason) == ("big.md", "too_large")
    assert "big.md" in skipped.message and "52428800" in skipped.message


def test_symlink_to_file_and_folder_inside_vault_are_followed(tmp_path: Path) -> None:
    write(tmp_path, "real/note.md")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "link.md").symlink_to(tmp_path / "real" / "note.md")
    result = walk_vault(tmp_path)
    assert rels(result.files) == ["alias/note.md", "link.md", "real/note.md"]
    assert result.skipped == []


def test_symlink_cannot_bypass_the_denylist(tmp_path: Path) -> None:
    write(tmp_path, "private/secret.md")
    write(tmp_path, "private/sub/deeper.md")
    (tmp_path / "innocent.md").symlink_to(tmp_path / "private" / "secret.md")
    (tmp_path / "public").symlink_to(tmp_path / "private", target_is_directory=True)
    result = walk_vault(tmp_path, denylist=["private"])
    assert result.files == []
    assert reasons(result.skipped) == {
        "innocent.md": "denylisted", "private/secret.md": "denylisted", "private/sub/deeper.md": "denylisted",
        "public/secret.md": "denylisted", "public/sub/deeper.md": "denylisted",
    }


def test_symlink_outside_vault_is_skipped(tmp_path: Path) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    write(outside, "secret.md", "outside the vault\n")
    write(vault, "in.md")
    (vault / "escape.md").symlink_to(outside / "secret.md")
    (vault / "escape_dir").symlink_to(outside, target_is_directory=True)
    (vault / "escape.png").symlink_to(outside / "secret.md")  # not a candidate: silent
    result = walk_vault(vault)
    assert rels(result.files) == ["in.md"]
    assert reasons(result.skipped) == {"escape.md": "symlink_outside_vault", "escape_dir": "symlink_outside_vault"}


def test_symlink_loops_terminate(tmp_path: Path) -> None:
    write(tmp_path, "a/note.md")
    (tmp_path / "a" / "back").symlink_to(tmp_path, target_is_directory=True)  # a/back -> vault root
    (tmp_path / "a" / "self").symlink_to(tmp_path / "a", target_is_directory=True)
    (tmp_path / "ping.md").symlink_to(tmp_path / "pong.md")
    (tmp_path / "pong.md").symlink_to(tmp_path / "ping.md")
    result = walk_vault(tmp_path)
    assert rels(result.files) == ["a/note.md"]
    assert reasons(result.skipped) == {
        "a/back": "symlink_loop", "a/self": "symlink_loop", "ping.md": "symlink_loop", "pong.md": "symlink_loop",
    }


def test_broken_symlink_reported_as_vanished(tmp_path: Path) -> None:
    (tmp_path / "gone.md").symlink_to(tmp_path / "missing.md")
    assert reasons(walk_vault(tmp_path).skipped) == {"gone.md": "vanished"}


def test_symlinked_vault_root(tmp_path: Path) -> None:
    write(tmp_path, "real/n.md")
    (tmp_path / "root_link").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real" / "inner.md").symlink_to(tmp_path / "real" / "n.md")
    assert rels(walk_vault(tmp_path / "root_link").files) == ["inner.md", "n.md"]


def test_missing_or_non_folder_root(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="not found"):
        walk_vault(tmp_path / "nope")
    write(tmp_path, "file.md")
    with pytest.raises(InputError, match="not a folder"):
        walk_vault(tmp_path / "file.md")


def test_non_regular_files_are_ignored(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")  # reading it would block; it is not a regular file
    write(tmp_path, "n.md")
    result = walk_vault(tmp_path)
    assert rels(result.files) == ["n.md"] and result.skipped == []


@pytest.mark.security
def test_a_folder_nested_500_deep_is_walked_without_recursion(tmp_path: Path) -> None:
    deep = "/".join(["d"] * 500)
    write(tmp_path, f"{deep}/bottom.md")
    write(tmp_path, "top.md")
    result = walk_vault(tmp_path)
    assert rels(result.files) == [f"{deep}/bottom.md", "top.md"] and result.skipped == []


def test_a_pdf_has_its_own_size_limit(tmp_path: Path) -> None:
    (tmp_path / "big.pdf").write_bytes(b"%PDF" + b"x" * 3000)
    (tmp_path / "big.md").write_text("x" * 3000)
    result = walk_vault(tmp_path, max_document_bytes=10_000, max_pdf_bytes=1000)
    assert rels(result.files) == ["big.md"]
    assert [(s.source_path, s.reason, s.detail) for s in result.skipped] == [
        ("big.pdf", "too_large", "3004 bytes > limit 1000")]
