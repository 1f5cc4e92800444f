"""/mcp on a real `ragpg serve` (uvicorn on loopback), driven by the SDK's streamable HTTP client:
the same tools behind the same doors as /v1 — API keys, vault scope and clearance, Host and Origin
checks — and bad calls answered as tool errors while the server keeps serving."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rag.config import Settings
from rag.errors import AuthError
from rag.runtime import Runtime
from ragpg_server.app import create_app, pool_size_for
from ragpg_server.mcp_http import SCOPE_STATE_KEY, HttpGate
from tests.mcp.bad_calls import check_bad_calls_then_a_good_one
from tests.mcp.conftest import FILES, NOT_MENTIONED, PUBLIC_MARK, RESTRICTED_MARK, WORK_MARK, Corpus
from tests.mcp.session import TOOL_NAMES, data, error_text, http_session, server_env
from tests.server.conftest import LOCAL_URL, LOOPBACK
from tests.server.test_serve_cli import start, stop

SECRET_QUERY = f"tomatoes launch code {RESTRICTED_MARK} watering"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "1"}}}
MISSING_KEY = "missing API key (send it as 'Authorization: Bearer <key>')"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def served(db_url: str, corpus: Corpus, tmp_path: Path) -> Iterator[str]:
    """The /mcp URL of `ragpg serve` over the corpus (keys exist, so every request needs one)."""
    proc: subprocess.Popen[str]
    proc, port = start(db_url, tmp_path, extra_env=server_env(db_url, tmp_path))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


def _notes(found: dict[str, Any], key: str = "passages") -> str:
    return str(found[key])


def test_every_tool_with_a_key_and_each_key_s_scope(served: str, corpus: Corpus) -> None:
    async def main() -> None:
        async with http_session(served, corpus.admin) as s:
            assert {t.name for t in (await s.list_tools()).tools} == TOOL_NAMES
            assert len((await s.list_resources()).resources) == 4
            assert (await s.read_resource("ragpg://work/meeting.md")).contents[0].text == FILES["work"]["meeting.md"]
            secret = data(await s.call_tool("search_notes", {"query": SECRET_QUERY}))
            assert RESTRICTED_MARK in _notes(secret)  # this key may: the public key below must not
            answer = data(await s.call_tool("ask_notes", {"question": "When should I water tomatoes?",
                                                          "vaults": ["garden"]}))
            assert "twice a week" in answer["answer"] and answer["sources"][0]["path"] == "tomatoes.md"
            context = data(await s.call_tool("get_context", {"query": "tomatoes watering", "vaults": ["garden"]}))
            assert context["citations"] and all(c["path"] in FILES["garden"] for c in context["citations"])
            note = data(await s.call_tool("read_note", {"vault": "garden", "path": "plans/secret.md"}))
            assert RESTRICTED_MARK in note["text"]
            assert [v["name"] for v in data(await s.call_tool("list_vaults", {}))["vaults"]] == ["garden", "work"]
            assert data(await s.call_tool("list_folders", {"vault": "garden"}))["folders"]
            related = data(await s.call_tool("related_notes", {"vault": "garden", "path": "tomatoes.md"}))["related"]
            assert related[0]["path"] == "plans/secret.md" and related[0]["reasons"][0] == "links here with 'tomatoes'"

        async with http_session(served, corpus.garden_public) as s:  # vault garden, public only
            related = data(await s.call_tool("related_notes", {"vault": "garden", "path": "tomatoes.md"}))["related"]
            assert related == []  # the restricted note's link and the internal note's meaning are both hidden
            assert error_text(await s.call_tool("related_notes", {"vault": "garden", "path": "plans/secret.md"})) == \
                "error: no note garden/plans/secret.md"
            for query in (SECRET_QUERY, "tomatoes roadmap codename spring"):
                found = data(await s.call_tool("search_notes", {"query": query, "k": 20}))
                assert found["passages"] and RESTRICTED_MARK not in _notes(found) and "plans/" not in _notes(found)
            answer = data(await s.call_tool("ask_notes", {"question": f"What is the launch code {RESTRICTED_MARK}?"}))
            # the no-coverage message repeats the question's own name ("... do not mention <it>."), nothing more
            assert RESTRICTED_MARK not in NOT_MENTIONED.sub("", str(answer))
            assert answer["abstained"]
            context = data(await s.call_tool("get_context", {"query": SECRET_QUERY}))
            assert RESTRICTED_MARK not in context["context"] + str(context["citations"])
            assert error_text(await s.call_tool("read_note", {"vault": "garden", "path": "plans/secret.md"})) == \
                "error: no note garden/plans/secret.md"
            assert [r.uri for r in (await s.list_resources()).resources] == ["ragpg://garden/tomatoes.md"]
            assert PUBLIC_MARK in (await s.read_resource("ragpg://garden/tomatoes.md")).contents[0].text
            assert [(v["name"], v["documents"]) for v in data(await s.call_tool("list_vaults", {}))["vaults"]] == \
                [("garden", 1)]
            assert error_text(await s.call_tool("search_notes", {"query": "meeting", "vaults": ["work"]})) == \
                "error: this key may not read vault 'work'"

        async with http_session(served, corpus.work) as s:  # a key for another vault
            for tool, arguments in (("search_notes", {"query": "tomatoes", "vaults": ["garden"]}),
                                    ("ask_notes", {"question": "tomatoes?", "vaults": ["garden"]}),
                                    ("get_context", {"query": "tomatoes", "vaults": ["garden"]}),
                                    ("read_note", {"vault": "garden", "path": "tomatoes.md"}),
                                    ("related_notes", {"vault": "garden", "path": "tomatoes.md"}),
                                    ("list_folders", {"vault": "garden"})):
                assert error_text(await s.call_tool(tool, arguments)) == "error: this key may not read vault 'garden'"
            everything = data(await s.call_tool("search_notes", {"query": "tomatoes watering meeting", "k": 20}))
            assert {h["vault"] for h in everything["passages"]} == {"work"} and WORK_MARK in _notes(everything)
            with pytest.raises(Exception, match="this key may not read vault 'garden'"):
                await s.read_resource("ragpg://garden/tomatoes.md")

    anyio.run(main)


def test_no_key_a_bad_key_another_host_or_origin_are_refused(served: str, corpus: Corpus) -> None:
    def post(headers: dict[str, str]) -> httpx.Response:
        return httpx.post(served, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=30)

    no_key = post({})  # the status, headers and message of /v1, in a JSON-RPC error an MCP client shows
    assert no_key.status_code == 401 and no_key.headers["www-authenticate"] == 'Bearer realm="ragpg"'
    assert no_key.json()["error"] == {"code": -32600, "message": MISSING_KEY,
                                      "data": {"status": 401, "code": "unauthorized"}}
    for bad in ({"Authorization": "Bearer rpg_not-a-key"}, {"X-API-Key": "rpg_not-a-key"}):
        refused = post(bad)
        assert refused.status_code == 401 and refused.json()["error"]["message"] == "invalid or revoked API key"
    assert post({"Authorization": "Basic abc"}).status_code == 401
    port = served.split(":")[2].split("/")[0]
    assert post({"Authorization": f"Bearer {corpus.admin}", "Host": f"evil.example:{port}"}).status_code == 421
    cross = post({"Authorization": f"Bearer {corpus.admin}", "Origin": "https://evil.example"})
    assert cross.status_code == 403 and cross.json()["error"]["code"] == "cross_origin_refused"
    assert httpx.get(served, headers={"Authorization": f"Bearer {corpus.admin}"}).status_code == 405
    welcome = post({"Authorization": f"Bearer {corpus.admin}"})  # the same request with a key is served
    assert welcome.status_code == 200 and welcome.json()["result"]["serverInfo"]["name"] == "ragpg"

    async def sdk_without_key() -> None:
        async with http_session(served, None):
            pass

    with pytest.raises(BaseException) as failed:
        anyio.run(sdk_without_key)
    assert f"MCPError: {MISSING_KEY}" in _messages(failed.value)


def _messages(exc: BaseException) -> list[str]:
    """The messages inside (nested) exception groups, and their causes."""
    out: list[str] = []
    pending = [exc]
    while pending:
        e = pending.pop()
        out.append(f"{type(e).__name__}: {e}")
        pending.extend(getattr(e, "exceptions", ()))
        if e.__cause__ is not None:
            pending.append(e.__cause__)
    return out


def test_bad_calls_in_a_row_then_a_good_one_over_http(served: str, corpus: Corpus) -> None:
    async def main() -> None:
        async with http_session(served, corpus.admin) as session:
            await check_bad_calls_then_a_good_one(session)

    anyio.run(main)


def test_a_call_without_an_authenticated_request_is_refused() -> None:
    """The tools read the scope the endpoint left on the request; without one they fail closed."""
    gate = HttpGate(state=None)  # type: ignore[arg-type]  # never reached: the check comes first
    for request in (None, SimpleNamespace(state=SimpleNamespace()),
                    SimpleNamespace(state=SimpleNamespace(**{SCOPE_STATE_KEY: "restricted"}))):
        with pytest.raises(AuthError, match="did not come through an authenticated /mcp request"):
            anyio.run(gate.run, SimpleNamespace(request=request), lambda caller: caller)


def test_without_the_mcp_extra_mcp_says_which_to_install(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as on an install without the extra
    runtime = Runtime.from_settings(settings, pool_max_size=pool_size_for(settings.server.concurrency))
    try:
        with TestClient(create_app(runtime), base_url=LOCAL_URL, client=LOOPBACK) as client:
            response = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            assert response.status_code == 501
            assert response.json()["error"]["message"] == (
                "the /mcp endpoint needs the 'mcp' extra: pip install 'ragpg[mcp]' (missing: mcp)")
            assert client.get("/healthz").status_code == 200  # the rest of the server runs as before
    finally:
        runtime.close()


def test_the_handshake_free_protocol_revision_gets_the_same_scope(served: str, corpus: Corpus) -> None:
    """A client on the 2026 revision (each POST self-contained, `server/discover` instead of
    `initialize`) reaches the tools another way inside the SDK; the key's scope still applies."""
    async def snippets(key: str) -> tuple[str, str, list[str]]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http, \
                Client(streamable_http_client(served, http_client=http), mode="auto") as client:
            found = data(await client.call_tool("search_notes", {"query": f"launch code {RESTRICTED_MARK}"}))
            uris = [r.uri for r in (await client.list_resources()).resources]
            return client.protocol_version or "", _notes(found), uris

    version, admin, admin_uris = anyio.run(snippets, corpus.admin)
    assert version.startswith("2026") and RESTRICTED_MARK in admin and len(admin_uris) == 4
    _, public, public_uris = anyio.run(snippets, corpus.garden_public)
    assert RESTRICTED_MARK not in public and public_uris == ["ragpg://garden/tomatoes.md"]


def test_a_listed_web_origin_may_call_mcp_from_a_browser(settings: Settings) -> None:
    """With server.allowed_origins, a browser MCP client's preflight names the protocol's own header
    (MCP-Protocol-Version, sent on every request after the first) and is allowed, as for /v1."""
    origin = "https://app.example.org"
    server = settings.server.model_copy(update={"allowed_origins": (origin,)})
    runtime = Runtime.from_settings(settings.model_copy(update={"server": server}),
                                    pool_max_size=pool_size_for(server.concurrency))
    try:
        with TestClient(create_app(runtime), base_url=LOCAL_URL, client=LOOPBACK) as client:
            preflight = client.options("/mcp", headers={
                "Origin": origin, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version"})
            assert preflight.status_code == 200, preflight.text
            assert "mcp-protocol-version" in preflight.headers["access-control-allow-headers"].lower()
            refused = client.options("/mcp", headers={"Origin": "https://evil.example",
                                                      "Access-Control-Request-Method": "POST"})
            assert refused.status_code == 403
    finally:
        runtime.close()
