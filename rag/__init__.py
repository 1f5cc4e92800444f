"""ragpg: Postgres-native retrieval for RAG. This module is the small public face:

    from rag import compute_context, acompute_context, ask, search, index
    from rag import ContextResult, AskResponse, SearchResponse, RankedChunk, Candidate
    from rag import RagError, InputError, NotFoundError, DatabaseError, ...  (rag.errors)

Entry points are imported lazily so `import rag` stays cheap (the CLI and the server import only
what a command needs).

Layout (each folder's `__init__` says what it owns and what it may import; tests/layout checks it):
the shared basics sit at the top (`config`, `errors`, `extras`, `types`, `access`, `arguments`, `text`,
`tokens`, `llm`, `trace`) and import no stage; `runtime` builds what an entry point hands the stages
(docs/architecture.md has the table); the stages, in data-flow order, are
`store/` (database, migrations, registries) → `ingest/` and `embed/` → `retrieval/` (SQL calls,
Auto-RAG, ranking) → `context/` (assembly, evidence) → `notes/`; `compute` is the
`compute_context` pipeline over them and `eval/` measures them all. The CLI (`ragpg_cli`) and the
HTTP server (`ragpg_server`) sit on top and are never imported from here.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# public name -> (module, attribute)
_EXPORTS = {
    "compute_context": ("rag.compute", "compute_context"),
    "acompute_context": ("rag.compute", "acompute_context"),
    "ContextResult": ("rag.compute", "ContextResult"),
    "ask": ("rag.notes.ask", "ask"),
    "search": ("rag.notes.ask", "search"),
    "AskResponse": ("rag.notes.ask", "AskResponse"),
    "SearchResponse": ("rag.notes.results", "SearchResponse"),
    "index": ("rag.ingest.pipeline", "index_vaults"),
    "IndexReport": ("rag.ingest.report", "IndexReport"),
    "Candidate": ("rag.types", "Candidate"),
    "RankedChunk": ("rag.types", "RankedChunk"),
    "Runtime": ("rag.runtime", "Runtime"),
    "Settings": ("rag.config", "Settings"),
    "load_settings": ("rag.config", "load_settings"),
    **{name: ("rag.errors", name) for name in (
        "RagError", "InputError", "ConfigError", "NotFoundError", "ConflictError", "DatabaseError",
        "EmbeddingError", "LLMError", "AuthError", "AdmissionError")},
}

_CHECKED = frozenset({"compute_context", "acompute_context"})

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    import importlib

    module, attribute = target
    value = getattr(importlib.import_module(module), attribute)
    if name in _CHECKED:  # the public face checks argument types (rag/arguments.py)
        from rag.arguments import checked

        value = checked(value)
    return value
