"""The stub through the real litellm client, as the LLM code will use it."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from tests.support.llm_stub import LLMStub

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")
litellm.suppress_debug_info = True


def complete(stub: LLMStub, content: str = "hi", **kwargs: Any) -> Any:
    return litellm.completion(model="openai/stub", api_base=stub.url + "/v1", api_key="sk-test",
                              messages=[{"role": "user", "content": content}], max_retries=0, **kwargs)


def test_default_reply_and_request_log(llm_stub: LLMStub) -> None:
    response = complete(llm_stub, "what is rrf?", temperature=0.0)
    assert response.choices[0].message.content == "stub reply"
    assert response.usage.total_tokens > 0
    body = llm_stub.requests[-1]
    assert body["model"] == "stub" and body["temperature"] == 0.0
    assert body["messages"] == [{"role": "user", "content": "what is rrf?"}]
    assert llm_stub.received[-1].path == "/v1/chat/completions"
    assert llm_stub.received[-1].headers["authorization"] == "Bearer sk-test"


def test_scripted_queue_then_responder() -> None:
    with LLMStub(responses=["one"], responder=lambda messages: f"echo: {messages[-1]['content']}") as stub:
        stub.queue("two")
        replies = [complete(stub, q).choices[0].message.content for q in ("a", "b", "c")]
    assert replies == ["one", "two", "echo: c"]


def test_dict_response_carries_tool_calls(llm_stub: LLMStub) -> None:
    llm_stub.queue({"tool_calls": [{"id": "call_1", "type": "function",
                                    "function": {"name": "search", "arguments": '{"q": "x"}'}}]})
    message = complete(llm_stub).choices[0].message
    assert message.tool_calls[0].function.name == "search"


def test_streaming(llm_stub: LLMStub) -> None:
    llm_stub.queue("a streamed answer")
    chunks = [c.choices[0].delta.content or "" for c in complete(llm_stub, stream=True)]
    assert "".join(chunks) == "a streamed answer"


@pytest.mark.parametrize("status, error", [(500, "InternalServerError"), (429, "RateLimitError"),
                                           (401, "AuthenticationError")])
def test_fail_status(llm_stub: LLMStub, status: int, error: str) -> None:
    llm_stub.fail_status = status
    with pytest.raises(getattr(litellm.exceptions, error)):
        complete(llm_stub)


def test_fail_count_then_recovers(llm_stub: LLMStub) -> None:
    llm_stub.fail_status, llm_stub.fail_count = 500, 1
    with pytest.raises(litellm.exceptions.InternalServerError):
        complete(llm_stub)
    assert complete(llm_stub).choices[0].message.content == "stub reply"


def test_malformed(llm_stub: LLMStub) -> None:
    llm_stub.malformed = True
    with pytest.raises((litellm.exceptions.APIError, litellm.exceptions.InternalServerError)):
        complete(llm_stub)


def test_slow_reply_times_out(llm_stub: LLMStub) -> None:
    llm_stub.delay_s = 3.0
    with pytest.raises(litellm.exceptions.Timeout):
        complete(llm_stub, timeout=0.3)


def test_concurrent_requests(llm_stub: LLMStub) -> None:
    llm_stub.delay_s = 0.2
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(complete(llm_stub).choices[0].message.content))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == ["stub reply"] * 4 and len(llm_stub.requests) == 4


def test_embeddings_endpoint_and_dims() -> None:
    with LLMStub(dims=5) as stub:
        response = litellm.embedding(model="openai/e", input=["a", "b"], api_base=stub.url + "/v1",
                                     api_key="sk-test")
        assert [len(d["embedding"]) for d in response.data] == [5, 5]
        assert stub.requests_to("/embeddings")[0]["input"] == ["a", "b"]
    with pytest.raises(RuntimeError):
        _ = stub.url  # stopped
