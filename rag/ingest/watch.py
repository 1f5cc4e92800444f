"""Re-index vaults when their files change: save, create, delete or rename.

Change events are debounced (`settings.ingest.watch_debounce_ms` of quiet before acting) and
mapped to the vaults they belong to; only those vaults are re-indexed, incrementally, so a save
costs one walk-and-hash of that vault plus the changed file's parse and embed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import watchfiles

from rag.config import Settings
from rag.embed import Embedder, get_embedder
from rag.errors import NotFoundError
from rag.ingest.beir import CORPUS_FILE
from rag.ingest.pipeline import index_vaults
from rag.ingest.report import IndexProgress, IndexReport
from rag.ingest.walk import file_kind
from rag.store.locate import connect
from rag.store.vaults import Vault, resolve_vaults

# Continuous writes still get indexed: after this many quiet periods' worth of time, act anyway.
_MAX_DELAY_FACTOR = 10


class StopFlag:
    """The `is_set()` watchfiles polls; any threading.Event or anyio.Event also works."""

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


def watch_vaults(settings: Settings, names: Sequence[str] | None, *,
                 on_report: Callable[[IndexReport], None],
                 stop_event: watchfiles.main.AbstractEvent | None = None,
                 initial: bool = True, progress: IndexProgress | None = None,
                 embedder: Embedder | None = None) -> None:
    """Index once (when `initial`), then re-index changed vaults until `stop_event` is set or Ctrl-C."""
    embedder = embedder or get_embedder(settings.embedding.model, settings.embedding)
    with connect(settings) as conn:
        vaults = resolve_vaults(conn, names)
    if not vaults:
        raise NotFoundError("no vaults to watch (add one with `ragpg vault add NAME PATH`)")
    roots = _roots(vaults)
    if initial:
        on_report(index_vaults(settings, [v.name for v in vaults], progress=progress, embedder=embedder))
    quiet_ms = max(settings.ingest.watch_debounce_ms, 1)
    for changes in watchfiles.watch(
        *roots, watch_filter=_Filter(roots, settings.ingest.skip_hidden_folders), step=quiet_ms,
        # Ctrl-C reaches the caller (the CLI exits 130) instead of a WARNING from watchfiles and exit 0
        debounce=quiet_ms * _MAX_DELAY_FACTOR, stop_event=stop_event, raise_interrupt=True,
    ):
        changed = vaults_of((path for _, path in changes), vaults)
        if changed:
            on_report(index_vaults(settings, changed, progress=progress, embedder=embedder))


def _roots(vaults: Sequence[Vault]) -> list[Path]:
    missing = [v for v in vaults if not v.root.is_dir()]
    if missing:
        raise NotFoundError(f"vault '{missing[0].name}' folder not found: {missing[0].root_path}")
    return sorted({v.root for v in vaults})


def vaults_of(paths: Iterable[str], vaults: Sequence[Vault]) -> list[str]:
    """Names of the vaults holding any of `paths` (a nested vault and its parent both match)."""
    prefixes = [(v.name, _prefixes(v.root)) for v in vaults]
    hit: dict[str, None] = {}
    for path in paths:
        for name, roots in prefixes:
            if any(path == r or path.startswith(r + os.sep) for r in roots):
                hit[name] = None
    return list(hit)


def _prefixes(root: Path) -> tuple[str, ...]:
    # Events may name the path as watched or as resolved (symlinked roots, /tmp on macOS).
    return tuple({str(root), os.path.realpath(root)})


class _Filter:
    """Indexable files, corpus files, and extension-less paths (folders being renamed or deleted);
    nothing inside hidden or skipped folders of a vault (folders above the root do not count)."""

    def __init__(self, roots: Iterable[Path], skip_folders: Iterable[str]) -> None:
        self.roots = sorted({p for r in roots for p in _prefixes(r)}, key=len, reverse=True)
        self.skip = frozenset(skip_folders)

    def __call__(self, change: watchfiles.Change, path: str) -> bool:
        root = next((r for r in self.roots if path.startswith(r + os.sep)), None)
        if root is None:
            return False
        parts = path[len(root) + 1 :].split(os.sep)
        if any(p.startswith(".") or p in self.skip for p in parts[:-1]):
            return False
        name = parts[-1]
        return file_kind(name) is not None or name == CORPUS_FILE or "." not in name
