"""POST /v1/index starts a background run (202 + id); GET /v1/index/{id} reports its progress."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
from fastapi.testclient import TestClient

from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.server.support import bearer, row_counts
from tests.server.test_http import assert_error
from tests.support.files import write_files


def make_vault(conn: psycopg.Connection, root: Path, name: str, files: dict[str, str]) -> None:
    add_vault(conn, NewVault(name=name, path=write_files(root, files)))
    conn.commit()


def wait_for(client: TestClient, run_id: str, headers: dict[str, str] | None = None, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/v1/index/{run_id}", headers=headers).json()
        if run["status"] in ("succeeded", "failed"):
            return run
        time.sleep(0.1)
    raise AssertionError(f"index run {run_id} did not finish: {run}")


def test_index_run_lifecycle(client: TestClient, conn: psycopg.Connection, tmp_path: Path) -> None:
    make_vault(conn, tmp_path / "notes", "notes", {
        "a.md": "# Apples\n\nApples are red and crisp.\n",
        "dir/b.md": "---\nconfidentiality: internal\n---\n# Bananas\n\nBananas are yellow.\n",
    })
    resp = client.post("/v1/index", json={"vaults": ["notes"]})
    assert resp.status_code == 202, resp.text
    run = resp.json()
    assert run["status"] in ("queued", "running", "succeeded") and run["vaults"] == ["notes"]
    assert resp.headers["location"] == f"/v1/index/{run['id']}"
    done = wait_for(client, run["id"])
    assert done["status"] == "succeeded", done
    assert done["error"] is None and done["finished_at"]
    assert done["progress"]["vaults"]["notes"]["files_total"] == 2
    assert done["progress"]["report"]["files_indexed"] == 2
    vaults = client.get("/v1/vaults").json()["vaults"]
    assert vaults[0]["name"] == "notes" and vaults[0]["documents"] == 2 and vaults[0]["last_indexed_at"]
    # the chunks are now fetchable by reference
    assert client.get("/v1/chunks/notes/dir/b.md/0").json()["confidentiality"] == "internal"
    # omitting vaults indexes every registered vault (incremental: nothing changed)
    again = wait_for(client, client.post("/v1/index", json={}).json()["id"])
    assert again["status"] == "succeeded" and again["progress"]["report"]["files_unchanged"] == 2


def test_index_run_failure_is_recorded(client: TestClient, conn: psycopg.Connection, tmp_path: Path) -> None:
    make_vault(conn, tmp_path / "gone", "gone", {"a.md": "# A\n\ntext\n"})
    (tmp_path / "gone" / "a.md").unlink()
    (tmp_path / "gone").rmdir()
    run = client.post("/v1/index", json={"vaults": ["gone"]}).json()
    done = wait_for(client, run["id"])
    assert done["status"] == "failed" and "gone" in done["error"]


def test_index_errors(client: TestClient, conn: psycopg.Connection, tmp_path: Path) -> None:
    assert_error(client.post("/v1/index", json={}), 404, "not_found", "no registered vaults")
    assert_error(client.post("/v1/index", json={"vaults": ["nope"]}), 404, "not_found", "'nope'")
    assert_error(client.get("/v1/index/not-a-uuid"), 400, "invalid_request", "run_id")
    assert_error(client.get("/v1/index/00000000-0000-0000-0000-000000000000"), 404, "not_found")
    assert row_counts(conn)["index_runs"] == 0


def test_index_scoping(client: TestClient, conn: psycopg.Connection, tmp_path: Path) -> None:
    make_vault(conn, tmp_path / "one", "one", {"a.md": "# One\n\nfirst\n"})
    make_vault(conn, tmp_path / "two", "two", {"b.md": "# Two\n\nsecond\n"})
    _, admin = key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted",
                                    can_index=True)
    _, only_one = key_store.create_key(conn, "one", vaults=["one"], clearance="public", can_index=True)
    before = row_counts(conn)
    assert_error(client.post("/v1/index", json={"vaults": ["two"]}, headers=bearer(only_one)), 403, "forbidden",
                 "vault 'two'")
    assert_error(client.post("/v1/index", json={"vaults": ["one", "two"]}, headers=bearer(only_one)), 403,
                 "forbidden")
    assert_error(client.post("/v1/index", json={"vaults": ["two"]}), 401, "unauthorized")
    assert row_counts(conn) == before
    # no vaults named: only the key's vaults are indexed
    run = client.post("/v1/index", json={}, headers=bearer(only_one)).json()
    assert run["vaults"] == ["one"]
    assert wait_for(client, run["id"], bearer(only_one))["status"] == "succeeded"
    other = client.post("/v1/index", json={"vaults": ["two"]}, headers=bearer(admin)).json()
    # a run over a vault outside the key's scope does not exist for that key
    assert_error(client.get(f"/v1/index/{other['id']}", headers=bearer(only_one)), 404, "not_found")
    assert wait_for(client, other["id"], bearer(admin))["status"] == "succeeded"
