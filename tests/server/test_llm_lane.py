"""LLM work never freezes the server (issue 47): with `/v1/ask` requests stuck on an endpoint that
trickles its reply one byte at a time, the routes that never call the model (health, vaults, chunks,
search, MCP read_note) answer at once, each ask
ends within `llm.deadline_s` with a quoted answer, and a client that hangs up cancels its LLM call.
A real uvicorn on loopback, the real litellm client, a trickling stub."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from rag.config import LLMSettings, ServerSettings, Settings
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from ragpg_server.app import llm_slots
from tests.server.conftest import with_server
from tests.server.rawhttp import request_bytes
from tests.server.support import bearer
from tests.support.files import write_files
from tests.support.llm_stub import LLMStub

pytestmark = pytest.mark.security

NOTES = {
    "garden/tomatoes.md": "# Tomatoes\n\nTomatoes need full sun and watering twice a week in summer.\n",
    "garden/basil.md": "# Basil\n\nBasil grows next to tomatoes and needs warm nights.\n",
    "plans/roadmap.md": "# Roadmap\n\nThe greenhouse opens in spring; tomatoes move in during May.\n",
}
QUESTION = "How often do tomatoes need watering?"
DEADLINE_SAID = "llm deadline"  # what the decision record and trace say when the budget ran out
IN_FLIGHT = 10
TRICKLE_S = 0.5
# Generous bounds for a loaded 2-core machine: idle, these routes answer in milliseconds; the
# trickled replies would take minutes.
QUICK_S = 5.0
SLACK_S = 10.0


@dataclass
class Served:
    url: str
    port: int
    key: str
    stub: LLMStub


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def notes_key(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> str:
    add_vault(conn, NewVault(name="home", path=write_files(tmp_path / "home", NOTES)))
    conn.commit()
    report = index_vaults(settings)
    assert not report.failed, report.to_dict()
    return key_store.create_key(conn, "public-reader", vaults=["home"], clearance="public")[1]


@contextmanager
def serve(settings: Settings, stub: LLMStub, key: str, deadline_s: float) -> Iterator[Served]:
    import uvicorn

    from ragpg_server.app import create_app, pool_size_for

    port = free_port()
    s = with_server(settings, host="127.0.0.1", port=port).model_copy(update={"llm": LLMSettings(
        model="openai/stub", api_base=f"{stub.url}/v1", api_key="sk-test", timeout_s=30.0, deadline_s=deadline_s)})
    rt = Runtime.from_settings(s, pool_max_size=pool_size_for(s.server.concurrency))
    server = uvicorn.Server(uvicorn.Config(create_app(rt), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{port}", port, key, stub)
    finally:
        stub.stop()  # ends the trickles, so the server's last calls finish
        server.should_exit = True
        thread.join(timeout=30)
        rt.close()


@pytest.fixture
def trickling() -> Iterator[LLMStub]:
    with LLMStub(default_reply="Tomatoes need watering twice a week [1].") as stub:
        stub.trickle_s = TRICKLE_S
        yield stub


def timed_get(client: httpx.Client, path: str, key: str | None = None) -> tuple[float, int]:
    started = time.monotonic()
    status = client.get(path, headers=bearer(key) if key else {}).status_code
    return time.monotonic() - started, status


def timed_search(client: httpx.Client, key: str) -> tuple[float, int]:
    """A search never calls the model, so it answers at once too."""
    started = time.monotonic()
    r = client.post("/v1/search", headers=bearer(key), json={"query": QUESTION})
    return time.monotonic() - started, r.status_code


def timed_read_note(url: str, key: str) -> tuple[float, int]:
    """MCP read_note on /mcp (the SDK's client): a tool that never calls the model."""
    from tests.mcp.session import http_session

    async def read() -> tuple[float, int]:
        async with http_session(f"{url}/mcp", key) as session:
            started = time.monotonic()
            result = await session.call_tool("read_note", {"vault": "home", "path": "garden/tomatoes.md"})
            return time.monotonic() - started, 500 if result.is_error else 200

    return asyncio.run(read())


def test_routes_without_the_model_answer_while_asks_wait_on_a_trickling_llm(settings, notes_key, trickling):
    deadline_s = 10.0  # longer than QUICK_S: a route queued behind the asks would show
    with serve(settings, trickling, notes_key, deadline_s) as served:
        replies: list[Any] = []

        def ask(url: str = served.url, replies: list[Any] = replies) -> None:
            with httpx.Client(base_url=url, timeout=120) as c:
                started = time.monotonic()
                r = c.post("/v1/ask", headers=bearer(notes_key), json={"query": QUESTION, "debug": True})
                replies.append((time.monotonic() - started, r.status_code, r.json()))

        askers = [threading.Thread(target=ask, daemon=True) for _ in range(IN_FLIGHT)]
        for t in askers:
            t.start()
        with httpx.Client(base_url=served.url, timeout=60) as client:
            end = time.monotonic() + 30
            while trickling.trickling == 0:
                assert time.monotonic() < end, "no ask reached the LLM"
                time.sleep(0.05)
            checks = [timed_get(client, "/healthz"), timed_get(client, "/v1/vaults", notes_key),
                      timed_get(client, "/v1/chunks/home/garden/tomatoes.md/0", notes_key),
                      timed_search(client, notes_key), timed_read_note(served.url, notes_key),
                      timed_get(client, "/healthz"),
                      timed_get(client, "/v1/vaults", notes_key)]
            still_waiting = sum(t.is_alive() for t in askers)
        assert all(status == 200 for _, status in checks), checks
        assert max(took for took, _ in checks) < QUICK_S, checks
        assert still_waiting > 0, "the asks were over before the checks: nothing was measured"
        for t in askers:
            t.join(timeout=IN_FLIGHT * (deadline_s + SLACK_S))
        assert len(replies) == IN_FLIGHT
        waves = -(-IN_FLIGHT // llm_slots(ServerSettings()))  # the asks run llm_concurrency at a time
        for took, status, body in replies:
            assert took < waves * deadline_s + SLACK_S, took
            assert status == 200, body
            assert DEADLINE_SAID in json.dumps(body["debug"]), body["debug"]
            assert body["answered_by"] != "llm"


def test_a_client_that_hangs_up_cancels_its_llm_call(settings, notes_key, trickling):
    deadline_s = 120.0  # only the hang-up can end the call in this test's time
    with serve(settings, trickling, notes_key, deadline_s) as served:
        body = json.dumps({"query": QUESTION}).encode()
        headers = {"Host": f"127.0.0.1:{served.port}", "Content-Type": "application/json", **bearer(notes_key)}
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall(request_bytes("POST", "/v1/ask", headers, body))
            end = time.monotonic() + 30
            while trickling.trickling == 0:
                assert time.monotonic() < end, "the ask never reached the LLM"
                time.sleep(0.05)
        # Every call the request had in flight when the client left is cut (the folder ranking asked ahead,
        # and the corrections of a weak retrieval when they had started: how many is a matter of timing),
        # and none is started after it.
        end = time.monotonic() + SLACK_S
        while (trickling.trickle_dropped == 0 or trickling.trickling > 0) and time.monotonic() < end:
            time.sleep(0.05)
        assert trickling.trickle_dropped >= 1 and trickling.trickling == 0
        sent = len(trickling.requests)
        time.sleep(2 * TRICKLE_S)
        assert len(trickling.requests) == sent and trickling.trickling == 0
        with httpx.Client(base_url=served.url, timeout=30) as client:
            assert timed_get(client, "/v1/vaults", notes_key)[1] == 200
