"""Find the indexable files of a vault, and read one safely.

`walk_vault` decides *which* files are candidates from directory entries and `stat` alone
(extension, hidden folders, denylist, size, symlink containment); `read_document` opens a
candidate and rejects what cannot be indexed (vanished, unreadable, too large, binary, not UTF-8; a
PDF without the `pdf` extra, broken, encrypted or over its page limit, rag.ingest.pdf).
Nothing here logs: every rejection is returned as a `SkippedFile` that names the file.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rag.config import IngestSettings
from rag.errors import InputError, NotFoundError
from rag.ingest.globs import compile_glob, glob_match
from rag.ingest.names import stored_name
from rag.ingest.pdf import NEEDS_EXTRA, available, pdf_problem
from rag.ingest.presence import NOTHING_DELETED, VaultChangedError
from rag.secrets import mask_path

_INGEST = IngestSettings()

Kind = Literal["markdown", "text", "canvas", "pdf"]
SkipReason = Literal[
    "denylisted", "too_large", "symlink_outside_vault", "symlink_loop",
    "unreadable", "not_utf8", "binary", "vanished", "needs_extra", "encrypted", "too_many_pages", "broken",
]

_KINDS: dict[str, Kind] = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".canvas": "canvas",
                           ".pdf": "pdf"}
_BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class VaultFile:
    source_path: str  # the document's identity: `disk_path` with secrets masked (rag.secrets.mask_path)
    abs_path: Path
    kind: Kind
    size_bytes: int
    root_real: str = ""  # the vault root's real path: what the opened file must lie inside
    via_link: bool = False  # reached through a symlink the walk checked (the open must follow it)
    mtime: float | None = None  # modification time at the walk (seconds since the epoch): the fallback date
    disk_path: str = ""  # posix, relative to the vault root, through symlink names; `names.stored_name` form


@dataclass(frozen=True)
class SkippedFile:
    source_path: str  # masked, as VaultFile.source_path
    reason: SkipReason
    detail: str = ""
    disk_path: str = ""  # as VaultFile.disk_path: what deciding that a file is gone looks up

    @property
    def message(self) -> str:
        """One line for the log, naming the file."""
        extra = f" ({self.detail})" if self.detail else ""
        return f"skipped {self.source_path}: {self.reason}{extra}"


@dataclass(frozen=True)
class WalkResult:
    files: list[VaultFile]
    skipped: list[SkippedFile]


def file_kind(name: str) -> Kind | None:
    """The kind of an indexable file name, or None when it is not a candidate."""
    return _KINDS.get(os.path.splitext(name)[1].lower())


def walk_vault(
    root: Path,
    *,
    denylist: Sequence[str] = (),
    skip_hidden: Sequence[str] = _INGEST.skip_hidden_folders,
    max_document_bytes: int = _INGEST.max_document_bytes,
    max_pdf_bytes: int = _INGEST.max_pdf_bytes,
) -> WalkResult:
    """All candidate files below `root`, sorted by source_path, plus the candidates skipped and why.

    Folders named in `skip_hidden` or starting with "." are not descended (and not reported).
    Symlinks are followed only when they resolve inside the vault. Directory cycles are cut by
    tracking the real paths of the folders on the current path (`symlink_loop`); a symlink that
    aliases a non-ancestor folder is followed, so its files appear under the alias too.
    """
    root = Path(root).absolute()
    if not root.exists():
        raise NotFoundError(f"vault folder not found: {root}")
    if not root.is_dir():
        raise InputError(f"vault path is not a folder: {root}")
    walker = _Walker(os.path.realpath(root), tuple(denylist), frozenset(skip_hidden),
                     {"pdf": max_pdf_bytes}, max_document_bytes)
    walker.walk_dir(root, "", (os.path.realpath(root),))
    walker.run()
    return WalkResult(
        files=sorted(walker.files, key=lambda f: f.source_path),
        skipped=sorted(walker.skipped, key=lambda s: (s.source_path, s.reason)),
    )


@dataclass(frozen=True)
class _Folder:
    path: Path
    rel: str
    ancestors: tuple[str, ...]  # real paths of the folders on the way here, the root first
    via_link: bool


class _Walker:
    """Folders wait on a stack, not on the call stack: a vault nested any depth is walked (a
    recursive walk stopped with RecursionError near 500 levels, and the vaults after it went unindexed)."""

    def __init__(self, root_real: str, denylist: tuple[str, ...], hidden: frozenset[str],
                 kind_max_bytes: dict[Kind, int], max_bytes: int):
        self.root_real = root_real
        self.denylist = denylist
        self.hidden = hidden
        self.kind_max_bytes = kind_max_bytes  # a kind's own size limit, where it has one
        self.max_bytes = max_bytes
        self.files: list[VaultFile] = []
        self.skipped: list[SkippedFile] = []
        self.pending: list[_Folder] = []

    def run(self) -> None:
        while self.pending:
            self.list_dir(self.pending.pop())

    def skip(self, rel: str, reason: SkipReason, detail: str = "") -> None:
        self.skipped.append(SkippedFile(mask_path(stored_name(rel)), reason, detail, stored_name(rel)))

    def walk_dir(self, path: Path, rel: str, ancestors: tuple[str, ...], via_link: bool = False) -> None:
        self.pending.append(_Folder(path, rel, ancestors, via_link))

    def list_dir(self, folder: _Folder) -> None:
        path, rel, ancestors, via_link = folder.path, folder.rel, folder.ancestors, folder.via_link
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            # Its files are unseen, not deleted: carrying on would delete their documents.
            raise VaultChangedError(f"folder '{mask_path(stored_name(rel or '.'))}' vanished during the walk; "
                                    f"{NOTHING_DELETED}") from None
        except OSError as exc:
            if not rel:
                raise VaultChangedError(f"cannot read vault folder {path} ({exc.strerror}); "
                                        f"{NOTHING_DELETED}") from None
            self.skip(rel, "unreadable", exc.strerror or type(exc).__name__)  # its documents are kept
            return
        for entry in entries:
            self.visit(entry, f"{rel}/{entry.name}" if rel else entry.name, ancestors, via_link)

    def visit(self, entry: os.DirEntry[str], rel: str, ancestors: tuple[str, ...], via_link: bool) -> None:
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            return  # vanished between scandir and here; nothing to report for a non-candidate
        if is_dir and not is_link:
            if not self._hidden(entry.name):
                self.walk_dir(Path(entry.path), rel, (*ancestors, os.path.realpath(entry.path)), via_link)
            return
        if is_link:
            self.visit_link(entry, rel, ancestors)
        elif entry.is_file(follow_symlinks=False):
            self.visit_file(entry.path, rel, via_link)

    def visit_link(self, entry: os.DirEntry[str], rel: str, ancestors: tuple[str, ...]) -> None:
        candidate = file_kind(entry.name) is not None
        try:
            target = os.path.realpath(entry.path, strict=True)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.skip(rel, "symlink_loop", "symlink chain loops")
            elif candidate:
                self.skip(rel, "vanished", "broken symlink")
            return
        is_dir = os.path.isdir(target)
        if is_dir and self._hidden(entry.name):
            return
        if target != self.root_real and not target.startswith(self.root_real + os.sep):
            if candidate or is_dir:
                self.skip(rel, "symlink_outside_vault", "points outside the vault")
            return
        if is_dir:
            if target in ancestors:
                self.skip(rel, "symlink_loop", "folder symlink points to one of its parents")
                return
            self.walk_dir(Path(entry.path), rel, (*ancestors, target), via_link=True)
        elif candidate and os.path.isfile(target):
            self.visit_file(entry.path, rel, via_link=True)

    def visit_file(self, path: str, rel: str, via_link: bool) -> None:
        kind = file_kind(rel)
        if kind is None:
            return
        if is_denied(rel, self.denylist) or (via_link and is_denied(self._real_rel(path), self.denylist)):
            self.skip(rel, "denylisted")
            return
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self.skip(rel, "vanished")
            return
        except OSError as exc:
            self.skip(rel, "unreadable", exc.strerror or type(exc).__name__)
            return
        limit = self.kind_max_bytes.get(kind, self.max_bytes)
        if st.st_size > limit:
            self.skip(rel, "too_large", f"{st.st_size} bytes > limit {limit}")
            return
        name = stored_name(rel)
        self.files.append(VaultFile(mask_path(name), Path(path), kind, st.st_size, self.root_real, via_link,
                                    st.st_mtime, name))

    def _real_rel(self, path: str) -> str:
        # A symlink must not smuggle a denylisted file in under an innocent name.
        return os.path.relpath(os.path.realpath(path), self.root_real).replace(os.sep, "/")

    def _hidden(self, name: str) -> bool:
        return name.startswith(".") or name in self.hidden


# --- denylist globs ---------------------------------------------------------------------------

def is_denied(source_path: str, patterns: Sequence[str]) -> bool:
    """Gitignore-like matching of a posix source_path against denylist globs.

    `*` and `?` stay inside one path segment, `**` spans any number of segments. A pattern with a
    "/" is anchored at the vault root; one without matches any single segment (`*.secret.md`,
    `drafts`). A pattern matching a folder also denies everything below it, so `private`,
    `private/` and `private/**` are equivalent.
    """
    parts = source_path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        pat = pattern.strip().strip("/")
        if not pat:
            continue
        tokens = compile_glob(pat)
        candidates = prefixes if "/" in pat else parts  # a pattern with "/" is anchored at the root
        if any(glob_match(tokens, c) for c in candidates):
            return True
    return False


# --- reading ----------------------------------------------------------------------------------

def read_document(f: VaultFile, max_document_bytes: int = _INGEST.max_document_bytes, *,
                  max_pdf_bytes: int = _INGEST.max_pdf_bytes,
                  max_pdf_pages: int = _INGEST.max_pdf_pages) -> bytes | SkippedFile:
    """The file's bytes, guaranteed valid UTF-8 without NUL bytes (a PDF: one whose text can be
    read, within its own limits), or why not.

    The size is checked on the open descriptor before reading, and at most limit+1 bytes are read,
    so a huge (or growing) file never lands in memory.
    """
    if f.kind == "pdf" and not available():
        return SkippedFile(f.source_path, "needs_extra", NEEDS_EXTRA, f.disk_path)
    # O_NONBLOCK: a path swapped for a FIFO since the walk must not hang the indexer. O_NOFOLLOW: a
    # plain file swapped for a symlink since the walk is refused by the kernel, not followed.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if f.via_link else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(f.abs_path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return SkippedFile(f.source_path, "symlink_outside_vault", "became a symlink after the walk", f.disk_path)
        return _open_failed(f, exc)
    if f.root_real and not _inside(opened_path(fd, f.abs_path), f.root_real):
        # A folder on the way (or a link's target) was swapped since the walk: what is open is not ours.
        os.close(fd)
        return SkippedFile(f.source_path, "symlink_outside_vault", "resolved outside the vault when opened",
                           f.disk_path)
    data = _read_open(f, fd, max_pdf_bytes if f.kind == "pdf" else max_document_bytes)
    if f.kind != "pdf" or isinstance(data, SkippedFile):
        return data
    problem = pdf_problem(data, max_pages=max_pdf_pages)
    return data if problem is None else SkippedFile(f.source_path, problem.reason, problem.detail, f.disk_path)


def opened_path(fd: int, fallback: Path) -> str:
    """The real path of an open descriptor, from the kernel where it can say (Linux, macOS)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    if hasattr(fcntl, "F_GETPATH"):  # macOS
        return os.fsdecode(fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024)).rstrip(b"\x00"))
    # Elsewhere: the path's current real path, accepted only if it is the very file that is open.
    real = os.path.realpath(fallback)
    try:
        same = os.path.samestat(os.stat(real), os.fstat(fd))
    except OSError:
        same = False
    return real if same else ""


def _inside(path: str, root_real: str) -> bool:
    return bool(path) and (path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep))


def _open_failed(f: VaultFile, exc: OSError) -> SkippedFile:
    if isinstance(exc, FileNotFoundError):
        return SkippedFile(f.source_path, "vanished", "deleted before it could be read", f.disk_path)
    return SkippedFile(f.source_path, "unreadable", exc.strerror or type(exc).__name__, f.disk_path)


def _read_open(f: VaultFile, fd: int, max_document_bytes: int) -> bytes | SkippedFile:
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return SkippedFile(f.source_path, "unreadable", "not a regular file", f.disk_path)
        if st.st_size > max_document_bytes:
            return SkippedFile(f.source_path, "too_large", f"{st.st_size} bytes > limit {max_document_bytes}",
                               f.disk_path)
        try:
            data = fh.read(max_document_bytes + 1)
        except OSError as exc:
            return SkippedFile(f.source_path, "unreadable", exc.strerror or type(exc).__name__, f.disk_path)
    return classify_bytes(f.source_path, data, max_document_bytes, f.kind)


def classify_bytes(source_path: str, data: bytes, max_document_bytes: int,
                   kind: Kind = "markdown") -> bytes | SkippedFile:
    if len(data) > max_document_bytes:
        return SkippedFile(source_path, "too_large", f"grew past limit {max_document_bytes} while reading")
    if kind == "pdf":
        return data  # binary by nature: rag.ingest.pdf reads it
    nul = data.find(b"\x00")
    if nul != -1:
        # Git's heuristic calls a file binary when a NUL shows up in the first 8 KB; a later NUL is
        # rejected too, since Postgres text cannot store one and the insert would fail.
        where = "in the first 8 KB" if nul < _BINARY_SNIFF_BYTES else f"at byte {nul}"
        return SkippedFile(source_path, "binary", f"NUL byte {where}")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return SkippedFile(source_path, "not_utf8", f"invalid UTF-8 at byte {exc.start}")
    return data
