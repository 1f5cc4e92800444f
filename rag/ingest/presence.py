"""Deciding that a file is really gone before its document is deleted.

An index run deletes a stored document only on positive evidence that its file is gone from a
folder that could be read: the walk listed the folder and the name was not there, or (for a file
that vanished between the walk and the read) the folder, listed again, no longer holds it. A folder
that vanished mid-run, or a vault root that changed identity (an unmounted disk, a moved folder),
aborts the vault's run before anything is deleted.
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
