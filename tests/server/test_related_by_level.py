"""GET /v1/related on a vault of mixed levels (issue 48): each key follows the links its clearance
resolves, so an internal key sees a public note's link to an internal note, a public key neither the
link nor the note, and a full-access key every link (real notes indexed from disk; the scoped keys
read through row-level security)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.ingest_db.test_links_by_level import HIDDEN_NOTES, PUBLIC_NOTES
from tests.server.support import bearer
from tests.support.files import write_files


@pytest.fixture
def keys(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> dict[str, str]:
    add_vault(conn, NewVault(name="v", path=write_files(tmp_path / "v", {**PUBLIC_NOTES, **HIDDEN_NOTES})))
    conn.commit()
    assert not index_vaults(settings).failed
    return {level: key_store.create_key(conn, level, vaults=["v"], clearance=level)[1]
            for level in ("public", "internal")} | {
        "admin": key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")[1]}


def linked(client: TestClient, key: str, path: str) -> dict[str, list[str]]:
    body: dict[str, Any] = client.get(f"/v1/related/v/{path}", headers=bearer(key)).json()
    return {r["source_path"]: r["reasons"] for r in body["related"]
            if any(reason.startswith(("links here", "linked from here")) for reason in r["reasons"])}


@pytest.mark.security
def test_each_key_follows_the_links_its_clearance_resolves(client: TestClient, keys: dict[str, str]) -> None:
    assert set(linked(client, keys["admin"], "Public/Roadmap.md")) == {
        "Team/Project Heron.md", "Finance/Budget.md", "Welcome.md"}
    internal = linked(client, keys["internal"], "Public/Roadmap.md")
    assert set(internal) == {"Team/Project Heron.md", "Welcome.md"}
    assert internal["Team/Project Heron.md"][0] == "linked from here with 'Project Heron'"
    assert set(linked(client, keys["internal"], "Team/Project Heron.md")) == {
        "Public/Roadmap.md", "Boards/Plan.canvas", "Welcome.md"}
    public = client.get("/v1/related/v/Public/Roadmap.md", headers=bearer(keys["public"])).json()["related"]
    assert {r["source_path"] for r in public} <= set(PUBLIC_NOTES)
    assert set(linked(client, keys["public"], "Public/Roadmap.md")) == {"Welcome.md"}
