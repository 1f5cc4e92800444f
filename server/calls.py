"""The one path every /v1 request takes after parsing: admit → authenticate → authorise → call
ONE rag function in a worker thread → hand the result back for serialisation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import Request

from rag.access import Scope
from rag.config import Settings
from rag.llm_budget import Cancellation, llm_cancellation
from rag.runtime import Runtime
from ragpg_server.admission import Admission
from ragpg_server.auth import authorize_vaults, presented_key, resolve_principal

T = TypeVar("T")


@dataclass
class ServerState:
    runtime: Runtime
    admission: Admission  # /v1 requests
    llm_admission: Admission  # the lane of those that may wait on the LLM (server.llm_concurrency)
    health_admission: Admission  # /healthz: one check at a time
    schema_head: str | None = None
    index_runner: Any = None  # rag.ingest.index_runs.IndexRunner, created on first use

    @property
    def settings(self) -> Settings:
        return self.runtime.settings


@dataclass(frozen=True)
class Call:
    """What a route's operation receives: the caller's scope and the request id for tracing."""

    scope: Scope
    request_id: str
    runtime: Runtime
    principal: str | None


def state_of(request: Request) -> ServerState:
    return request.app.state.ragpg


def request_id(request: Request) -> str:
    return (request.scope.get("state") or {}).get("request_id") or ""


async def call(request: Request, op: Callable[[Call], T], *, vaults: Sequence[str] | None = None,
               trace: str | None = None, uses_llm: bool = False) -> T:
    """Run `op` for this request under admission control, with the caller's scope.

    Authentication touches the database, so it runs inside the admitted worker thread too: a
    flood of requests never queues on the connection pool.

    Retrieval operations (rag.compute_context / ask / search) open the request's `rag:root` span
    themselves, under the request id; for the other operations `trace` names the operation and
    the span is opened here, so every admitted, authenticated request is one `rag:root` trace.
    """
    st = state_of(request)
    key = presented_key(request.headers)  # a malformed header fails before admission
    client = request.client.host if request.client else None
    rid = request_id(request)
    rt = st.runtime

    def work() -> T:
        server = st.settings.server
        # On the primary, never a read replica: a key revoked a moment ago must already be refused.
        with rt.connection(autocommit=True) as conn:
            principal = resolve_principal(conn, key, client, server.auth, server.key_touch_interval_s)
        authorize_vaults(principal.scope, vaults)
        c = Call(scope=principal.scope, request_id=rid, runtime=rt, principal=principal.key_name)
        if trace is None:
            return op(c)
        with rt.tracer.root(request_id=rid, query=f"{request.method} {request.url.path}", mode=trace):
            return op(c)

    if uses_llm and st.settings.llm.model:
        return await run_llm_bound(st, work, request)
    return await st.admission.run(work)


async def run_llm_bound(st: ServerState, work: Callable[[], T], request: Request | None = None) -> T:
    """`work` in the LLM lane (server.llm_concurrency of the admission's threads at most, so routes that
    never call the model keep the rest); a client that hangs up cancels its LLM calls in flight."""
    with llm_cancellation() as cancellation:  # seen by the worker thread (contextvars are copied)
        watcher = asyncio.ensure_future(_cancel_on_disconnect(request, cancellation)) if request else None
        try:
            return await st.llm_admission.run(work, within=st.admission)
        finally:
            if watcher is not None:
                watcher.cancel()


async def _cancel_on_disconnect(request: Request, cancellation: Cancellation) -> None:
    # The body is read by now: what the server receives next is the client going away.
    while (await request.receive())["type"] != "http.disconnect":
        pass
    cancellation.cancel()
