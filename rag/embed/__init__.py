"""Embedders: one interface (:class:`Embedder`), one registry (:func:`get_embedder`).

Built-in providers: ``local`` (all-MiniLM-L6-v2 on onnxruntime, the default), ``hash``
(feature hashing) and ``litellm`` (any ``provider/model`` spec). Their modules load lazily.

May import: `rag.config`, `rag.errors`, and `rag.llm` for the one quiet import of litellm. Nothing else
of rag.
"""

from rag.embed.base import Embedder, embed_in_batches, l2_normalize
from rag.embed.registry import ProviderFactory, get_embedder, parse_spec, provider_names, register_provider

__all__ = [
    "Embedder",
    "ProviderFactory",
    "embed_in_batches",
    "get_embedder",
    "l2_normalize",
    "parse_spec",
    "provider_names",
    "register_provider",
]
