"""GET /v1/vaults: the vaults the key may read, with document/chunk counts and last indexed time."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from rag.access import levels_up_to
from rag.store import vaults as vault_store
from ragpg_server.calls import Call, call
from ragpg_server.models import VaultsResponse
from ragpg_server.routes.common import errors

router = APIRouter(prefix="/v1", tags=["vaults"])


@router.get("/vaults", response_model=VaultsResponse, responses=errors())
async def list_vaults(request: Request) -> dict[str, Any]:
    """Only vaults inside the key's scope are listed."""

    def op(c: Call) -> dict[str, Any]:
        with c.runtime.connection(scope=c.scope, read=True) as conn:
            summaries = vault_store.list_vaults(conn, readable_levels=levels_up_to(c.scope.clearance))
        return {"vaults": [{"name": s.name, "documents": s.documents, "chunks": s.chunks,
                            "last_indexed_at": s.last_indexed_at}
                           for s in summaries if c.scope.allows_vault(s.name)]}

    return await call(request, op, trace="vaults")
