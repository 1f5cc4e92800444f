"""`ragpg mcp`: serve the notes to an AI assistant over the Model Context Protocol (stdio)."""

from __future__ import annotations

import typer

from rag.access import CONFIDENTIALITY_LEVELS
from ragpg_cli.app import info, state

KEY_ENV = "RAGPG_MCP_KEY"


def mcp_command(
    ctx: typer.Context,
    vault: list[str] = typer.Option([], "--vault", help="Only this vault (repeatable). Default: every vault."),
    clearance: str | None = typer.Option(None, "--clearance", help="Highest confidentiality the assistant may read: "
                                         f"{', '.join(CONFIDENTIALITY_LEVELS)}. Default: every level."),
    key: str | None = typer.Option(None, "--key", envvar=KEY_ENV, show_envvar=True,
                                   help="Read with this API key's scope (`ragpg keys create`); --vault and "
                                        f"--clearance may narrow it. Prefer the {KEY_ENV} variable: a command "
                                        "line is visible to other users."),
) -> None:
    """Serve your notes to an AI assistant (Claude Desktop, Claude Code, Cursor, VS Code, ...) over the Model Context Protocol on stdin/stdout: tools to search, ask, get cited context, read notes and list vaults and folders, and every note as a resource (ragpg://vault/path).

    The assistant launches this command itself (docs/mcp.md has the config snippets). What it may read is said on stderr at start: by default everything this user can read; --vault, --clearance or --key limit it, enforced in the database on every call.
    """  # one line per paragraph: typer keeps a docstring's line breaks in --help
    from rag.extras import require_extra

    require_extra("mcp", "ragpg mcp")
    import anyio

    from ragpg_server.mcp_stdio import serve_stdio

    anyio.run(serve_stdio, state(ctx).settings, vault, clearance, key, info)
