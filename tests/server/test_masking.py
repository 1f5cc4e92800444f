"""Secrets are masked once, where chunk text leaves the database, so every surface shows the masked form:
POST /v1/context (context, chunks, evidence packs), /v1/search, /v1/ask, GET /v1/chunks, compute_context."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.compute import compute_context
from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.server.support import bearer

SECRETS = ("AKIAIOSFODNN7EXAMPLE", "sk-live-abcdefghijklmnop1234567890")
NOTE = (f"# Deploy\n\nThe deploy notes for tomatoes: key {SECRETS[0]} opens the bucket.\n\n"
        f"api_key = {SECRETS[1]} is the tomatoes payment token.\n")


@pytest.fixture
def admin_key(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> str:
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "deploy.md").write_text(NOTE)
    add_vault(conn, NewVault(name="v", path=tmp_path / "v"))
    conn.commit()
    assert not index_vaults(settings).failed
    return key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")[1]


def assert_masked(text: str) -> None:
    assert not any(s in text for s in SECRETS), text
    assert "REDACTED" in text, text


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/context", {"query": "tomatoes deploy bucket payment token", "mode": "base"}),
    ("/v1/search", {"query": "tomatoes deploy bucket payment token"}),
    ("/v1/ask", {"question": "what opens the tomatoes bucket", "debug": True}),
])
def test_every_http_read_shows_masked_text(client: TestClient, admin_key: str, path: str, body: dict) -> None:
    response = client.post(path, json=body, headers=bearer(admin_key))
    assert response.status_code == 200, response.text
    if path == "/v1/ask" and response.json()["abstained"]:
        pytest.fail("ask abstained on the one note that answers; the masking check needs an answer")
    assert_masked(response.text)


def test_chunk_fetch_shows_masked_text(client: TestClient, admin_key: str) -> None:
    response = client.get("/v1/chunks/v/deploy.md/0", headers=bearer(admin_key))
    assert response.status_code == 200, response.text
    assert_masked(response.json()["content"])


def test_compute_context_in_process_is_masked(admin_key: str, runtime: Runtime) -> None:
    result = compute_context("tomatoes deploy bucket payment token", mode="base", runtime=runtime)
    assert result.chunks
    for text in (result.context, *(r.candidate.content for r in result.chunks), str(result.evidence_full),
                 str(result.evidence_llm)):
        assert_masked(text)
