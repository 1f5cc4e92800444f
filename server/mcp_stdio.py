"""`ragpg mcp`: the MCP server over stdin/stdout, the form desktop assistants launch.

Its scope is chosen at start and said on stderr: by default what the local user can read (every
vault, every clearance: the local user owns the database); `--vault` and `--clearance` narrow it,
and `--key` starts from an API key's scope instead (and may only be narrowed further); the key is
checked again before every call, so revoking it ends the assistant's access at once. Every call
passes that scope to the library, which applies it in the SQL, as for the HTTP API.

Everything runs inside the SDK's stdio transport, which points fd 1 at stderr while it serves: a
stray print or a child process (the embedded database starting) cannot corrupt the protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.stdio import stdio_server

from rag.access import CONFIDENTIALITY_LEVELS, Scope, levels_up_to
from rag.config import Settings
from rag.errors import AuthError
from rag.runtime import Runtime
from rag.store import keys as key_store
from rag.store.database import Connection
from rag.store.vaults import resolve_vault_names
from ragpg_server.mcp_server import LocalGate, build_server

# A stdio server serves one assistant, one call at a time (mcp_server.LocalGate): one connection
# for the calls and one for the outage probe are enough.
STDIO_POOL_SIZE = 2


def local_scope(conn: Connection, vaults: Sequence[str], clearance: str | None, key: str | None) -> Scope:
    """The scope `ragpg mcp` serves: the key's (or the local user's, everything), narrowed by
    `vaults` and `clearance`; widening a key's scope, or naming a vault that does not exist, is refused."""
    base = Scope.unrestricted() if key is None else key_store.authenticate(conn, key).scope
    names = list(dict.fromkeys(vaults))
    if names:
        resolve_vault_names(conn, names)  # NotFoundError naming an unknown vault
        base.check_vaults(names)
    if clearance is not None:
        levels_up_to(clearance)  # InputError for an unknown level
        if CONFIDENTIALITY_LEVELS.index(clearance) > CONFIDENTIALITY_LEVELS.index(base.clearance):
            raise AuthError(f"--clearance {clearance} is above the key's clearance ({base.clearance}); "
                            "it can only be narrowed")
    return Scope(vaults=tuple(names) if names else base.vaults, clearance=clearance or base.clearance,
                 principal=base.principal, can_index=False)


def scope_line(scope: Scope, key: str | None) -> str:
    """The line `ragpg mcp` prints on stderr at start: what the assistant will be able to read."""
    vaults = "every vault" if scope.vaults is None else ("vault " if len(scope.vaults) == 1 else "vaults ") + \
        ", ".join(scope.vaults)
    levels = ", ".join(levels_up_to(scope.clearance))
    if key is None and scope.vaults is None and scope.readable_levels() is None:
        return (f"ragpg mcp: serving {vaults} at every confidentiality level ({levels}): everything this user can "
                "read; narrow it with --vault and --clearance, or --key")
    source = f"API key '{scope.principal}'" if key is not None else "--vault/--clearance"
    return f"ragpg mcp: serving {vaults}, confidentiality {levels} only (from {source})"


def _sole(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one error inside (nested) task-group wrappers, or the group when there are several."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if len(leaves) == 1 else group


async def serve_stdio(settings: Settings, vaults: Sequence[str], clearance: str | None, key: str | None,
                      say: Callable[[str], None]) -> None:
    """Serve until the client closes stdin. A failure at start (a bad flag or key, no database) is
    raised as itself, for the CLI's one line and exit code, not inside the transport's task group."""
    try:
        await _serve(settings, vaults, clearance, key, say)
    except BaseExceptionGroup as group:
        raise _sole(group) from None


async def _serve(settings: Settings, vaults: Sequence[str], clearance: str | None, key: str | None,
                 say: Callable[[str], None]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        runtime = Runtime.from_settings(settings, pool_max_size=STDIO_POOL_SIZE)
        try:
            def choose(conn: Connection) -> Scope:
                return local_scope(conn, vaults, clearance, key)

            def first() -> Scope:
                with runtime.connection() as conn:
                    return choose(conn)

            scope = await anyio.to_thread.run_sync(first)
            say(scope_line(scope, key))
            server = build_server(settings, LocalGate(runtime, scope, recheck=choose if key is not None else None))
            await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            runtime.close()
