"""ragpg: Postgres-native retrieval for RAG. This module is the small public face:

    from rag import compute_context, acompute_context, ask, search, related, index
    from rag import ContextResult, Citation, Decision, EvidenceFull, AskResponse, SearchResponse, ...
    from rag import RagError, InputError, NotFoundError, DatabaseError, ...  (rag.errors)

Entry points are imported lazily so `import rag` stays cheap (the CLI and the server import only
what a command needs); a type checker sees each name's real type (the imports under
TYPE_CHECKING). Each entry point checks its own arguments (rag.arguments), once.

Layout (each folder's `__init__` says what it owns and what it may import; tests/layout checks it):
the shared basics sit at the top (`config`, `errors`, `extras`, `types`, `access`, `arguments`, `text`,
`tokens`, `llm`, `llm_budget`, `trace`, `places`, `link_names`) and import no stage; `runtime` builds what an entry point hands the stages
(docs/architecture.md has the table); the stages, in data-flow order, are
`store/` (database, migrations, registries) → `ingest/` and `embed/` → `retrieval/` (SQL calls,
Auto-RAG, ranking) → `context/` (assembly, evidence) → `notes/`; `compute` is the
`compute_context` pipeline over them and `eval/` measures them all. The CLI (`ragpg_cli`) and the
HTTP server (`ragpg_server`) sit on top and are never imported from here, as does `integrations/`
(LangChain and LlamaIndex retrievers, each importing its framework).
"""

from __future__ import annotations

import pkgutil
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# rag.db is the repository's db/ folder (pyproject.toml's package-dir), so a checkout's rag/ holds no db/.
# When rag is imported from a checkout on sys.path (pytest from the repository root) while the package is
# installed as a link tree (setup.cfg), rag.db is found in the installed tree beside it.
__path__ = pkgutil.extend_path(__path__, __name__)

if TYPE_CHECKING:  # what a type checker sees: the real signatures and types (no import at run time)
    from rag.compute import acompute_context as acompute_context
    from rag.compute import compute_context as compute_context
    from rag.config import Settings as Settings
    from rag.config import load_settings as load_settings
    from rag.context.assemble import Citation as Citation
    from rag.context.evidence import EvidenceFull as EvidenceFull
    from rag.context.evidence import EvidenceLlm as EvidenceLlm
    from rag.context.result import ContextPayload as ContextPayload
    from rag.context.result import ContextResult as ContextResult
    from rag.errors import AdmissionError as AdmissionError
    from rag.errors import AuthError as AuthError
    from rag.errors import ConfigError as ConfigError
    from rag.errors import ConflictError as ConflictError
    from rag.errors import DatabaseError as DatabaseError
    from rag.errors import EmbeddingError as EmbeddingError
    from rag.errors import InputError as InputError
    from rag.errors import LLMError as LLMError
    from rag.errors import NotFoundError as NotFoundError
    from rag.errors import RagError as RagError
    from rag.indexing import index as index
    from rag.ingest.report import IndexReport as IndexReport
    from rag.notes.ask import ask as ask
    from rag.notes.ask import search as search
    from rag.notes.related import related as related
    from rag.notes.results import AskResponse as AskResponse
    from rag.notes.results import Reference as Reference
    from rag.notes.results import SearchItem as SearchItem
    from rag.notes.results import SearchResponse as SearchResponse
    from rag.retrieval.related import RelatedNotes as RelatedNotes
    from rag.runtime import Runtime as Runtime
    from rag.types import Candidate as Candidate
    from rag.types import Decision as Decision
    from rag.types import RankedChunk as RankedChunk

# public name -> (module, attribute); the same names as above, imported on first use
_EXPORTS = {
    "compute_context": ("rag.compute", "compute_context"),
    "acompute_context": ("rag.compute", "acompute_context"),
    "ContextResult": ("rag.context.result", "ContextResult"),
    "ContextPayload": ("rag.context.result", "ContextPayload"),
    "Citation": ("rag.context.assemble", "Citation"),
    "EvidenceFull": ("rag.context.evidence", "EvidenceFull"),
    "EvidenceLlm": ("rag.context.evidence", "EvidenceLlm"),
    "Decision": ("rag.types", "Decision"),
    "ask": ("rag.notes.ask", "ask"),
    "search": ("rag.notes.ask", "search"),
    "related": ("rag.notes.related", "related"),
    "RelatedNotes": ("rag.retrieval.related", "RelatedNotes"),
    "AskResponse": ("rag.notes.results", "AskResponse"),
    "Reference": ("rag.notes.results", "Reference"),
    "SearchItem": ("rag.notes.results", "SearchItem"),
    "SearchResponse": ("rag.notes.results", "SearchResponse"),
    "index": ("rag.indexing", "index"),
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

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    import importlib

    module, attribute = target
    return getattr(importlib.import_module(module), attribute)
