from __future__ import annotations

import pytest

from rag.config import EmbeddingSettings
from rag.embed import get_embedder, parse_spec, provider_names, register_provider
from rag.embed.hash import HashEmbedder
from rag.embed.litellm import LiteLLMEmbedder
from rag.embed.local import LocalEmbedder
from rag.errors import ConfigError


@pytest.fixture
def settings() -> EmbeddingSettings:
    return EmbeddingSettings(hash_dims=96, batch_size=16, query_cache_size=0)


def test_parse_spec() -> None:
    assert parse_spec("local") == ("local", "")
    assert parse_spec("hash:512") == ("hash", "512")
    assert parse_spec(" HASH ") == ("hash", "")
    assert parse_spec("openai/text-embedding-3-small") == ("litellm", "openai/text-embedding-3-small")
    assert parse_spec("ollama/nomic-embed-text:latest") == ("litellm", "ollama/nomic-embed-text:latest")


def test_builtins(settings: EmbeddingSettings) -> None:
    assert {"local", "hash", "litellm"} <= set(provider_names())
    local = get_embedder("local", settings)  # constructing does not load the model
    assert isinstance(local, LocalEmbedder)
    assert (local.provider, local.model, local.dims, local.batch_size) == ("local", "all-MiniLM-L6-v2", 384, 16)
    assert local.model_key == "local/all-MiniLM-L6-v2"
    assert isinstance(get_embedder(EmbeddingSettings().model, settings), LocalEmbedder)  # the default


@pytest.mark.parametrize("spec", ["local", "hash", "openai/text-embedding-3-small"])
def test_every_builtin_takes_the_sentence_cache_size_from_settings(spec: str) -> None:
    assert get_embedder(spec, EmbeddingSettings(sentence_cache_size=7)).sentence_cache_size == 7
    assert get_embedder(spec, EmbeddingSettings(sentence_cache_size=0)).sentence_cache_size == 0
    assert EmbeddingSettings().sentence_cache_size == 8192  # on by default


def test_hash_specs(settings: EmbeddingSettings) -> None:
    default = get_embedder("hash", settings)
    assert isinstance(default, HashEmbedder)
    assert (default.dims, default.model, default.model_key) == (96, "feature-hash-96", "hash/feature-hash-96")
    sized = get_embedder("hash:512", settings)
    assert (sized.dims, sized.model_key) == (512, "hash/feature-hash-512")


def test_litellm_specs(settings: EmbeddingSettings) -> None:
    e = get_embedder("openai/text-embedding-3-small", settings)
    assert isinstance(e, LiteLLMEmbedder)
    assert (e.provider, e.model, e.batch_size) == ("openai", "text-embedding-3-small", 16)
    assert e.model_key == "openai/text-embedding-3-small"
    o = get_embedder("ollama/nomic-embed-text", settings)
    assert (o.provider, o.model, o.model_key) == ("ollama", "nomic-embed-text", "ollama/nomic-embed-text")


@pytest.mark.parametrize("spec", ["", "nope", "litellm", "litellm:x", "openai", "sentence-transformers"])
def test_unknown_spec_is_a_one_line_config_error(spec: str, settings: EmbeddingSettings) -> None:
    with pytest.raises(ConfigError) as info:
        get_embedder(spec, settings)
    message = str(info.value)
    assert "\n" not in message
    assert "'local'" in message and "'hash:<dims>'" in message and "provider/model" in message


@pytest.mark.parametrize("spec", ["hash:0", "hash:-3", "hash:abc", "hash:1.5", "local:bge-small", "openai/"])
def test_bad_arguments(spec: str, settings: EmbeddingSettings) -> None:
    with pytest.raises(ConfigError):
        get_embedder(spec, settings)


def test_an_extra_registers_like_the_builtins(settings: EmbeddingSettings) -> None:
    def factory(arg: str, s: EmbeddingSettings) -> HashEmbedder:
        return HashEmbedder(int(arg or 8), batch_size=s.batch_size)

    register_provider("test-extra", factory)
    try:
        assert "test-extra" in provider_names()
        assert get_embedder("test-extra:24", settings).dims == 24
        register_provider("test-extra", factory)  # the same factory again is fine
        with pytest.raises(ValueError):
            register_provider("test-extra", lambda arg, s: factory(arg, s))
        register_provider("test-extra", lambda arg, s: factory("4", s), replace=True)
        assert get_embedder("test-extra", settings).dims == 4
        with pytest.raises(ConfigError, match="test-extra"):
            get_embedder("unknown", settings)
    finally:
        from rag.embed import registry

        registry._providers.pop("test-extra", None)
    with pytest.raises(ValueError):
        register_provider("bad name", factory)
