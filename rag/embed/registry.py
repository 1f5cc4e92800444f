"""One registry of embedding providers; built-ins register exactly as an extra would.

A spec names a provider and an optional argument: ``local``, ``hash``, ``hash:512``. A spec
with a ``/`` (``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``) goes to the
``litellm`` provider whole. A factory takes ``(arg, settings)`` and returns an :class:`Embedder`;
built-in factories import their module on first use, so importing the registry stays cheap.

    register_provider("mine", lambda arg, settings: MyEmbedder(arg, settings.batch_size))
    get_embedder("mine:big", settings)
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from rag.config import EmbeddingSettings
from rag.embed.base import Embedder
from rag.errors import ConfigError

ProviderFactory = Callable[[str, EmbeddingSettings], Embedder]

LITELLM_PROVIDER = "litellm"

_providers: dict[str, ProviderFactory] = {}
_lock = threading.Lock()


def register_provider(name: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Make ``name`` (and ``name:<arg>``) a valid spec; re-registering needs ``replace=True``."""
    if not name or not name.replace("-", "").replace("_", "").isalnum() or not name.isascii():
        raise ValueError(f"invalid embedding provider name {name!r}")
    with _lock:
        if name in _providers and not replace and _providers[name] is not factory:
            raise ValueError(f"embedding provider {name!r} is already registered")
        _providers[name] = factory


def provider_names() -> list[str]:
    with _lock:
        return sorted(_providers)


def parse_spec(spec: str) -> tuple[str, str]:
    """``"hash:512"`` -> ``("hash", "512")``; ``"openai/x"`` -> ``("litellm", "openai/x")``."""
    spec = spec.strip()
    if "/" in spec:
        return LITELLM_PROVIDER, spec
    name, _, arg = spec.partition(":")
    return name.strip().lower(), arg.strip()


def get_embedder(spec: str, settings: EmbeddingSettings) -> Embedder:
    """The embedder for ``spec`` (e.g. ``settings.model``), configured from ``settings``."""
    name, arg = parse_spec(spec)
    with _lock:
        factory = _providers.get(name)
    if factory is None or (name == LITELLM_PROVIDER and "/" not in arg):
        extra = sorted(set(provider_names()) - set(_BUILTINS))
        others = f", or a registered provider ({', '.join(extra)})" if extra else ""
        raise ConfigError(
            f"unknown embedding model '{spec}': use 'local', 'hash', 'hash:<dims>' or a litellm model "
            f"'provider/model' such as 'openai/text-embedding-3-small'{others}"
        )
    return factory(arg, settings)


def _lazy(module: str, cls: str) -> ProviderFactory:
    def factory(arg: str, settings: EmbeddingSettings) -> Embedder:
        embedder_cls = getattr(importlib.import_module(module), cls)
        embedder: Embedder = embedder_cls.from_spec(arg, settings)
        return embedder

    factory.__qualname__ = f"{cls}.from_spec"
    return factory


_BUILTINS: dict[str, ProviderFactory] = {
    "local": _lazy("rag.embed.local", "LocalEmbedder"),
    "hash": _lazy("rag.embed.hash", "HashEmbedder"),
    LITELLM_PROVIDER: _lazy("rag.embed.litellm", "LiteLLMEmbedder"),
}
for _name, _factory in _BUILTINS.items():
    register_provider(_name, _factory)
