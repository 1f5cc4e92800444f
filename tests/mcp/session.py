"""Drive ragpg's MCP servers with the SDK's own clients: `ragpg mcp` as a subprocess over stdio, and
/mcp on a real `ragpg serve` over streamable HTTP."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.notes.conftest import abstain_toml
from tests.support.cli import REPO

TOOL_NAMES = {"search_notes", "ask_notes", "get_context", "read_note", "related_notes", "list_vaults",
              "list_folders"}


def server_env(db_url: str, tmp_path: Path) -> dict[str, str]:
    """What ragpg reads from the environment: the per-test database, the hash embedder, no LLM, and the
    test abstention model (tests/notes/kit.ABSTAIN), so ask answers from this small corpus."""
    config = tmp_path / "ragpg.toml"
    config.write_text(abstain_toml(), encoding="utf-8")
    return {"DATABASE_URL": db_url, "RAGPG_EMBEDDING__MODEL": "hash", "RAGPG_CONFIG": str(config),
            "RAGPG_DATA_DIR": str(tmp_path / "data"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LANGFUSE_TRACING_ENABLED": "false"}


@asynccontextmanager
async def stdio_session(db_url: str, tmp_path: Path, *args: str,
                        env: dict[str, str] | None = None) -> AsyncIterator[tuple[ClientSession, Path]]:
    """An initialized session with `ragpg mcp <args>`, and the file its stderr goes to."""
    stderr_path = tmp_path / f"mcp-stderr-{len(list(tmp_path.glob('mcp-stderr-*')))}.txt"
    with stderr_path.open("w", encoding="utf-8") as errlog:
        params = StdioServerParameters(command=sys.executable, args=["-m", "ragpg_cli.main", "mcp", *args],
                                       env={**server_env(db_url, tmp_path), **(env or {})}, cwd=str(REPO))
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session, stderr_path


@asynccontextmanager
async def http_session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client, \
            streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def data(result: types.CallToolResult) -> dict[str, Any]:
    """A successful call's structured result (which the SDK client checked against the outputSchema)."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_text(result: types.CallToolResult) -> str:
    assert result.is_error, result.structured_content
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


def stderr_of(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""

