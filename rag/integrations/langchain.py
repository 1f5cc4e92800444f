"""LangChain retrievers over ragpg (extra `ragpg[langchain]`; docs/integrations.md).

- `RagpgRetriever`: the first `k` passages of the budgeted context, best first, one `Document`
  each (rag.integrations.passages says which passages): `page_content` is the passage as the
  reader sees it, `metadata` its vault, source path, title, heading path, lines, rank, score
  breakdown and citation marker; `id` is its reference (vault/source_path#ordinal).
- `RagpgContextRetriever`: the budgeted, cited context as one `Document` (none when nothing fit),
  with the citations and the decision in its metadata.

Both run `compute_context` in this process (`runtime`, optionally a `scope`) or over HTTP (`url`
and `api_key`: the key's vaults and clearance apply). The call's decision record (route, winner,
weak-retrieval signals) comes with the documents: a custom callback event `ragpg_context` on the
retriever's run (its data: the decision, whether the context was insufficient, the tokens used),
seen by callback handlers and `astream_events`; and `last_retrieved` holds the last call's whole
result for scripts that use one retriever at a time. Errors are ragpg's (rag.errors), raised as
themselves with ragpg's one-line message.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rag.errors import ConfigError, InputError
from rag.extras import require_extra

try:
    require_extra("langchain", "rag.integrations.langchain")
except ConfigError as missing:
    raise ImportError(str(missing)) from None

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, InstanceOf, PrivateAttr

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

__all__ = ["RagpgContextRetriever", "RagpgRetriever"]

EVENT_NAME = "ragpg_context"
# what a call may change per invocation (`retriever.invoke(query, k=1, filters=...)`)
_PER_CALL = frozenset({"k", "vaults", "filters", "profile", "mode", "budget_tokens"})


class _RagpgBase(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    vaults: list[str] | None = None
    filters: dict[str, Any] | None = Field(None, description="A JSONB metadata filter (docs/sql-console.md).")
    profile: str = "chat"
    mode: Mode = "auto"
    k: int = Field(4, description="How many passages (RagpgRetriever): the first k of the context's.")
    budget_tokens: int = 4000
    runtime: InstanceOf[Runtime] | None = Field(None, description="In process: the database and models to use.")
    scope: InstanceOf[Scope] | None = Field(None, description="In process: what the caller may read (default: all).")
    url: str | None = Field(None, description="Over HTTP: the base URL of `ragpg serve`.")
    api_key: str | None = Field(None, repr=False, description="Over HTTP: the API key sent as a Bearer token.")
    timeout_s: float = HTTP_TIMEOUT_S

    _last: Retrieved | None = PrivateAttr(None)
    # whether the documents are the passages (their texts are fetched) or the context alone
    _wants_passages: ClassVar[bool] = True

    @property
    def last_retrieved(self) -> Retrieved | None:
        """The last call's result: the context payload (context, citations, decision) and passages."""
        return self._last

    def _call(self, kwargs: dict[str, Any]) -> tuple[ContextQuery, int]:
        unknown = sorted(set(kwargs) - _PER_CALL)
        if unknown:
            raise InputError(f"unknown retriever arguments: {', '.join(unknown)} (known: {', '.join(sorted(_PER_CALL))})")
        values = {name: kwargs.get(name, getattr(self, name)) for name in _PER_CALL}
        ask = ContextQuery(vaults=values["vaults"], filters=values["filters"], profile=values["profile"],
                           mode=values["mode"], budget_tokens=values["budget_tokens"])
        k = int(values["k"])
        if k < 1:
            raise InputError(f"k must be at least 1, got {k}")
        return ask, k if self._wants_passages else 0

    def _fetch(self, query: str, kwargs: dict[str, Any]) -> Retrieved:
        ask, k = self._call(kwargs)
        if self.url is None:
            return retrieve_local(query, ask, k, runtime=self.runtime, scope=self.scope)
        import httpx

        with httpx.Client(base_url=self.url, timeout=self.timeout_s) as client:
            return retrieve_http(query, ask, k, client=client, api_key=self.api_key)

    async def _afetch(self, query: str, kwargs: dict[str, Any]) -> Retrieved:
        ask, k = self._call(kwargs)
        if self.url is None:
            return await aretrieve_local(query, ask, k, runtime=self.runtime, scope=self.scope)
        import httpx

        async with httpx.AsyncClient(base_url=self.url, timeout=self.timeout_s) as client:
            return await aretrieve_http(query, ask, k, client=client, api_key=self.api_key)

    def _documents(self, found: Retrieved) -> list[Document]:
        raise NotImplementedError

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        found = self._fetch(query, kwargs)
        self._last = found
        # to the handlers of this run (the run manager's own on_custom_event is a handler's no-op)
        run_manager.get_child().on_custom_event(EVENT_NAME, _event_data(found), run_id=run_manager.run_id)
        return self._documents(found)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        found = await self._afetch(query, kwargs)
        self._last = found
        await run_manager.get_child().on_custom_event(EVENT_NAME, _event_data(found), run_id=run_manager.run_id)
        return self._documents(found)


def _event_data(found: Retrieved) -> dict[str, Any]:
    p = found.payload
    return {"decision": p.decision.model_dump(mode="json"), "insufficient": p.insufficient,
            "used_tokens": p.used_tokens}


def passage_document(passage: Passage) -> Document:
    return Document(id=passage.chunk.ref, page_content=passage.text, metadata=passage.metadata())


class RagpgRetriever(_RagpgBase):
    """ragpg's passages for a query, one `Document` each, best first (the first `k` in the context)."""

    def _documents(self, found: Retrieved) -> list[Document]:
        return [passage_document(p) for p in found.passages]


class RagpgContextRetriever(_RagpgBase):
    """ragpg's budgeted, cited context for a query as one `Document` (`k` is not used)."""

    _wants_passages: ClassVar[bool] = False

    def _documents(self, found: Retrieved) -> list[Document]:
        p = found.payload
        if not p.context:
            return []
        return [Document(page_content=p.context, metadata={
            "citations": [c.model_dump(mode="json") for c in p.citations],
            "decision": p.decision.model_dump(mode="json"), "insufficient": p.insufficient,
            "used_tokens": p.used_tokens})]
