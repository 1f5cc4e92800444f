"""ragpg: Postgres-native retrieval for RAG.

The public entry points are imported lazily so `import rag` stays cheap (the CLI and the
server import only what a command needs):

    from rag import compute_context, acompute_context, ask, search
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "compute_context": "rag.compute",
    "acompute_context": "rag.compute",
    "ContextResult": "rag.compute",
    "ask": "rag.notes.ask",
    "search": "rag.notes.ask",
    "AskResponse": "rag.notes.ask",
    "Runtime": "rag.runtime",
    "Settings": "rag.config",
    "load_settings": "rag.config",
}

_CHECKED = frozenset({"compute_context", "acompute_context"})

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    if name in _CHECKED:  # the public face checks argument types (rag/arguments.py)
        from rag.arguments import checked

        value = checked(value)
    return value
