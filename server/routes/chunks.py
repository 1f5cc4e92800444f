"""GET /v1/chunks/{vault}/{source_path}/{ordinal}: one chunk by its stable reference (from the DB only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from starlette.convertors import Convertor, register_url_convertor

from rag.retrieval import chunks, note_names
from ragpg_server.calls import Call, call
from ragpg_server.models import VAULT_NAME_PATTERN
from ragpg_server.routes.common import AMBIGUOUS_NAME, errors

router = APIRouter(prefix="/v1", tags=["chunks"])


class AnyPathConvertor(Convertor[str]):
    """Starlette's `path` convertor, but matching newlines too (its `.*` stops at one): a file name
    may hold a newline, and its chunks must still be reachable as `%0A`."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anypath", AnyPathConvertor())


@router.get("/chunks/{vault}/{source_path:anypath}/{ordinal}", response_model=chunks.ChunkRecord,
            responses=errors(404, 409, described={409: AMBIGUOUS_NAME}))
async def get_chunk(vault: Annotated[str, Path(pattern=VAULT_NAME_PATTERN)],
                    source_path: Annotated[str, Path(description="The note: its path relative to the vault root, "
                                                 "that path without .md, its file name or an alias.")],
                    ordinal: Annotated[int, Path(ge=0, le=2_147_483_647)], request: Request) -> chunks.ChunkRecord:
    """A chunk by vault, note and ordinal; the note is named by its path or as a link names it (409 with
    the candidates when the name fits several notes). Chunks above the key's clearance are reported as
    not found, and never make a name ambiguous."""
    chunks.validate_source_path(source_path)  # traversal etc. → 400 before any database work

    def op(c: Call) -> chunks.ChunkRecord:
        with c.runtime.connection(scope=c.scope, read=True) as conn:
            note = note_names.resolve_note(conn, vault, source_path, scope=c.scope)
            return chunks.get_chunk(conn, vault, note.source_path, ordinal, scope=c.scope)

    return await call(request, op, vaults=[vault], trace="chunk")
