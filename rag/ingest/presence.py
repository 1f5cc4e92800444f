"""Deciding that a file is really gone before its document is deleted.

An index run deletes a stored document only on positive evidence that its file is gone from a
folder that could be read: the walk listed the folder and the name was not there, or (for a file
that vanished between the walk and the read) the folder, listed again, no longer holds it. A folder
that vanished mid-run, or a vault root that changed identity (an unmounted disk, a moved folder),
aborts the vault's run before anything is deleted. So does a root that holds no file at all, lost
the `.obsidian` folder it had at the last run, or no longer holds more than `ingest.max_gone_share` of
the files the index holds for it (what an unmounted share, or another folder mounted there, looks
like), unless the run is told `allow_empty`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from rag.errors import RagError
from rag.ingest.names import disk_name
from rag.secrets import mask_path

NOTHING_DELETED = "nothing was deleted; run the index again once the folder is back"


class VaultChangedError(RagError):
    """The vault's folder tree changed under the run in a way that makes deletions unsafe."""


def root_identity(root: Path) -> tuple[int, int]:
    """(device, inode) of the vault root, to notice it being unmounted or replaced during a run."""
    try:
        st = os.stat(root)
    except OSError as exc:
        raise VaultChangedError(f"vault folder {root} is gone or unreadable ({exc.strerror}); "
                                f"{NOTHING_DELETED}") from None
    return st.st_dev, st.st_ino


def root_identity_or_none(root: Path) -> tuple[int, int] | None:
    """As root_identity, but None when the root is missing: the walk then reports it in its own words."""
    try:
        return root_identity(root)
    except VaultChangedError:
        return None


def check_root_unchanged(root: Path, identity: tuple[int, int]) -> None:
    if root_identity(root) != identity:
        raise VaultChangedError(f"vault folder {root} was replaced during the run (unmounted or moved?); "
                                f"{NOTHING_DELETED}")


class VaultUnavailableError(VaultChangedError):
    """The vault's folder looks unmounted or replaced: empty, or without the marker it had."""


MARKER = ".obsidian"  # Obsidian's settings folder: its loss says another folder is mounted at the root
ALLOW_EMPTY_OPTION = "--allow-empty"


def check_available(root: Path, vault: str, *, files_found: int, stored_documents: int, files_gone: int,
                    max_gone_share: float, had_marker: bool, allow_empty: bool) -> bool:
    """Whether the root holds the marker now; raises VaultUnavailableError, before anything is
    deleted, when the index holds documents of a root that is empty, lost the marker it had, or lacks
    more than `max_gone_share` of them (`files_gone`: stored documents the walk did not see).

    An unmounted network share or disk shows an empty folder at the mount point, and a folder put in
    its place may hold a file or two: taken at its word, the nightly reindex would remove the whole
    vault. Only the user can tell a real emptying apart, by running the index again with `--allow-empty`."""
    has_marker = (root / MARKER).is_dir()
    if allow_empty or stored_documents == 0:
        return has_marker
    confirm = (f"{NOTHING_DELETED}; if the notes are really gone, confirm with "
               f"`ragpg index {vault} {ALLOW_EMPTY_OPTION}`")
    if files_found == 0:
        raise VaultUnavailableError(f"vault folder {root} is empty but the index holds {stored_documents} of its "
                                    f"documents (an unmounted share or disk?); {confirm}")
    if had_marker and not has_marker:
        raise VaultUnavailableError(f"vault folder {root} has lost the {MARKER} folder it had at the last run "
                                    f"(another folder mounted there?); {confirm}")
    if files_gone > max_gone_share * stored_documents:
        raise VaultUnavailableError(f"vault folder {root} no longer holds {files_gone} of the {stored_documents} "
                                    f"files indexed from it (more than ingest.max_gone_share, "
                                    f"{max_gone_share:.0%}; another folder mounted there?); {confirm}")
    return has_marker


def not_seen(stored: Iterable[str], seen: Iterable[str], unreadable: list[str]) -> set[str]:
    """Stored paths the walk did not see (`seen`: its files' and skips' paths), below no folder it could
    not read (`unreadable`: those documents are kept, so they are not gone)."""
    found = set(seen)
    return {p for p in stored if p not in found and not under_any(p, unreadable)}


def under_any(path: str, folders: Iterable[str]) -> bool:
    """True when `path` lies below one of `folders` (rel paths; "." is the root)."""
    return any(f == "." or path.startswith(f.rstrip("/") + "/") for f in folders)


def confirm_vanished(root: Path, files: Iterable[tuple[str, str]]) -> set[str]:
    """Of files the walk saw but the read did not find, given as (stored path, path on disk), the
    stored paths of those whose folder, listed now, lacks them.

    A folder that is itself gone raises VaultChangedError: a whole subtree disappearing mid-run is
    an unmount or a move, not the user deleting notes. An unreadable folder proves nothing: kept."""
    gone: set[str] = set()
    listings: dict[str, set[str] | None] = {}
    for stored, rel in files:
        parent = str(PurePosixPath(rel).parent)
        if parent not in listings:
            listings[parent] = _listing(root, parent)
        names = listings[parent]
        if names is not None and disk_name(PurePosixPath(rel).name) not in names:
            gone.add(stored)
    return gone


def _listing(root: Path, parent: str) -> set[str] | None:
    folder = root / disk_name(parent) if parent != "." else root
    try:
        return set(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        raise VaultChangedError(f"folder '{mask_path(parent)}' vanished during the run; {NOTHING_DELETED}") from None
    except OSError:
        return None
