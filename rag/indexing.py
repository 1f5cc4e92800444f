"""`rag.index`: index vaults with the runtime's settings and embedder, the library's face of
`rag.ingest.pipeline` (`ragpg index`, `POST /v1/index` and the watcher run the same pipeline)."""

from __future__ import annotations

from collections.abc import Sequence

from rag.arguments import INDEX_CHECKS, check_arguments
from rag.ingest.pipeline import index_vaults
from rag.ingest.report import IndexProgress, IndexReport
from rag.runtime import Runtime, default_runtime

__all__ = ["index"]


def index(vaults: Sequence[str] | None = None, *, allow_empty: bool = False, progress: IndexProgress | None = None,
          runtime: Runtime | None = None) -> IndexReport:
    """Index the named vaults (none: every registered vault) incrementally: new and changed notes are
    read, cut and embedded, removed ones dropped. A vault that fails is reported in the result (its
    `error`), the others still run; nothing is raised for one vault's failure.

    `allow_empty` confirms that a vault folder found empty was really emptied (its notes are then
    removed instead of the vault being reported unavailable); `progress` receives the phases and
    counts as they happen; `runtime` gives the settings and the embedder (default: the process's).
    """
    check_arguments("index", {"vaults": vaults, "allow_empty": allow_empty, "runtime": runtime}, INDEX_CHECKS)
    rt = runtime or default_runtime()
    names = [v.strip() for v in vaults] if vaults is not None else None
    return index_vaults(rt.settings, names, progress=progress, embedder=rt.embedder, allow_empty=allow_empty)
