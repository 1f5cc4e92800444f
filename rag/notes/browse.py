"""What a reader may browse in one vault: its folders with indexed passages, and whether it is an
Obsidian vault (its root holds `.obsidian/`), in which case notes open in Obsidian by
`obsidian://open?vault=<folder name>&file=<path>`.

The web page's folder picker and source links use this; the folder listing is the notes
pipeline's own (`rag.notes.folders.list_folders`), so the picker offers exactly what `ask` accepts.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rag.access import Scope
from rag.notes.folders import list_folders
from rag.store.database import Connection
from rag.store.vaults import get_vault
from rag.types import Record

OBSIDIAN_MARKER = ".obsidian"


class FolderInfo(Record):
    folder: str = Field(description="Path relative to the vault root; '' is the top level.")
    chunks: int


class VaultOutline(Record):
    """GET /v1/vaults/{vault}/folders."""

    vault: str
    obsidian_vault: str | None = Field(description="Set when the vault is an Obsidian vault: the name for "
                                       "`obsidian://open?vault=...&file=...` links.")
    folders: list[FolderInfo]


def obsidian_name(root: Path) -> str | None:
    """The vault's folder name when the root is an Obsidian vault; None otherwise (or unreadable)."""
    try:
        return root.name if (root / OBSIDIAN_MARKER).is_dir() else None
    except OSError:
        return None


def vault_outline(conn: Connection, vault: str, scope: Scope) -> VaultOutline:
    """Folders of `vault` holding passages the scope may read (NotFoundError for an unknown vault)."""
    v = get_vault(conn, vault)
    folders = [FolderInfo(folder=f.folder, chunks=f.chunks) for f in list_folders(conn, [v.name], scope)]
    return VaultOutline(vault=v.name, obsidian_vault=obsidian_name(v.root), folders=folders)
