"""The FastAPI app factory. Thin over `rag`: parse, authorise, admit, call ONE rag function, serialise.

`create_app(runtime)` takes a built Runtime (settings are built at the entry point, never at
import time). `create_app_from_env()` is the import-string factory uvicorn workers use: each
worker builds its own settings and runtime.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.middleware.cors import CORSMiddleware

import rag
from rag.config import ServerSettings, load_settings
from rag.errors import ConfigError
from rag.llm import import_litellm
from rag.runtime import Runtime
from rag.store import migrate
from ragpg_server import errors, mcp_mount
from ragpg_server.admission import Admission
from ragpg_server.calls import ServerState
from ragpg_server.hosts import HostCheckMiddleware, HostPolicy, OriginCheckMiddleware
from ragpg_server.middleware import BodyLimitMiddleware, RequestIdMiddleware
from ragpg_server.routes import chunks, docs, folders, health, index, page, related, retrieval, vaults

# Besides `concurrency` request threads, the pool serves /healthz (one at a time) and the background
# index runner's progress writes (one thread; the pipeline itself uses its own connection).
POOL_HEADROOM = 2
# /healthz runs one check at a time; a few more may wait, the rest get 429 at once (a probe that
# queued behind a long line would time out anyway).
HEALTH_QUEUE = 8
# What a page on an origin in server.allowed_origins may send and read.
CORS_REQUEST_HEADERS = ("authorization", "x-api-key", "content-type", "x-request-id",
                        "mcp-protocol-version")  # what a browser MCP client sends to /mcp
CORS_EXPOSED_HEADERS = ("x-request-id", "retry-after")

DESCRIPTION = """Postgres-native retrieval for RAG.

Authenticate with `Authorization: Bearer <key>` (or `X-API-Key: <key>`); keys are created with
`ragpg keys create`. Errors are `{"error": {"code": "...", "message": "..."}}`. Requests must name
the server in their Host header as it is bound (or a `server.allowed_hosts` name; else 421), and
browser requests from another origin are refused (403) unless `server.allowed_origins` lists it.
"""


def _version() -> str:
    try:
        return importlib.metadata.version("ragpg")
    except importlib.metadata.PackageNotFoundError:
        return rag.__version__


def pool_size_for(concurrency: int) -> int:
    return concurrency + POOL_HEADROOM


def llm_slots(server_settings: ServerSettings) -> int:
    """How many request threads may wait on the LLM: server.llm_concurrency, leaving at least one of
    server.concurrency to the routes that never call it (none to leave when concurrency is 1)."""
    return max(1, min(server_settings.llm_concurrency, server_settings.concurrency - 1))


def create_app(runtime: Runtime, *, lifespan_close: bool = False) -> FastAPI:
    """The app over `runtime`. The runtime's pool must hold at least `server.concurrency` connections."""
    server_settings = runtime.settings.server
    if runtime.pool_max_size < server_settings.concurrency:
        raise ConfigError(f"the connection pool ({runtime.pool_max_size}) is smaller than server.concurrency "
                          f"({server_settings.concurrency}); build the Runtime with pool_max_size ≥ concurrency")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if runtime.settings.llm.model:  # litellm's import takes seconds: at start, not in the first ask
            threading.Thread(target=import_litellm, name="ragpg-litellm-import", daemon=True).start()
        try:
            async with mcp_running():  # /mcp's transport (server/mcp_http.py)
                yield
        finally:
            st: ServerState = app.state.ragpg
            if st.index_runner is not None:
                st.index_runner.shutdown()
            if lifespan_close:
                runtime.close()

    app = FastAPI(title="ragpg", version=_version(), description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, openapi_url="/openapi.json", redoc_url=None)
    app.state.ragpg = ServerState(
        runtime=runtime,
        admission=Admission(server_settings.concurrency, server_settings.queue_size, server_settings.retry_after_s),
        llm_admission=Admission(llm_slots(server_settings), server_settings.queue_size, server_settings.retry_after_s),
        schema_head=migrate.head_revision(),
        health_admission=Admission(1, min(server_settings.queue_size, HEALTH_QUEUE), server_settings.retry_after_s),
    )
    errors.install(app)
    mcp_running = mcp_mount.install(app, app.state.ragpg)  # /mcp, behind the same middleware and keys
    for module in (retrieval, chunks, related, vaults, folders, index, health):
        app.include_router(module.router)
    docs.install(app)  # /docs and /redoc from bundled assets (no CDN)
    page.install(app)  # the web page at /
    _document_400_not_422(app)
    _install_middleware(app, server_settings)
    return app


def _install_middleware(app: FastAPI, server_settings: ServerSettings) -> None:
    """Added last = outermost: the request id exists before anything can refuse; the Host and Origin
    checks come before CORS, the body limit and every handler, keyless or not."""
    app.add_middleware(BodyLimitMiddleware, max_bytes=server_settings.max_body_bytes)
    if server_settings.allowed_origins:  # no CORS headers at all unless origins are listed
        app.add_middleware(CORSMiddleware, allow_origins=list(server_settings.allowed_origins),
                           allow_methods=["GET", "POST"], allow_headers=list(CORS_REQUEST_HEADERS),
                           expose_headers=list(CORS_EXPOSED_HEADERS))
    app.add_middleware(OriginCheckMiddleware, allowed_origins=server_settings.allowed_origins)
    app.add_middleware(HostCheckMiddleware, policy=HostPolicy.for_bind(
        server_settings.host, server_settings.port, server_settings.allowed_hosts))
    app.add_middleware(RequestIdMiddleware)


def _document_400_not_422(app: FastAPI) -> None:
    """Request validation errors are 400 here (server/errors.py): the schema says so, not FastAPI's 422;
    /v1 operations declare the API-key security schemes (so /docs offers 'Authorize')."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            for path, path_item in schema.get("paths", {}).items():
                for operation in path_item.values():
                    operation.get("responses", {}).pop("422", None)
                    if path.startswith("/v1/"):
                        operation["security"] = [{"bearer": []}, {"apiKeyHeader": []}]
            components = schema.setdefault("components", {})
            for unused in ("HTTPValidationError", "ValidationError"):
                components.get("schemas", {}).pop(unused, None)
            components["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A key from `ragpg keys create`."},
                "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            }
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app_from_env() -> FastAPI:
    """uvicorn `--factory` entry for worker processes: settings and runtime built here, per worker."""
    settings = load_settings()  # RAGPG_CONFIG / RAGPG_* / DATABASE_URL, as `ragpg serve` left them
    runtime = Runtime.from_settings(settings, pool_max_size=pool_size_for(settings.server.concurrency))
    return create_app(runtime, lifespan_close=True)
