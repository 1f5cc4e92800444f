"""A note named the way its reader names it — a path, the path without .md, a unique file name, an
alias — on every door that takes a note (`ragpg related`, GET /v1/related and /v1/chunks, the MCP tools
read_note and related_notes); an ambiguous name lists the candidates; a note above the reader's
clearance never makes a name ambiguous or resolvable for that reader. Real notes indexed from disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.access import Scope
from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from ragpg_server.mcp_server import LocalGate, NotesServer
from tests.server.support import bearer
from tests.server.test_http import assert_error
from tests.support.cli import ragpg_env, run_in_process, use_ragpg_env
from tests.support.files import write_files

NOTES = {
    "Projects/Project Heron.md": "---\naliases: [Heron]\n---\n# Project Heron\n\n## Timeline\n\nHeron ships in May.\n",
    "Projects/Kestrel.md": "---\naliases: [Kes]\n---\n# Kestrel\n\nKestrel waits for [[Project Heron]].\n",
    "Areas/Plan.md": "# Plan\n\nThe areas plan.\n",
    "Projects/Plan.md": "# Plan\n\nThe projects plan.\n",
}
# A restricted namesake of Project Heron, by file name and by alias.
HIDDEN = {"Archive/Project Heron.md": "---\nconfidentiality: restricted\naliases: [Heron]\n---\n# Old Heron\n\nShelved.\n"}
HERON, KESTREL = "Projects/Project Heron.md", "Projects/Kestrel.md"


@pytest.fixture
def vault(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> Path:
    root = write_files(tmp_path / "v", NOTES)
    add_vault(conn, NewVault(name="v", path=root))
    conn.commit()
    assert not index_vaults(settings).failed
    return root


def _add_hidden_namesake(root: Path, settings: Settings) -> None:
    write_files(root, HIDDEN)
    assert not index_vaults(settings).failed


@pytest.fixture
def keys(conn: psycopg.Connection, vault: Path) -> dict[str, str]:
    return {"admin": key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")[1],
            "public": key_store.create_key(conn, "public", vaults=["v"], clearance="public")[1]}


@pytest.mark.parametrize("name", ["Projects/Kestrel.md", "Projects/Kestrel", "projects/kestrel.MD", "Kestrel",
                                  "Kes", "kes"])
def test_every_form_of_a_name_resolves_over_http(client: TestClient, keys: dict[str, str], name: str) -> None:
    h = bearer(keys["public"])
    related = client.get(f"/v1/related/v/{name}", headers=h)
    assert related.status_code == 200, related.text
    assert related.json()["source_path"] == KESTREL
    assert [r["source_path"] for r in related.json()["related"]][0] == HERON  # its link, resolved
    chunk = client.get(f"/v1/chunks/v/{name}/0", headers=h)
    assert chunk.status_code == 200, chunk.text
    assert chunk.json()["source_path"] == KESTREL


def test_an_ambiguous_name_is_a_409_listing_the_candidates(client: TestClient, keys: dict[str, str]) -> None:
    h = bearer(keys["public"])
    for url in ("/v1/related/v/Plan", "/v1/chunks/v/Plan/0"):
        error = assert_error(client.get(url, headers=h), 409, "ambiguous_name", "Areas/Plan.md", "Projects/Plan.md")
        assert error["message"].startswith("'Plan' names 2 notes")
    assert_error(client.get("/v1/related/v/Nowhere", headers=h), 404, "not_found", "no note v/Nowhere")
    assert_error(client.get("/v1/related/v/Projects", headers=h), 404, "not_found")  # a folder is not a note


@pytest.mark.security
def test_a_hidden_namesake_changes_nothing_a_public_reader_resolves(client: TestClient, keys: dict[str, str],
                                                                   vault: Path, settings: Settings) -> None:
    public, admin = bearer(keys["public"]), bearer(keys["admin"])
    names = ["Project Heron", "Heron", "Projects/Project Heron", "Archive/Project Heron", "Old Heron"]

    def seen() -> list[tuple[int, Any]]:
        out = []
        for name in names:
            for url in (f"/v1/related/v/{name}", f"/v1/chunks/v/{name}/0"):
                r = client.get(url, headers=public)
                body = r.json()
                out.append((r.status_code, body.get("source_path") or body["error"]["message"]))
        return out

    before = seen()
    assert before[0] == (200, HERON) and before[2] == (200, HERON)  # by name, by alias
    _add_hidden_namesake(vault, settings)
    assert seen() == before
    # the owner's key reads both notes, so for it the name and the alias are ambiguous
    for name in ("Project Heron", "Heron"):
        assert_error(client.get(f"/v1/related/v/{name}", headers=admin), 409, "ambiguous_name",
                     "Archive/Project Heron.md", HERON)
    assert client.get("/v1/chunks/v/Archive/Project Heron/0", headers=admin).json()["source_path"] == \
        "Archive/Project Heron.md"


def test_ragpg_related_takes_a_name_and_lists_the_candidates_of_an_ambiguous_one(
        vault: Path, db_url: str, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    use_ragpg_env(monkeypatch, ragpg_env(db_url, tmp_path))
    for name in ("Project Heron", "Heron", "Projects/Project Heron", "project heron.md"):
        code, out, err = run_in_process(capsys, "related", name, "--json")
        assert code == 0, (name, err)
        assert json.loads(out)["source_path"] == HERON
    code, out, err = run_in_process(capsys, "related", "Kestrel")
    assert code == 0 and out.startswith(HERON), err
    code, out, err = run_in_process(capsys, "related", "Plan")
    assert (code, out) == (4, "")
    assert err == "error: 'Plan' names 2 notes: Areas/Plan.md, Projects/Plan.md; name one by its path\n"
    _add_hidden_namesake(vault, settings)  # the owner reads it: the name now fits two notes
    code, out, err = run_in_process(capsys, "related", "Project Heron")
    assert code == 4 and out == "" and len(err.splitlines()) == 1
    assert "Archive/Project Heron.md" in err and HERON in err


def _call(runtime: Runtime, scope: Scope, tool: str, **arguments: Any) -> types.CallToolResult:
    server = NotesServer(runtime.settings, LocalGate(runtime, scope))
    params = types.CallToolRequestParams(name=tool, arguments=arguments)
    return anyio.run(server.call_tool, None, params)  # LocalGate never reads the context


@pytest.mark.parametrize("name", ["Kes", "Kestrel", "Projects/Kestrel"])
def test_the_mcp_tools_take_a_name(runtime: Runtime, vault: Path, name: str) -> None:
    public = Scope(vaults=("v",), clearance="public")
    note = _call(runtime, public, "read_note", vault="v", path=name)
    assert not note.is_error and note.structured_content is not None, note.content
    assert note.structured_content["path"] == KESTREL
    related = _call(runtime, public, "related_notes", vault="v", path=name)
    assert not related.is_error and related.structured_content is not None, related.content
    assert related.structured_content["path"] == KESTREL


def test_an_ambiguous_name_is_a_tool_error_listing_the_candidates(runtime: Runtime, vault: Path,
                                                                  settings: Settings) -> None:
    public, owner = Scope(vaults=("v",), clearance="public"), Scope.unrestricted()
    for tool in ("read_note", "related_notes"):
        result = _call(runtime, public, tool, vault="v", path="Plan")
        assert result.is_error and isinstance(result.content[0], types.TextContent)
        assert result.content[0].text == ("error: 'Plan' names 2 notes: Areas/Plan.md, Projects/Plan.md; "
                                          "name one by its path")
    _add_hidden_namesake(vault, settings)
    assert _call(runtime, public, "read_note", vault="v", path="Heron").structured_content["path"] == HERON  # type: ignore[index]
    assert _call(runtime, owner, "read_note", vault="v", path="Heron").is_error
