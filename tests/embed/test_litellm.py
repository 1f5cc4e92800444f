from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rag.config import EmbeddingSettings
from rag.embed import get_embedder
from rag.embed.litellm import PROBE_TEXT, LiteLLMEmbedder, mask_secret
from rag.errors import EmbeddingError
from tests.support.llm_stub import LLMStub, stub_vector

API_KEY = "sk-test-0123456789abcdef"


def make(stub: LLMStub, **kwargs: Any) -> LiteLLMEmbedder:
    options: dict[str, Any] = {"api_base": stub.url + "/v1", "api_key": API_KEY, "retry_backoff_s": 0.0, "timeout_s": 5.0}
    options.update(kwargs)
    return LiteLLMEmbedder("openai/stub-embed", **options)


def expected(texts: list[str], dims: int) -> np.ndarray:
    rows = np.array([stub_vector(t, dims) for t in texts], dtype=np.float64)
    normalised: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalised


def test_embeds_through_litellm(llm_stub: LLMStub) -> None:
    llm_stub.dims = 12
    e = make(llm_stub)
    assert (e.provider, e.model, e.model_key) == ("openai", "stub-embed", "openai/stub-embed")
    texts = ["first text", "second, longer text", ""]
    vectors = e.embed_documents(texts)
    assert vectors.shape == (3, 12) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected(texts, 12), atol=1e-6)
    assert e.dims == 12  # learned from the response, no probe
    body = llm_stub.requests_to("/embeddings")[-1]
    assert body["model"] == "stub-embed" and body["input"] == texts
    assert llm_stub.received[-1].headers["authorization"] == f"Bearer {API_KEY}"
    np.testing.assert_allclose(e.embed_query("first text"), vectors[0], atol=1e-7)


def test_dims_probe_when_asked_first(llm_stub: LLMStub) -> None:
    llm_stub.dims = 20
    e = make(llm_stub)
    assert e.dims == 20
    assert llm_stub.requests == [{"model": "stub-embed", "input": [PROBE_TEXT]}]
    e.dims  # noqa: B018 - cached
    assert len(llm_stub.requests) == 1


def test_batches_of_batch_size(llm_stub: LLMStub) -> None:
    e = make(llm_stub, batch_size=64)
    e.embed_documents([f"t{i}" for i in range(150)])
    assert [len(b["input"]) for b in llm_stub.requests_to("/embeddings")] == [64, 64, 22]


def test_retries_a_500_then_succeeds(llm_stub: LLMStub) -> None:
    llm_stub.fail_status, llm_stub.fail_count = 500, 2
    e = make(llm_stub, max_retries=3)
    vectors = e.embed_documents(["retry me"])
    np.testing.assert_allclose(vectors, expected(["retry me"], llm_stub.dims), atol=1e-6)
    assert len(llm_stub.requests) == 3  # two failures, one success, no hidden client retries


def test_retries_429_with_exponential_backoff(llm_stub: LLMStub, monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr("rag.embed.litellm.time.sleep", sleeps.append)
    llm_stub.fail_status, llm_stub.fail_count = 429, 3
    make(llm_stub, max_retries=3, retry_backoff_s=0.5).embed_documents(["x"])
    assert sleeps == [0.5, 1.0, 2.0]


def test_hard_failure_is_one_line_embedding_error(llm_stub: LLMStub) -> None:
    llm_stub.fail_status = 503
    with pytest.raises(EmbeddingError) as info:
        make(llm_stub, max_retries=2).embed_documents(["x"])
    message = str(info.value)
    assert "\n" not in message
    assert "openai/stub-embed" in message and "3 attempts" in message and "503" in message
    assert API_KEY not in message
    assert len(llm_stub.requests) == 3


def test_client_errors_are_not_retried(llm_stub: LLMStub) -> None:
    llm_stub.fail_status = 401
    with pytest.raises(EmbeddingError, match="401"):
        make(llm_stub, max_retries=3).embed_documents(["x"])
    assert len(llm_stub.requests) == 1


def test_malformed_response(llm_stub: LLMStub) -> None:
    llm_stub.malformed = True
    with pytest.raises(EmbeddingError):
        make(llm_stub, max_retries=1).embed_documents(["x"])
    assert len(llm_stub.requests) == 2


def test_timeout(llm_stub: LLMStub) -> None:
    # The stub would answer after its delay: the error, not a reply, shows the timeout cut the call (no
    # wall-time bound: a loaded machine may take seconds to start the call, issue 47).
    llm_stub.delay_s = 3.0
    with pytest.raises(EmbeddingError, match="(?i)time"):
        make(llm_stub, timeout_s=0.3, max_retries=0).embed_documents(["x"])


def test_connection_refused_is_an_embedding_error() -> None:
    with LLMStub() as stub:
        base = stub.url
    e = LiteLLMEmbedder("openai/stub-embed", api_base=base + "/v1", api_key=API_KEY, max_retries=1,
                        retry_backoff_s=0.0, timeout_s=2.0)
    with pytest.raises(EmbeddingError, match="2 attempts"):
        e.embed_documents(["x"])


def test_dimension_change_is_an_error(llm_stub: LLMStub) -> None:
    e = make(llm_stub)
    e.embed_documents(["a"])
    llm_stub.dims = 4
    with pytest.raises(EmbeddingError, match="dims"):
        e.embed_documents(["b"])


def test_registry_and_settings(llm_stub: LLMStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_BASE", llm_stub.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    settings = EmbeddingSettings(model="openai/from-env", batch_size=2, max_retries=0, timeout_s=5.0)
    e = get_embedder(settings.model, settings)
    assert isinstance(e, LiteLLMEmbedder) and e.max_retries == 0 and e.timeout_s == 5.0
    assert e.embed_documents(["a", "b", "c"]).shape == (3, llm_stub.dims)
    assert [b["model"] for b in llm_stub.requests] == ["from-env", "from-env"]


def test_mask_secret() -> None:
    assert mask_secret(f"bad key {API_KEY}!", API_KEY) == "bad key sk-...ef!"
    assert "abcdef123456" not in mask_secret("Incorrect API key provided: sk-proj-abcdef123456", None)
    assert mask_secret("nothing secret here", None) == "nothing secret here"


def test_litellm_is_imported_in_one_place_and_quietly() -> None:
    """rag.llm.import_litellm is the one import (quiet, no cost-map download): the embedder, the LLM
    and the CLI all come through it, so no caller can forget the settings."""
    import ast

    from rag.llm import import_litellm
    from tests.layout.imports import _imports, module_files

    importers = sorted(module for module, path in module_files().items()
                       if any(name.split(".")[0] == "litellm" for name, _ in _imports(ast.parse(path.read_text()))))
    assert importers == ["rag.llm"]
    litellm = import_litellm()
    assert litellm.suppress_debug_info is True and import_litellm() is litellm
