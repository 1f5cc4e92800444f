"""/mcp on `ragpg serve`: the MCP tools over the SDK's streamable HTTP transport, behind the doors of /v1.

The app's middleware runs first, as for every path: the Host and Origin checks (421/403 before
anything else), the body limit, the request id; uvicorn's header and body deadlines. Then this
endpoint authenticates the request exactly like /v1 (server.auth: `Authorization: Bearer <key>` or
`X-API-Key`; keyless only where /v1 is) — a request without a usable key gets the same 401 (its
body a JSON-RPC error, which MCP clients show) and never reaches the MCP layer — and hands the
key's scope to the tools through the request's state. Each tool call then runs under the server's
admission control with that scope, which the library applies inside the SQL: a public key's agent
never sees a restricted note, a key for another vault is refused that vault.

Stateless: every POST is self-contained (no session to hijack or to lose between `--workers`
processes), answered with plain JSON; GET and DELETE (an event stream, ending a session) get 405.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from rag.access import Scope as AccessScope
from rag.errors import AuthError
from ragpg_server.auth import presented_key, resolve_principal
from ragpg_server.calls import ServerState, run_llm_bound
from ragpg_server.errors import REQUEST_ID_HEADER, classify
from ragpg_server.mcp_server import build_server
from ragpg_server.mcp_tools import Caller

T = TypeVar("T")
MCP_PATH = "/mcp"
# Where the endpoint leaves the authenticated caller's scope for the tools (request.state).
SCOPE_STATE_KEY = "ragpg_mcp_scope"


class HttpGate:
    """A tool call on /mcp: the scope this request authenticated with, the server's admission."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    async def run(self, ctx: ServerRequestContext[Any, Any], work: Callable[[Caller], T], *,
                  uses_llm: bool = False) -> T:
        request_state = getattr(getattr(ctx, "request", None), "state", None)
        scope = getattr(request_state, SCOPE_STATE_KEY, None)
        if not isinstance(scope, AccessScope):  # fails closed: no authenticated request, no data
            raise AuthError("this call did not come through an authenticated /mcp request")
        rid = getattr(request_state, "request_id", None) or uuid.uuid4().hex
        caller = Caller(scope, self.state.runtime, rid)
        if uses_llm and self.state.settings.llm.model:
            return await run_llm_bound(self.state, lambda: work(caller))
        return await self.state.admission.run(lambda: work(caller))


class McpEndpoint:
    """The ASGI app at /mcp; `running()` belongs in the app's lifespan."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.server = build_server(state.settings, HttpGate(state))
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        # A manager runs once; each lifespan (a test may start an app twice) gets its own.
        manager = StreamableHTTPSessionManager(app=self.server, json_response=True, stateless=True,
                                               max_request_body_size=self.state.settings.server.max_body_bytes)
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":
            await _error(scope, receive, send, 405, "method_not_allowed",
                         "/mcp takes POST only (stateless streamable HTTP: no event stream, no session)",
                         {"Allow": "POST"})
            return
        manager = self._manager
        if manager is None:
            await _error(scope, receive, send, 503, "unavailable", "the MCP endpoint is not running")
            return
        try:
            scope_of_key = await self._authenticate(scope)
        except Exception as exc:  # noqa: BLE001 - the /v1 error envelope, never a traceback
            status, code, message = classify(exc)
            headers = {"WWW-Authenticate": 'Bearer realm="ragpg"'} if status == 401 else {}
            if status in (429, 503):
                headers["Retry-After"] = str(self.state.settings.server.retry_after_s)
            await _error(scope, receive, send, status, code, message, headers)
            return
        scope.setdefault("state", {})[SCOPE_STATE_KEY] = scope_of_key
        await manager.handle_request(scope, receive, send)

    async def _authenticate(self, scope: Scope) -> AccessScope:
        """The request's API key → its scope, as ragpg_server.calls does for /v1 (in an admitted thread:
        it reads the database)."""
        key = presented_key(Headers(scope=scope))
        client = scope.get("client")
        host = client[0] if client else None
        server = self.state.settings.server
        rt = self.state.runtime

        def check() -> AccessScope:
            # On the primary, never a read replica: a key revoked a moment ago must already be refused.
            with rt.connection(autocommit=True) as conn:
                return resolve_principal(conn, key, host, server.auth, server.key_touch_interval_s).scope

        return await self.state.admission.run(check)


async def _error(scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str,
                 headers: dict[str, str] | None = None) -> None:
    """The status and headers /v1 would answer with; the body a JSON-RPC error (no request id: the
    body was never read), so an MCP client shows the message instead of a bare status."""
    headers = dict(headers or {})
    rid = (scope.get("state") or {}).get("request_id")
    if rid:
        headers[REQUEST_ID_HEADER] = rid
    body = {"jsonrpc": "2.0", "id": None,
            "error": {"code": INVALID_REQUEST, "message": message, "data": {"status": status, "code": code}}}
    await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)
