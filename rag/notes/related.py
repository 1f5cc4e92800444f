"""`rag.related`: the notes related to one, for a library caller (`ragpg related`, GET /v1/related and
the MCP related_notes tool read the same `rag.retrieval.related.related_notes`)."""

from __future__ import annotations

from rag.access import Scope
from rag.arguments import RELATED_CHECKS, check_arguments
from rag.retrieval.related import RelatedNotes, related_notes
from rag.runtime import Runtime, default_runtime

__all__ = ["RelatedNotes", "related"]


def related(note: str, *, vault: str | None = None, k: int | None = None, runtime: Runtime | None = None,
            scope: Scope | None = None) -> RelatedNotes:
    """Up to `k` notes (default `notes.related_k`) related to the one `note` names: the notes it links to
    or that link to it first, then the closest in meaning, each with its reasons in words.

    `note` is a path in the vault, that path without `.md`, a unique file name or an alias, resolved as
    Obsidian resolves a link among the notes the caller may read; `vault` is needed only when several
    vaults hold a note of that name. An unknown name is a NotFoundError, an ambiguous one an
    AmbiguousNameError listing the candidates.
    """
    check_arguments("related", {"note": note, "vault": vault, "runtime": runtime, "scope": scope}, RELATED_CHECKS)
    rt = runtime or default_runtime()
    caller = scope or Scope.unrestricted()
    with rt.connection(autocommit=True, scope=caller, read=True) as conn:
        return related_notes(conn, vault, note, k=rt.settings.notes.related_k if k is None else k, scope=caller)
