"""Which note a link or a name names, resolved the way Obsidian resolves names (a shared basic:
ingestion resolves links with it, retrieval the names readers give notes, rag.retrieval.note_names).

A link's target is matched, case-insensitively and with or without its `.md`:
1. as a path from the vault's root (`[[Projects/Three laws of motion]]`);
2. as a path from the linking note's folder (markdown links are often relative);
3. as the end of exactly one note's path: a bare name (`[[Ribbon]]`) is the one note of that name
   anywhere in the vault, `[[laws/Motion]]` the one path ending so; when several notes share the
   name, the one in the linking note's own folder, else none (the link stays unresolved, ambiguous);
4. as an alias (front matter `aliases`) of exactly one note.
A link to the note itself (`[[#Heading]]`) resolves to it. Anything else is unresolved, and keeps its
text so a note created later with that name can take it.

`named` is the same rule for a name given with no linking note (`ragpg related "Project Heron"`): it
returns every note the name could mean, so an ambiguous name can list them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

Reason = Literal["path", "relative", "name", "alias", "self", "missing", "ambiguous"]


@dataclass(frozen=True)
class Resolution:
    path: str | None  # the note's vault-relative path, or None when unresolved
    reason: Reason


def _key(path: str) -> str:
    """Case-insensitive, without a trailing .md."""
    lowered = path.strip().strip("/").lower()
    return lowered[:-3] if lowered.endswith(".md") else lowered


def _folder(path: str) -> str:
    parent = PurePosixPath(path).parent.as_posix()
    return "" if parent == "." else parent


class LinkResolver:
    """Resolves links among one vault's notes (`paths`, vault-relative) and their aliases."""

    def __init__(self, paths: Iterable[str], aliases: Mapping[str, Sequence[str]] | None = None) -> None:
        self._by_path: dict[str, str] = {}
        self._by_name: dict[str, list[str]] = {}
        for path in paths:
            self._by_path.setdefault(_key(path), path)
            self._by_name.setdefault(_key(PurePosixPath(path).name), []).append(path)
        self._by_alias: dict[str, list[str]] = {}
        for path, names in (aliases or {}).items():
            for alias in dict.fromkeys(_key(a) for a in names if a.strip()):
                self._by_alias.setdefault(alias, []).append(path)

    def resolve(self, target: str, source_path: str) -> Resolution:
        wanted = _key(target)
        if not wanted:
            return Resolution(source_path, "self")
        if wanted in self._by_path:
            return Resolution(self._by_path[wanted], "path")
        relative = _key(posixpath.normpath(f"{_folder(source_path)}/{target}")) if _folder(source_path) else None
        if relative and relative in self._by_path:
            return Resolution(self._by_path[relative], "relative")
        found = self._ending_with(wanted)
        if found:
            return self._pick(found, source_path, "name")
        return self._pick(self._by_alias.get(wanted, []), source_path, "alias")

    def named(self, name: str) -> list[str]:
        """The notes `name` names with no linking note to prefer from: the note at that path (with or
        without `.md`), else every note whose path ends so, else every note with that alias. One
        entry: resolved; several: ambiguous; none: no such note."""
        wanted = _key(name)
        if not wanted:
            return []
        if wanted in self._by_path:
            return [self._by_path[wanted]]
        return list(self._ending_with(wanted) or self._by_alias.get(wanted, []))

    def _ending_with(self, wanted: str) -> list[str]:
        if "/" not in wanted:
            return self._by_name.get(wanted, [])
        name = wanted.rsplit("/", 1)[1]
        return [p for p in self._by_name.get(name, []) if _key(p).endswith("/" + wanted)]

    @staticmethod
    def _pick(found: Sequence[str], source_path: str, reason: Reason) -> Resolution:
        if len(found) == 1:
            return Resolution(found[0], reason)
        if not found:
            return Resolution(None, "missing")
        here = [p for p in found if _folder(p) == _folder(source_path)]
        return Resolution(here[0], reason) if len(here) == 1 else Resolution(None, "ambiguous")
