"""RagpgLlamaRetriever: ragpg's passages as LlamaIndex NodeWithScores, in a RetrieverQueryEngine
answered by LlamaIndex's own MockLLM (which answers with the prompt it was given, so the answer
shows what the LLM read); filters and errors."""

from __future__ import annotations

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, TextNode

from rag.errors import InputError, NotFoundError
from rag.integrations.langchain import RagpgRetriever
from rag.integrations.llamaindex import RagpgLlamaRetriever
from rag.runtime import Runtime
from tests.integrations.conftest import NOTES, QUERY, SYNC_FOLDER, VAULT, without_scores


def test_a_query_engine_answers_from_ragpgs_passages(runtime: Runtime) -> None:
    retriever = RagpgLlamaRetriever(runtime=runtime, vaults=[VAULT], k=3)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query(QUERY)
    found = retriever.last_retrieved
    assert found is not None
    refs = [n.node.node_id for n in response.source_nodes]
    assert refs == [c.ref for c in sorted(found.payload.used, key=lambda c: c.rank)[:3]]
    for n in response.source_nodes:
        assert isinstance(n.node, TextNode) and n.node.text.strip() in NOTES[n.node.metadata["source_path"]]
        assert n.node.text.strip() in str(response)  # the LLM was given the passage
        assert n.score == n.node.metadata["scores"]["final"]


def test_nodes_carry_the_same_metadata_as_the_langchain_documents(runtime: Runtime) -> None:
    nodes = RagpgLlamaRetriever(runtime=runtime, vaults=[VAULT], k=4).retrieve(QUERY)
    docs = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=4).invoke(QUERY)
    assert [without_scores(n.node.metadata) for n in nodes] == [without_scores(d.metadata) for d in docs]
    # the freshness weight is computed at query time, so two calls differ in the last digits
    assert [n.score for n in nodes] == pytest.approx([d.metadata["score"] for d in docs])
    assert [n.node.get_content() for n in nodes] == [d.page_content for d in docs]
    shown = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "citation_marker: S" in shown and "scores" not in shown  # the LLM sees where, not how it scored


@pytest.mark.asyncio
async def test_async_retrieval_returns_the_same_nodes(runtime: Runtime) -> None:
    retriever = RagpgLlamaRetriever(runtime=runtime, vaults=[VAULT], k=3)
    got = await retriever.aretrieve(QUERY)
    assert [n.node.node_id for n in got] == [n.node.node_id for n in retriever.retrieve(QUERY)]


def test_a_filter_keeps_to_its_folder(runtime: Runtime) -> None:
    nodes = RagpgLlamaRetriever(runtime=runtime, vaults=[VAULT], k=10,
                                filters={"folder": {"$prefix": SYNC_FOLDER}}).retrieve(QUERY)
    assert len(nodes) == 4 and all(n.node.metadata["source_path"].startswith(SYNC_FOLDER + "/") for n in nodes)


def test_errors_are_ragpgs(runtime: Runtime) -> None:
    with pytest.raises(NotFoundError, match=r"^unknown vault 'nope' \(known: notes\)$"):
        RagpgLlamaRetriever(runtime=runtime, vaults=["nope"]).retrieve(QUERY)
    with pytest.raises(InputError, match="k must be at least 1, got 0"):
        RagpgLlamaRetriever(runtime=runtime, k=0)
