"""The embedding model an index run writes with: its registration in the database, found or made."""

from __future__ import annotations

from rag.embed import Embedder
from rag.errors import EmbeddingError, RagError
from rag.store.database import Connection
from rag.store.models import EmbeddingModelRef, get_model, register_model


def ensure_model(conn: Connection, embedder: Embedder) -> EmbeddingModelRef:
    """The current model's storage; a registered model is found without probing the provider for dims."""
    found = get_model(conn, embedder.provider, embedder.model)
    if found is not None:
        return found
    try:
        dims = embedder.dims
    except RagError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"embedding model {embedder.model_key} failed: {exc}") from None
    return register_model(conn, embedder.provider, embedder.model, dims)
