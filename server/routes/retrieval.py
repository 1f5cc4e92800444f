"""POST /v1/context, /v1/ask, /v1/search: the three retrieval entry points of `rag`.

Each calls ONE rag function with the caller's scope (rag pushes the vault and clearance conditions
into the SQL filter) and the request id, under which rag opens the request's `rag:root` span.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

import rag
from rag.context.result import ContextPayload
from rag.notes.explain import explain_lines
from rag.notes.results import SearchResponse
from ragpg_server.calls import Call, call
from ragpg_server.models import AskReply, AskRequest, ContextRequest, SearchRequest
from ragpg_server.routes.common import errors

router = APIRouter(prefix="/v1", tags=["retrieval"])


@router.post("/context", response_model=ContextPayload, responses=errors(404, 502))
async def context(body: ContextRequest, request: Request) -> ContextPayload:
    """Retrieve, rank and assemble a cited context for a chat backend (`rag.compute_context`)."""

    def op(c: Call) -> ContextPayload:
        return rag.compute_context(body.query, vaults=body.vaults, filters=body.filters, profile=body.profile,
                                   mode=body.mode, budget_tokens=body.budget_tokens, runtime=c.runtime,
                                   scope=c.scope, request_id=c.request_id).payload()

    return await call(request, op, vaults=body.vaults, uses_llm=body.mode != "base")


@router.post("/ask", response_model=AskReply, responses=errors(404, 502))
async def ask(body: AskRequest, request: Request) -> AskReply:
    """Answer a question over notes vaults with cited sources (`rag.ask`)."""

    def op(c: Call) -> AskReply:
        out = rag.ask(body.query, vaults=body.vaults, folders=body.folders, k=body.k, detail=body.detail,
                      debug=body.debug or body.explain, runtime=c.runtime, scope=c.scope, request_id=c.request_id)
        return AskReply(**{**dict(out), "debug": out.debug if body.debug else None,
                           "explanation": explain_lines(out.debug) if body.explain else None})

    return await call(request, op, vaults=body.vaults, uses_llm=True)


@router.post("/search", response_model=SearchResponse, responses=errors(404, 502))
async def search(body: SearchRequest, request: Request) -> SearchResponse:
    """The best notes, each with its best passages and their snippets, or the best passages (`rag.search`)."""

    def op(c: Call) -> SearchResponse:
        return rag.search(body.query, vaults=body.vaults, folders=body.folders, k=body.k, filters=body.filters,
                          by=body.by, runtime=c.runtime, scope=c.scope, request_id=c.request_id)

    return await call(request, op, vaults=body.vaults)
