"""Prompt files declare their variables; the litellm-backed LLM degrades to LLMError."""

from __future__ import annotations

from importlib import resources

import pytest

from rag.config import LLMSettings
from rag.errors import ConfigError, LLMError
from rag.llm import LiteLLM, Message, get_llm
from rag.prompts import load_prompt


def test_every_prompt_file_declares_exactly_what_it_uses():
    names = [p.name[:-4] for p in resources.files("rag.prompts").iterdir() if p.name.endswith(".txt")]
    assert {"hyde", "rewrite", "multi_query", "reverse_draft"} <= set(names)
    for name in names:
        prompt = load_prompt(name)
        rendered = prompt.render(**{v: f"<{v}>" for v in prompt.variables})
        assert all(f"<{v}>" in rendered for v in prompt.variables)


def test_render_rejects_missing_variables():
    with pytest.raises(ConfigError, match="needs"):
        load_prompt("multi_query").render(query="x")


def test_no_model_configured_means_no_llm():
    assert get_llm(LLMSettings()) is None


def test_unreachable_llm_raises_llm_error_quickly():
    llm = LiteLLM(LLMSettings(model="openai/stub", api_base="http://127.0.0.1:1/v1", api_key="sk-secret-123",
                              timeout_s=2))
    with pytest.raises(LLMError) as err:
        llm.complete([Message("user", "hello")])
    assert "sk-secret-123" not in str(err.value)


def test_an_llm_error_never_shows_the_configured_key(llm_stub):
    """A provider may echo the key it was sent (a 401 body): the key is removed from the error text
    whatever its shape (pattern masking only knows known shapes), and so are credentials in api_base."""
    key = "MYLLMKEYzq9Xw7Vt"
    llm_stub.fail_status, llm_stub.fail_message = 401, f"Incorrect API key provided: {key}"
    base = llm_stub.url.replace("http://", "http://proxyuser:ProxyPassw0rd99@") + "/v1"
    llm = LiteLLM(LLMSettings(model="openai/stub", api_base=base, api_key=key, timeout_s=5, max_retries=0))
    with pytest.raises(LLMError) as err:
        llm.complete([Message("user", "hello")])
    assert "401" in str(err.value) or "Authentication" in str(err.value) or "Incorrect" in str(err.value)
    assert key not in str(err.value) and "ProxyPassw0rd99" not in str(err.value)
