"""Pytest fixtures for the LLM stub; ``tests/conftest.py`` imports them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.llm_stub import LLMStub


@pytest.fixture
def llm_stub() -> Iterator[LLMStub]:
    """A running OpenAI-compatible stub (``llm_stub.url + "/v1"`` is the api_base), stopped afterwards."""
    with LLMStub() as stub:
        yield stub
