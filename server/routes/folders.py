"""GET /v1/vaults/{vault}/folders: a vault's folders with passages the key may read (the page's
folder picker), and the name Obsidian knows the vault by when it is an Obsidian vault."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from rag.notes.browse import VaultOutline, vault_outline
from ragpg_server.calls import Call, call
from ragpg_server.models import VAULT_NAME_PATTERN
from ragpg_server.routes.common import errors

router = APIRouter(prefix="/v1", tags=["vaults"])


@router.get("/vaults/{vault}/folders", response_model=VaultOutline, responses=errors(404))
async def list_folders(vault: Annotated[str, Path(pattern=VAULT_NAME_PATTERN)], request: Request) -> VaultOutline:
    """Folders holding indexed passages at or below the key's clearance; a vault outside the key is 403."""

    def op(c: Call) -> VaultOutline:
        with c.runtime.connection(scope=c.scope, read=True) as conn:
            return vault_outline(conn, vault, c.scope)

    return await call(request, op, vaults=[vault], trace="folders")
