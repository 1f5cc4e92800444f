"""POST /v1/context, /v1/ask, /v1/search: the three retrieval entry points of `rag`.

Each calls ONE rag function with the caller's scope (rag pushes the vault and clearance conditions
into the SQL filter) and the request id, under which rag opens the request's `rag:root` span.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

import rag
from rag.context.result import ContextPayload
from rag.notes.explain import explain_lines
from ragpg_server.calls import Call, call
from ragpg_server.models import (
    AskRequest,
    AskResponse,
    ContextRequest,
    SearchRequest,
    SearchResponse,
)
from ragpg_server.routes.common import errors

router = APIRouter(prefix="/v1", tags=["retrieval"])


@router.post("/context", response_model=ContextPayload, responses=errors(404, 502))
async def context(body: ContextRequest, request: Request) -> ContextPayload:
    """Retrieve, rank and assemble a cited context for a chat backend (`rag.compute_context`)."""

    def op(c: Call) -> ContextPayload:
        return rag.compute_context(body.query, vaults=body.vaults, filters=body.filters, profile=body.profile,
                                   mode=body.mode, budget_tokens=body.budget_tokens, runtime=c.runtime,
                                   scope=c.scope, request_id=c.request_id).payload()

    return await call(request, op, vaults=body.vaults)


@router.post("/ask", response_model=AskResponse, responses=errors(404, 502))
async def ask(body: AskRequest, request: Request) -> dict[str, Any]:
    """Answer a question over notes vaults with cited sources (`rag.ask`)."""

    def op(c: Call) -> dict[str, Any]:
        out = rag.ask(body.question, vaults=body.vaults, folders=body.folders, k=body.k, detail=body.detail,
                      debug=body.debug or body.explain, runtime=c.runtime, scope=c.scope,
                      request_id=c.request_id).to_dict()
        if body.explain:
            out["explanation"] = explain_lines(out.get("debug"))
            if not body.debug:
                out.pop("debug", None)
        return out

    return await call(request, op, vaults=body.vaults)


@router.post("/search", response_model=SearchResponse, responses=errors(404, 502))
async def search(body: SearchRequest, request: Request) -> dict[str, Any]:
    """Ranked passages with snippets (`rag.search`)."""

    def op(c: Call) -> dict[str, Any]:
        return rag.search(body.query, vaults=body.vaults, folders=body.folders, k=body.k, filters=body.filters,
                          runtime=c.runtime, scope=c.scope, request_id=c.request_id).to_dict()

    return await call(request, op, vaults=body.vaults)
