"""GET /v1/related/{vault}/{path}: the notes linked with one and the closest in meaning, each with why,
scoped by the key like every read (real notes indexed from disk)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.server.support import bearer
from tests.server.test_http import assert_error

NOTES = {
    "Ribbon.md": "# Ribbon\nThe ribbon holds buttons.\n",
    "Random note.md": "# Random note\nClick the dice in the [[Ribbon|ribbon]] to open a random note.\n",
    "Secret.md": "---\nconfidentiality: restricted\n---\n# Secret\nThe [[Ribbon]] hides the vault key.\n",
}


@pytest.fixture
def keys(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> dict[str, str]:
    for name, text in NOTES.items():
        (tmp_path / "v").mkdir(exist_ok=True)
        (tmp_path / "v" / name).write_text(text)
    add_vault(conn, NewVault(name="v", path=tmp_path / "v"))
    conn.commit()
    assert not index_vaults(settings).failed
    return {"admin": key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")[1],
            "public": key_store.create_key(conn, "public", vaults=["v"], clearance="public")[1]}


def test_related_notes_with_their_reasons(client: TestClient, keys: dict[str, str]) -> None:
    body = client.get("/v1/related/v/Ribbon.md", headers=bearer(keys["admin"])).json()
    assert body["vault"] == "v" and body["source_path"] == "Ribbon.md"
    by_path = {r["source_path"]: r["reasons"] for r in body["related"]}
    assert by_path["Random note.md"][0] == "links here with 'ribbon'"
    assert by_path["Secret.md"][0] == "links here with 'Ribbon'"


def test_a_public_key_sees_neither_the_restricted_note_nor_its_links(client: TestClient, keys: dict[str, str]) -> None:
    h = bearer(keys["public"])
    related = client.get("/v1/related/v/Ribbon.md", headers=h).json()["related"]
    assert [r["source_path"] for r in related] == ["Random note.md"]
    hidden = assert_error(client.get("/v1/related/v/Secret.md", headers=h), 404, "not_found")
    missing = assert_error(client.get("/v1/related/v/Nothing.md", headers=h), 404, "not_found")
    assert hidden["message"].replace("Secret", "X") == missing["message"].replace("Nothing", "X")


def test_bad_requests(client: TestClient, keys: dict[str, str]) -> None:
    h = bearer(keys["admin"])
    assert_error(client.get("/v1/related/v/Ribbon.md?k=0", headers=h), 400, "invalid_request", "k")
    assert_error(client.get("/v1/related/v/%2e%2e/%2e%2e/etc/passwd", headers=h), 400, "invalid_input", "path traversal")
    assert_error(client.get("/v1/related/nope/Ribbon.md", headers=h), 404, "not_found", "unknown vault 'nope'")
