"""Optional features and the extra that installs each (`pip install 'ragpg[server]'`).

The library a chat backend imports needs none of them: the HTTP server, the MCP server (`ragpg mcp`
and `/mcp`), Langfuse tracing, the IR metrics of `ragpg eval` and the pg_textsearch index come with
their extras. A feature whose extra is missing says which to install in one line, rather than
failing on an import deep inside.
"""

from __future__ import annotations

import importlib
from typing import Final

from rag.errors import ConfigError

# extra -> the modules it provides (import names)
EXTRA_MODULES: Final[dict[str, tuple[str, ...]]] = {
    "server": ("fastapi", "uvicorn", "fastapi_offline"),
    "langfuse": ("langfuse",),
    "eval": ("ir_measures",),
    "mcp": ("mcp",),
    # the framework retrievers of rag.integrations
    "langchain": ("langchain_core",),
    "llamaindex": ("llama_index.core",),
}


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here."""
    missing = []
    for module in EXTRA_MODULES[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


def require_extra(extra: str, feature: str) -> None:
    """Raise a one-line ConfigError naming the extra when `feature` cannot run here."""
    missing = missing_modules(extra)
    if missing:
        raise ConfigError(f"{feature} needs the '{extra}' extra: pip install 'ragpg[{extra}]' "
                          f"(missing: {', '.join(missing)})")
