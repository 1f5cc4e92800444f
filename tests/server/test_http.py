"""Plumbing every endpoint shares: health, OpenAPI, request ids, the error envelope, bad input."""

from __future__ import annotations

import json

import psycopg
from fastapi.testclient import TestClient

from rag.config import Settings
from rag.runtime import Runtime
from ragpg_server.app import create_app
from tests.server.conftest import LOCAL_URL, LOOPBACK, with_server
from tests.server.support import Keys, bearer, row_counts


def assert_error(resp, status: int, code: str, *needles: str) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == code, body
    for needle in needles:
        assert needle in body["error"]["message"], body
    assert resp.headers.get("x-request-id")
    return body["error"]


def test_healthz_ok(client: TestClient) -> None:
    resp = client.get("/healthz")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "ok" and body["database"] is True and body["schema_current"] is True
    assert body["schema_revision"] == body["schema_head"]


def test_healthz_needs_no_key_even_with_keys(client: TestClient, keys: Keys) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/v1/vaults").status_code == 401


def test_healthz_503_when_database_unreachable(settings: Settings) -> None:
    bad = settings.model_copy(update={"database_url": "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1"})
    rt = Runtime.from_settings(bad, pool_max_size=10)
    with TestClient(create_app(rt), base_url=LOCAL_URL, client=LOOPBACK) as c:
        resp = c.get("/healthz")
        assert resp.status_code == 503
        assert resp.json()["database"] is False and resp.json()["status"] == "unavailable"
        # the /v1 routes say the same through the error envelope
        assert_error(c.get("/v1/vaults"), 503, "database_unavailable", "database")


def test_healthz_503_when_schema_behind(client: TestClient, conn: psycopg.Connection) -> None:
    conn.execute("update alembic_version set version_num = '0001'")
    conn.commit()
    resp = client.get("/healthz")
    assert resp.status_code == 503
    assert resp.json()["schema_current"] is False and "ragpg db upgrade" in resp.json()["message"]


def test_openapi_and_docs(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/v1/context", "/v1/ask", "/v1/search", "/v1/chunks/{vault}/{source_path}/{ordinal}",
                 "/v1/vaults", "/v1/index", "/v1/index/{run_id}", "/healthz"):
        assert path in spec["paths"], path
    assert client.get("/docs").status_code == 200


def test_request_id_generated_and_echoed(client: TestClient) -> None:
    generated = client.get("/healthz").headers["x-request-id"]
    assert len(generated) == 32
    assert client.get("/healthz", headers={"X-Request-ID": "abc-123"}).headers["x-request-id"] == "abc-123"
    # a hostile id is replaced, never echoed
    hostile = client.get("/healthz", headers={"X-Request-ID": "x" * 500}).headers["x-request-id"]
    assert hostile != "x" * 500 and len(hostile) == 32


def test_unknown_route_and_method(client: TestClient) -> None:
    assert_error(client.get("/v1/nothing"), 404, "not_found", "/v1/nothing")
    assert_error(client.get("/v1/search"), 405, "method_not_allowed")


def test_malformed_json(client: TestClient, seeded: psycopg.Connection) -> None:
    before = row_counts(seeded)
    resp = client.post("/v1/search", content=b'{"query": "x",', headers={"content-type": "application/json"})
    assert_error(resp, 400, "invalid_request", "not valid JSON")
    resp = client.post("/v1/index", content=b"not json", headers={"content-type": "application/json"})
    assert_error(resp, 400, "invalid_request", "not valid JSON")
    assert row_counts(seeded) == before


def test_body_must_be_an_object(client: TestClient) -> None:
    assert_error(client.post("/v1/search", json=["query"]), 400, "invalid_request", "JSON object")
    assert_error(client.post("/v1/search"), 400, "invalid_request", "required")


def test_wrong_types_name_the_field(client: TestClient) -> None:
    err = assert_error(client.post("/v1/search", json={"query": "x", "k": "10"}), 400, "invalid_request", "'k'")
    assert err["details"][0]["field"] == "k"
    assert_error(client.post("/v1/context", json={"query": 5}), 400, "invalid_request", "'query'")
    assert_error(client.post("/v1/context", json={"query": "x", "budget_tokens": -1}), 400, "invalid_request",
                 "'budget_tokens'")
    assert_error(client.post("/v1/context", json={"query": "x", "mode": "yolo"}), 400, "invalid_request", "'mode'")
    assert_error(client.post("/v1/ask", json={"query": "x", "vaults": "alpha"}), 400, "invalid_request",
                 "'vaults'")
    assert_error(client.post("/v1/search", json={"query": "x", "vaults": ["../etc"]}), 400, "invalid_request",
                 "'vaults.0'")
    assert_error(client.post("/v1/search", json={"query": "nul\u0000byte"}), 400, "invalid_request", "NUL")
    assert_error(client.post("/v1/search", json={"query": "x", "filters": {"a\u0000": 1}}), 400,
                 "invalid_request", "'filters'")


def test_missing_and_unknown_fields(client: TestClient, seeded: psycopg.Connection) -> None:
    before = row_counts(seeded)
    assert_error(client.post("/v1/search", json={}), 400, "invalid_request", "'query' is required")
    assert_error(client.post("/v1/search", json={"query": "x", "limit": 3}), 400, "invalid_request",
                 "unknown field 'limit'")
    assert_error(client.post("/v1/index", json={"vaults": ["alpha"], "force": True}), 400, "invalid_request",
                 "unknown field 'force'")
    assert row_counts(seeded) == before


def test_oversize_body_413_before_parsing(make_runtime, seeded: psycopg.Connection) -> None:
    rt = make_runtime(max_body_bytes=1024)
    before = row_counts(seeded)
    with TestClient(create_app(rt), base_url=LOCAL_URL, client=LOOPBACK) as c:
        big = json.dumps({"query": "x" * 2000}).encode()
        assert_error(c.post("/v1/search", content=big, headers={"content-type": "application/json"}), 413,
                     "payload_too_large", "limit is 1024 bytes")
        # an oversize body that is not even JSON is refused the same way (nothing parses it)
        assert_error(c.post("/v1/index", content=b"\xff" * 5000), 413, "payload_too_large")

        # a chunked body without Content-Length is counted as it arrives
        def gen():
            for _ in range(10):
                yield b"x" * 200

        assert_error(c.post("/v1/search", content=gen(), headers={"content-type": "application/json"}), 413,
                     "payload_too_large", "request body is over 1024 bytes; the limit is 1024 bytes")
        # just under the limit still parses (and fails validation normally)
        assert c.post("/v1/search", json={"query": ""}).status_code == 400
    assert row_counts(seeded) == before


def test_with_server_helper(settings: Settings) -> None:
    assert with_server(settings, concurrency=3).server.concurrency == 3


def test_errors_carry_request_id_and_bearer_hint(client: TestClient, keys: Keys) -> None:
    resp = client.get("/v1/vaults", headers={"X-Request-ID": "req-1"})
    assert resp.status_code == 401 and resp.headers["x-request-id"] == "req-1"
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/v1/vaults", headers=bearer(keys.admin)).status_code == 200


def test_response_models_refuse_a_field_they_do_not_declare() -> None:
    """A field an internal to_dict() grows fails loudly instead of being dropped (or leaked)."""
    import pydantic
    import pytest

    from rag.notes.results import SearchResponse
    from ragpg_server.models import HealthResponse, IndexRunResponse

    run = {"id": "x", "status": "queued", "vaults": [], "progress": {}, "created_at": "2026-01-01T00:00:00Z"}
    IndexRunResponse.model_validate(run)
    for model, body in ((IndexRunResponse, run), (HealthResponse, {"status": "ok", "database": True}),
                        (SearchResponse, {"query": "q", "items": []})):
        with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
            model.model_validate({**body, "internal": 1})
