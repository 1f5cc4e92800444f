"""POST /v1/index (start a background index run; 202 + run id) and GET /v1/index/{id} (progress)."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rag.ingest import index_runs
from ragpg_server.calls import Call, call, state_of
from ragpg_server.models import IndexRequest, IndexRunResponse
from ragpg_server.routes.common import errors

router = APIRouter(prefix="/v1", tags=["index"])


def _runner(request: Request) -> index_runs.IndexRunner:
    st = state_of(request)
    if st.index_runner is None:
        st.index_runner = index_runs.IndexRunner(st.runtime)
    return st.index_runner


@router.post("/index", status_code=202, response_model=IndexRunResponse, responses=errors(404, 409))
async def start_index(body: IndexRequest, request: Request) -> Any:
    """Start indexing registered vaults in the background; poll `GET /v1/index/{id}` for progress."""
    runner = _runner(request)

    def op(c: Call) -> dict[str, Any]:
        return runner.start(body.vaults, scope=c.scope).to_dict()

    run = await call(request, op, vaults=body.vaults, trace="index")
    payload = IndexRunResponse.model_validate(run).model_dump(mode="json")
    return JSONResponse(payload, status_code=202, headers={"Location": f"/v1/index/{payload['id']}"})


@router.get("/index/{run_id}", response_model=IndexRunResponse, responses=errors(404))
async def get_index_run(run_id: uuid.UUID, request: Request) -> dict[str, Any]:
    """A run's status and progress. Runs over vaults outside the key's scope are reported as not found."""

    def op(c: Call) -> dict[str, Any]:
        with c.runtime.connection() as conn:
            return index_runs.get_run(conn, run_id, scope=c.scope).to_dict()

    return await call(request, op, trace="index_status")
