"""Mount /mcp on the app (server/mcp_http.py) when the `mcp` extra is installed; without it, /mcp says
which extra to install (501), and the rest of the server runs as before."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

from fastapi import FastAPI
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from rag.errors import ConfigError
from rag.extras import require_extra
from ragpg_server.calls import ServerState
from ragpg_server.errors import error_body

MCP_PATH = "/mcp"


class _ExtraMissing:
    def __init__(self, message: str) -> None:
        self.message = message

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await JSONResponse(error_body("not_implemented", self.message), status_code=501)(scope, receive, send)


def install(app: FastAPI, state: ServerState) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """Add the /mcp route (every method; the endpoint answers them); returns what the lifespan enters."""
    try:
        require_extra("mcp", "the /mcp endpoint")
    except ConfigError as exc:
        app.router.routes.append(Route(MCP_PATH, _ExtraMissing(str(exc)), include_in_schema=False))
        return nullcontext
    from ragpg_server.mcp_http import McpEndpoint

    endpoint = McpEndpoint(state)
    # An ASGI app as the endpoint: Starlette hands it every method of /mcp as is.
    app.router.routes.append(Route(MCP_PATH, endpoint, include_in_schema=False))
    return endpoint.running
