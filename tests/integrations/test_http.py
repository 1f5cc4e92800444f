"""Both retrievers over HTTP (`ragpg serve` under uvicorn on loopback): an API key's scope holds
through the retriever, and the server's errors come back as ragpg's with its one-line message."""

from __future__ import annotations

import pytest

from rag.errors import AuthError, NotFoundError
from rag.integrations.langchain import RagpgContextRetriever, RagpgRetriever
from rag.integrations.llamaindex import RagpgLlamaRetriever
from rag.runtime import Runtime
from tests.integrations.conftest import ODD_NAME, QUERY, RESTRICTED_NOTE, VAULT, Served, without_scores


@pytest.mark.security
def test_a_public_key_sees_no_restricted_passage(served: Served) -> None:
    def paths(key: str) -> list[str]:
        docs = RagpgRetriever(url=served.url, api_key=key, k=10).invoke(QUERY)
        nodes = RagpgLlamaRetriever(url=served.url, api_key=key, k=10).retrieve(QUERY)
        assert [n.node.metadata["source_path"] for n in nodes] == [d.metadata["source_path"] for d in docs]
        return [d.metadata["source_path"] for d in docs]

    assert RESTRICTED_NOTE in paths(served.restricted_key)  # the note is found when the key may read it
    public = paths(served.public_key)
    assert public and RESTRICTED_NOTE not in public
    [context] = RagpgContextRetriever(url=served.url, api_key=served.public_key).invoke(QUERY)
    assert "4417" not in context.page_content and "recovery codes" not in context.page_content.lower()


def test_over_http_the_documents_equal_the_in_process_ones(served: Served, runtime: Runtime) -> None:
    over_http = RagpgRetriever(url=served.url, api_key=served.restricted_key, vaults=[VAULT], k=10).invoke(QUERY)
    in_process = RagpgRetriever(runtime=runtime, vaults=[VAULT], k=10).invoke(QUERY)
    assert ODD_NAME in [d.metadata["source_path"] for d in over_http]
    assert [(d.id, d.page_content, without_scores(d.metadata)) for d in over_http] == [
        (d.id, d.page_content, without_scores(d.metadata)) for d in in_process]
    # the freshness weight is computed at query time, so two calls differ in the last digits
    assert [d.metadata["score"] for d in over_http] == pytest.approx([d.metadata["score"] for d in in_process])


def test_server_errors_are_ragpgs(served: Served) -> None:
    with pytest.raises(NotFoundError, match=r"^unknown vault 'nope' \(known: notes\)$"):
        RagpgRetriever(url=served.url, api_key=served.all_vaults_key, vaults=["nope"]).invoke(QUERY)
    with pytest.raises(AuthError, match=r"^this key may not read vault 'nope'$"):
        RagpgRetriever(url=served.url, api_key=served.restricted_key, vaults=["nope"]).invoke(QUERY)
    with pytest.raises(AuthError, match="key"):
        RagpgRetriever(url=served.url, api_key="rk_not-a-key", vaults=[VAULT]).invoke(QUERY)
    with pytest.raises(AuthError):
        RagpgLlamaRetriever(url=served.url, vaults=[VAULT]).retrieve(QUERY)  # no key


@pytest.mark.asyncio
async def test_async_over_http(served: Served) -> None:
    retriever = RagpgRetriever(url=served.url, api_key=served.public_key, k=3)
    docs = await retriever.ainvoke(QUERY)
    assert len(docs) == 3 and all(d.metadata["source_path"] != RESTRICTED_NOTE for d in docs)
    with pytest.raises(NotFoundError, match=r"^unknown vault 'nope'"):
        await RagpgLlamaRetriever(url=served.url, api_key=served.all_vaults_key, vaults=["nope"]).aretrieve(QUERY)
