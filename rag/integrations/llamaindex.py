"""A LlamaIndex retriever over ragpg (extra `ragpg[llamaindex]`; docs/integrations.md).

`RagpgLlamaRetriever` returns the first `k` passages of the budgeted context, best first
(rag.integrations.passages says which), as `NodeWithScore`s: a `TextNode` whose text is the passage
as the reader sees it and whose metadata is the same as the LangChain retriever's (vault, source
path, title, heading path, lines, rank, score breakdown, citation marker); the score is ragpg's
final score. Usable wherever LlamaIndex takes a retriever, e.g. `RetrieverQueryEngine.from_args`.
The LLM sees a node's title, source path, heading path and citation marker beside its text, not its
scores. The last call's whole result (context, citations, decision) is `last_retrieved`. Errors are
ragpg's (rag.errors), raised as themselves with ragpg's one-line message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag.errors import ConfigError, InputError
from rag.extras import require_extra

try:
    require_extra("llamaindex", "rag.integrations.llamaindex")
except ConfigError as missing:
    raise ImportError(str(missing)) from None

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag.access import Scope
from rag.integrations.passages import (
    HTTP_TIMEOUT_S,
    ContextQuery,
    Passage,
    Retrieved,
    aretrieve_http,
    aretrieve_local,
    retrieve_http,
    retrieve_local,
)
from rag.runtime import Runtime
from rag.types import Mode

__all__ = ["RagpgLlamaRetriever"]

# metadata the LLM reads beside a passage's text; the rest (scores, ranks, lines) is for the caller
_LLM_KEYS = frozenset({"title", "source_path", "heading_path", "citation_marker"})


def passage_node(passage: Passage) -> NodeWithScore:
    metadata = passage.metadata()
    hidden = sorted(set(metadata) - _LLM_KEYS)
    node = TextNode(id_=passage.chunk.ref, text=passage.text, metadata=metadata,
                    excluded_llm_metadata_keys=hidden, excluded_embed_metadata_keys=sorted(metadata))
    return NodeWithScore(node=node, score=passage.chunk.scores.final)


class RagpgLlamaRetriever(BaseRetriever):
    """ragpg's passages for a query, best first: in process (`runtime`, `scope`) or over HTTP
    (`url`, `api_key`)."""

    def __init__(self, *, vaults: Sequence[str] | None = None, filters: dict[str, Any] | None = None,
                 profile: str = "chat", mode: Mode = "auto", k: int = 4, budget_tokens: int = 4000,
                 runtime: Runtime | None = None, scope: Scope | None = None, url: str | None = None,
                 api_key: str | None = None, timeout_s: float = HTTP_TIMEOUT_S, **kwargs: Any) -> None:
        if k < 1:
            raise InputError(f"k must be at least 1, got {k}")
        super().__init__(**kwargs)
        self.ask = ContextQuery(vaults=vaults, filters=filters, profile=profile, mode=mode,
                                budget_tokens=budget_tokens)
        self.k = k
        self.runtime, self.scope = runtime, scope
        self.url, self._api_key, self.timeout_s = url, api_key, timeout_s
        self.last_retrieved: Retrieved | None = None

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.url is None:
            found = retrieve_local(query_bundle.query_str, self.ask, self.k, runtime=self.runtime, scope=self.scope)
        else:
            import httpx

            with httpx.Client(base_url=self.url, timeout=self.timeout_s) as client:
                found = retrieve_http(query_bundle.query_str, self.ask, self.k, client=client, api_key=self._api_key)
        self.last_retrieved = found
        return [passage_node(p) for p in found.passages]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        if self.url is None:
            found = await aretrieve_local(query, self.ask, self.k, runtime=self.runtime, scope=self.scope)
        else:
            import httpx

            async with httpx.AsyncClient(base_url=self.url, timeout=self.timeout_s) as client:
                found = await aretrieve_http(query, self.ask, self.k, client=client, api_key=self._api_key)
        self.last_retrieved = found
        return [passage_node(p) for p in found.passages]
