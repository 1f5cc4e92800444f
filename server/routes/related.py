"""GET /v1/related/{vault}/{source_path}: the notes linked with one either way, then the closest in meaning."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from rag.retrieval import related
from rag.retrieval.chunks import validate_source_path
from ragpg_server.calls import Call, call
from ragpg_server.models import VAULT_NAME_PATTERN
from ragpg_server.routes import chunks as _anypath  # noqa: F401  (registers the {...:anypath} convertor)
from ragpg_server.routes.common import AMBIGUOUS_NAME, errors

router = APIRouter(prefix="/v1", tags=["related"])


@router.get("/related/{vault}/{source_path:anypath}", response_model=related.RelatedNotes,
            responses=errors(404, 409, described={409: AMBIGUOUS_NAME}))
async def get_related(vault: Annotated[str, Path(pattern=VAULT_NAME_PATTERN)],
                      source_path: Annotated[str, Path(description="The note: its path relative to the vault root, that "
                                                       "path without .md, its file name or an alias.")],
                      request: Request,
                      k: Annotated[int | None, Query(ge=1, le=related.MAX_RELATED,
                                                     description="How many (default notes.related_k).")] = None,
                      ) -> related.RelatedNotes:
    """The notes related to one, each with why ("links here with 'ribbon'", "close in meaning"). The note
    is named by its path or as a link names it (409 with the candidates when the name fits several
    notes). A note above the key's clearance is reported as not found, and so are notes it would list."""
    validate_source_path(source_path)  # traversal etc. → 400 before any database work

    def op(c: Call) -> related.RelatedNotes:
        count = c.runtime.settings.notes.related_k if k is None else k
        with c.runtime.connection(scope=c.scope, read=True) as conn:
            return related.related_notes(conn, vault, source_path, k=count, scope=c.scope)

    return await call(request, op, vaults=[vault], trace="related")
