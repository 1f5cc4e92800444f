"""The notes group of the settings (`rag.config.NotesSettings`, `[notes]` in the config file, env
`RAGPG_NOTES__*`) as the notes workflow reads it.

The model itself lives in `rag.config_notes` (a group of `rag.config.Settings`), so the settings never import
the notes package (the notes package imports the settings, not the reverse).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rag.config import NotesSettings


def notes_settings(settings: Any) -> NotesSettings:
    """The notes group of a `rag.config.Settings` (once it has one), else the defaults."""
    group = getattr(settings, "notes", None)
    if isinstance(group, NotesSettings):
        return group
    if isinstance(group, BaseModel):
        return NotesSettings.model_validate(group.model_dump())
    if isinstance(group, dict):
        return NotesSettings.model_validate(group)
    return NotesSettings()
