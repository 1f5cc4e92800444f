"""Hostile or under-privileged callers of the HTTP API (issue 17, items 5, 9 and 13)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import psycopg
from fastapi.testclient import TestClient

from rag.ingest import index_runs
from rag.store import keys as key_store
from tests.server.conftest import LOCAL_URL
from tests.server.support import bearer
from tests.server.test_http import assert_error
from tests.server.test_index import make_vault, wait_for


def test_run_details_hide_file_names_below_top_clearance(client: TestClient, conn: psycopg.Connection,
                                                         tmp_path: Path) -> None:
    """Item 5: skips and warnings name files (here restricted ones), and counts include notes above the
    key's clearance: a public key sees the run's status, times and vaults only."""
    make_vault(conn, tmp_path / "v", "v", {
        "open.md": "open text\n",
        "secret-merger-plan.md": "---\nconfidentiality: restricted\ndate: 2026-02-30\n---\nplan\n",
        "secret-salaries.md": "\x00binary",
    })
    _, admin = key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted", can_index=True)
    _, public = key_store.create_key(conn, "public", vaults=["v"], clearance="public")
    run = client.post("/v1/index", json={"vaults": ["v"]}, headers=bearer(admin)).json()
    full = wait_for(client, run["id"], bearer(admin))
    assert full["status"] == "succeeded"
    assert "secret-merger-plan.md" in json.dumps(full) and "secret-salaries.md" in json.dumps(full)

    seen = client.get(f"/v1/index/{run['id']}", headers=bearer(public))
    assert seen.status_code == 200
    assert "secret" not in seen.text
    assert seen.json()["status"] == "succeeded" and seen.json()["vaults"] == ["v"]
    assert seen.json()["progress"] == {"details_hidden": index_runs.HIDDEN} and "clearance" in index_runs.HIDDEN
    assert_error(client.get(f"/v1/index/{run['id']}"), 401, "unauthorized")


def test_a_run_says_nothing_of_notes_above_the_keys_clearance(client: TestClient, conn: psycopg.Connection,
                                                               tmp_path: Path) -> None:
    """How many files a run saw, indexed or skipped counts notes a public key may not read: an edit
    to a restricted note must leave what that key sees of the next run as it was."""
    root = tmp_path / "v"
    make_vault(conn, root, "v", {
        "open.md": "---\nconfidentiality: public\n---\nopen text\n",
        "plan-a.md": "---\nconfidentiality: restricted\n---\nplan a\n",
        "plan-b.md": "---\nconfidentiality: restricted\n---\nplan b\n"})
    _, public = key_store.create_key(conn, "public", vaults=["v"], clearance="public", can_index=True)

    def seen_of_a_run() -> dict[str, object]:
        run = client.post("/v1/index", json={"vaults": ["v"]}, headers=bearer(public)).json()
        wait_for(client, run["id"], bearer(public))
        body = client.get(f"/v1/index/{run['id']}", headers=bearer(public)).json()
        return {k: v for k, v in body.items() if k not in ("id", "created_at", "finished_at")}

    first = seen_of_a_run()
    (root / "plan-b.md").write_text("---\nconfidentiality: restricted\n---\nplan b, longer now\n\nmore\n")
    assert seen_of_a_run() == first
    assert first["status"] == "succeeded" and "files" not in json.dumps(first["progress"])


def test_index_runs_need_an_index_key_and_queue_once_per_vault(app, client: TestClient, conn: psycopg.Connection,
                                                               runtime, tmp_path: Path) -> None:
    """Item 13: a read-only key cannot start runs; a vault has at most one queued run."""
    make_vault(conn, tmp_path / "v", "v", {"a.md": "a\n"})
    make_vault(conn, tmp_path / "w", "w", {"b.md": "b\n"})
    _, reader = key_store.create_key(conn, "reader", vaults=["v"], clearance="restricted")
    _, writer = key_store.create_key(conn, "writer", vaults=[], all_vaults=True, clearance="restricted",
                                     can_index=True)
    assert_error(client.post("/v1/index", json={"vaults": ["v"]}, headers=bearer(reader)), 403, "forbidden",
                 "may not start index runs")
    assert conn.execute("select count(*) as n from index_runs").fetchone()["n"] == 0

    release = threading.Event()

    def slow(rt, names, progress):
        release.wait(30)
        return index_runs.default_index_fn(rt, names, progress)

    app.state.ragpg.index_runner = index_runs.IndexRunner(runtime, index_fn=slow)
    try:
        first = client.post("/v1/index", json={"vaults": ["v"]}, headers=bearer(writer)).json()
        deadline = time.monotonic() + 10
        while client.get(f"/v1/index/{first['id']}", headers=bearer(writer)).json()["status"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        second = client.post("/v1/index", json={"vaults": ["v"]}, headers=bearer(writer))
        assert second.status_code == 202 and second.json()["status"] == "queued"
        for body in ({"vaults": ["v"]}, {"vaults": ["w", "v"]}, {}):
            assert_error(client.post("/v1/index", json=body, headers=bearer(writer)), 409, "conflict",
                         f"vault 'v' already has a queued index run ({second.json()['id']})")
        assert client.post("/v1/index", json={"vaults": ["w"]}, headers=bearer(writer)).status_code == 202
        assert conn.execute("select count(*) as n from index_runs").fetchone()["n"] == 3
    finally:
        release.set()
    assert wait_for(client, second.json()["id"], bearer(writer))["status"] == "succeeded"
    # once the queued run has started, the vault may be queued again
    assert client.post("/v1/index", json={"vaults": ["v"]}, headers=bearer(writer)).status_code == 202


def test_revoking_the_last_key_never_reopens_the_server(make_runtime, seeded: psycopg.Connection, db_url: str,
                                                        tmp_path: Path) -> None:
    """Item 9: `auto` is keyless only until the first key exists; keyless is otherwise an explicit setting."""
    from ragpg_server.app import create_app
    from tests.server.conftest import LOOPBACK

    def status(mode: str, headers: dict[str, str] | None = None) -> int:
        with TestClient(create_app(make_runtime(auth=mode)), base_url=LOCAL_URL, client=LOOPBACK) as c:
            return c.get("/v1/vaults", headers=headers).status_code

    assert status("auto") == 200  # a fresh install: keyless on loopback
    _, key = key_store.create_key(seeded, "only", vaults=["alpha"], clearance="public")
    assert (status("auto"), status("auto", bearer(key))) == (401, 200)
    key_store.revoke_key(seeded, "only")
    assert (status("auto"), status("auto", bearer(key))) == (401, 401)  # nobody gets in, not everybody
    assert (status("keys"), status("keyless")) == (401, 200)

    from tests.server.test_serve_cli import env_for, start, stop
    from tests.support.cli import ragpg

    proc, port = start(db_url, tmp_path)
    err = stop(proc)
    assert "auth: API key required on every request (server.auth = auto) — no active key exists" in err
    refused = ragpg("serve", "--host", "0.0.0.0", "--port", str(port),
                    env={**env_for(db_url, tmp_path), "RAGPG_SERVER__AUTH": "keyless"}, timeout=60)
    assert refused.returncode == 2 and "server.auth = keyless: refusing to serve on 0.0.0.0" in refused.stderr


def test_chunks_of_files_with_newline_or_backslash_in_their_names(client: TestClient, conn: psycopg.Connection,
                                                                  tmp_path: Path) -> None:
    """Item 14: such names are indexed, so their chunks must be fetchable (the path is only a DB key)."""
    make_vault(conn, tmp_path / "v", "v", {"line\nbreak.md": "# L\n\nnewline name\n",
                                           "back\\slash.md": "# B\n\nbackslash name\n",
                                           "tab\tand\x1bescape.md": "# T\n\ncontrol name\n"})
    run = client.post("/v1/index", json={"vaults": ["v"]}).json()
    assert wait_for(client, run["id"])["status"] == "succeeded"
    for encoded, text in (("line%0Abreak.md", "newline name"), ("back%5Cslash.md", "backslash name"),
                          ("tab%09and%1Bescape.md", "control name")):
        resp = client.get(f"/v1/chunks/v/{encoded}/0")
        assert resp.status_code == 200, resp.text
        assert text in resp.json()["content"]
    assert_error(client.get("/v1/chunks/v/notes%5C..%5Cline%0Abreak.md/0"), 404, "not_found")
    assert_error(client.get("/v1/chunks/v/..%2Fline%0Abreak.md/0"), 400, "invalid_input", "path traversal")
