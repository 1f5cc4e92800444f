"""RagpgRetriever passes LangChain's own standard retriever tests (langchain-tests, every test of the
pinned release, none skipped), in process and over HTTP, on a small vault indexed by the real
pipeline; its documents carry ragpg's passages, metadata and decision; filters and errors."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from rag.errors import InputError, NotFoundError
from rag.integrations.langchain import RagpgContextRetriever, RagpgRetriever
from rag.runtime import Runtime
from tests.integrations.conftest import NOTES, QUERY, RESTRICTED_NOTE, SYNC_FOLDER, VAULT, Served


class TestRagpgRetrieverStandard(RetrieversIntegrationTests):
    """In process, through a Runtime over the per-test database."""

    params: dict[str, Any]

    @pytest.fixture(autouse=True)
    def _indexed(self, runtime: Runtime) -> None:
        self.params = {"runtime": runtime, "vaults": [VAULT]}

    @property
    def retriever_constructor(self) -> type[RagpgRetriever]:
        return RagpgRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return self.params

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestRagpgRetrieverStandardOverHttp(TestRagpgRetrieverStandard):
    """Over HTTP: `ragpg serve` under uvicorn on loopback, a key of restricted clearance."""

    @pytest.fixture(autouse=True)
    def _indexed(self, served: Served) -> None:
        self.params = {"url": served.url, "api_key": served.restricted_key, "vaults": [VAULT]}


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, UUID]] = []

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.seen.append((name, data, run_id))


def test_each_document_is_a_passage_of_the_context_with_its_metadata(runtime: Runtime) -> None:
    retriever = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=3)
    docs = retriever.invoke(QUERY)
    found = retriever.last_retrieved
    assert found is not None and len(docs) == 3
    for doc in docs:
        m = doc.metadata
        assert doc.id == f"{VAULT}/{m['source_path']}#{m['ordinal']}" == m["ref"]
        assert m["vault"] == VAULT and m["source_path"] in NOTES
        assert doc.page_content.strip() and doc.page_content.strip() in NOTES[m["source_path"]]
        assert m["citation_marker"] in found.payload.context  # the block quoting it
        assert m["title"] and m["heading_path"] and m["start_line"] >= 1 and m["end_line"] >= m["start_line"]
        assert set(m["scores"]) >= {"vector", "lexical", "fused", "final"} and m["score"] == m["scores"]["final"]
    assert [d.metadata["rank"] for d in docs] == sorted(d.metadata["rank"] for d in docs)  # best first
    best = sorted(found.payload.used, key=lambda c: c.rank)[:3]
    assert [d.id for d in docs] == [c.ref for c in best]


def test_front_matter_is_not_in_the_passage_text(runtime: Runtime) -> None:
    docs = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=10).invoke(QUERY)
    restricted = [d for d in docs if d.metadata["source_path"] == RESTRICTED_NOTE]
    assert restricted and "confidentiality:" not in restricted[0].page_content


def test_the_decision_record_comes_with_the_call(runtime: Runtime) -> None:
    events = Events()
    retriever = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=2)
    retriever.invoke(QUERY, {"callbacks": [events]})
    [(name, data, _run_id)] = events.seen
    found = retriever.last_retrieved
    assert found is not None and name == "ragpg_context"
    assert data["decision"] == found.payload.decision.model_dump(mode="json")
    assert data["decision"]["route"] and data["decision"]["decision_signature"]
    assert data["insufficient"] is False and data["used_tokens"] > 0


@pytest.mark.asyncio
async def test_the_decision_event_reaches_astream_events(runtime: Runtime) -> None:
    retriever = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=2)
    seen = [e async for e in retriever.astream_events(QUERY, version="v2") if e["event"] == "on_custom_event"]
    assert [e["name"] for e in seen] == ["ragpg_context"]
    assert seen[0]["data"]["decision"]["winner"]


def test_a_filter_keeps_to_its_folder(runtime: Runtime) -> None:
    unfiltered = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=10).invoke(QUERY)
    assert any(not d.metadata["source_path"].startswith(SYNC_FOLDER + "/") for d in unfiltered)
    retriever = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=10, filters={"folder": {"$prefix": SYNC_FOLDER}})
    docs = retriever.invoke(QUERY)
    assert len(docs) == 4 and all(d.metadata["source_path"].startswith(SYNC_FOLDER + "/") for d in docs)
    per_call = RagpgRetriever(runtime=runtime, vaults=[VAULT]).invoke(QUERY, k=10, filters={"folder": "Editing"})
    assert [d.metadata["source_path"] for d in per_call] == ["Editing/Sync with git.md"]


def test_an_unknown_vault_is_ragpgs_not_found_error(runtime: Runtime) -> None:
    with pytest.raises(NotFoundError, match=r"^unknown vault 'nope' \(known: notes\)$"):
        RagpgRetriever(runtime=runtime, vaults=["nope"]).invoke(QUERY)


def test_bad_arguments_are_input_errors_naming_them(runtime: Runtime) -> None:
    with pytest.raises(InputError, match="k must be at least 1, got 0"):
        RagpgRetriever(runtime=runtime, vaults=[VAULT], k=0).invoke(QUERY)
    with pytest.raises(InputError, match="unknown retriever arguments: top_k"):
        RagpgRetriever(runtime=runtime, vaults=[VAULT]).invoke(QUERY, top_k=3)
    with pytest.raises(InputError, match="filter"):
        RagpgRetriever(runtime=runtime, vaults=[VAULT], filters={"folder": {"$nope": 1}}).invoke(QUERY)


def test_the_context_retriever_returns_the_cited_context_as_one_document(runtime: Runtime) -> None:
    retriever = RagpgContextRetriever(runtime=runtime, vaults=[VAULT], budget_tokens=120)
    [doc] = retriever.invoke(QUERY)
    found = retriever.last_retrieved
    assert found is not None and found.passages == []  # the context alone: no passage is fetched
    assert isinstance(doc, Document) and doc.page_content == found.payload.context
    assert doc.page_content.startswith("[S1] ")
    markers = [c["marker"] for c in doc.metadata["citations"]]
    assert markers and all(f"[{m}]" in doc.page_content or m in doc.page_content for m in markers)
    assert doc.metadata["used_tokens"] <= 120 and doc.metadata["decision"]["route"]


def test_the_context_retriever_returns_nothing_when_nothing_fits(runtime: Runtime) -> None:
    assert RagpgContextRetriever(runtime=runtime, vaults=[VAULT], budget_tokens=0).invoke(QUERY) == []
