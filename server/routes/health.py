"""GET /healthz: database reachable and schema current, and the read replica reachable when one is
configured (no auth; its own one-slot admission)."""

from __future__ import annotations

from typing import Any

import psycopg
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from rag.errors import DatabaseError
from rag.store import migrate
from ragpg_server.calls import state_of
from ragpg_server.models import HealthResponse

router = APIRouter(tags=["health"])

@router.get("/healthz", response_model=HealthResponse, responses={503: {"model": HealthResponse}})
async def healthz(request: Request) -> Any:
    """200 when the database answers and its schema is at the head revision; 503 otherwise."""
    st = state_of(request)
    head = st.schema_head

    def check() -> tuple[int, dict[str, Any]]:
        try:
            # The runtime's connection: fails at once during an outage, and probes for the way back.
            with st.runtime.connection() as conn:
                revision = migrate.current_revision(conn)
        except (DatabaseError, psycopg.Error) as exc:
            return 503, {"status": "unavailable", "database": False, "schema_head": head,
                         "message": str(exc).strip().splitlines()[0] if str(exc).strip() else "database unavailable"}
        current = revision == head
        body = {"status": "ok" if current else "unavailable", "database": True, "schema_revision": revision,
                "schema_head": head, "schema_current": current}
        if not current:
            body["message"] = f"schema at revision {revision}, expected {head}: run `ragpg db upgrade`"
        if st.runtime.has_read_replica:  # retrieval reads are served there: unreachable means not serving
            try:
                with st.runtime.connection(read=True) as conn:
                    migrate.current_revision(conn)
                body["read_replica"] = True
            except (DatabaseError, psycopg.Error) as exc:
                body.update(status="unavailable", read_replica=False,
                            message=str(exc).strip().splitlines()[0] if str(exc).strip() else "read replica unavailable")
                return 503, body
        return (200 if current else 503), body

    # One health check at a time holds a pooled connection (the pool's headroom over `concurrency`),
    # so a burst of probes never takes connections the admitted /v1 requests rely on.
    status, body = await st.health_admission.run(check)
    return JSONResponse(HealthResponse(**body).model_dump(mode="json"), status_code=status)
