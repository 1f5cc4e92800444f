"""Any embedding model litellm can call: ``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``...

The spec's part before ``/`` is the provider, the rest the model. Calls go through
``litellm.embedding`` with our own retries (``max_retries``, exponential backoff from
``retry_backoff_s``) on connection errors, timeouts, 408/409/429 and 5xx; other failures raise
at once. Every failure is an :class:`EmbeddingError` with one line, the API key masked.
``dims`` is learned from the first response (a one-word probe if asked before any call).
litellm is imported on first use: it takes seconds to import.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag.config import EmbeddingSettings
from rag.embed.base import DEFAULT_BATCH_SIZE, Embedder, l2_normalize
from rag.errors import ConfigError, EmbeddingError
from rag.llm import import_litellm

PROBE_TEXT = "dimension probe"
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)+")
_KEY_LIKE = re.compile(r"\b(sk|pk|key|api)[-_][A-Za-z0-9_\-]{6,}", re.IGNORECASE)

def mask_secret(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` and anything key-shaped replaced by a masked form."""
    if secret:
        text = text.replace(secret, _masked(secret))
    return _KEY_LIKE.sub(lambda m: _masked(m.group(0)), text)


def _masked(secret: str) -> str:
    return f"{secret[:3]}...{secret[-2:]}" if len(secret) > 12 else "***"


class _NoRetries(int):
    """A 0 that is truthy: litellm's OpenAI embedding path does ``max_retries or DEFAULT_MAX_RETRIES``
    (llms/openai/openai.py), which turns a plain 0 into 2 hidden client retries per attempt."""

    def __new__(cls) -> _NoRetries:
        return super().__new__(cls, 0)

    def __bool__(self) -> bool:
        return True


_NO_RETRIES = _NoRetries()


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _is_retryable(exc: BaseException) -> bool:
    status = _status_of(exc)
    return status is None or status in _RETRYABLE_STATUS or status >= 500


class LiteLLMEmbedder(Embedder):
    """provider = the spec before ``/`` (``openai``), model = the rest (``text-embedding-3-small``)."""

    def __init__(
        self,
        spec: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = EmbeddingSettings.model_fields["timeout_s"].default,
        max_retries: int = EmbeddingSettings.model_fields["max_retries"].default,
        retry_backoff_s: float = EmbeddingSettings.model_fields["retry_backoff_s"].default,
        batch_size: int = DEFAULT_BATCH_SIZE,
        query_cache_size: int = 0,
        sentence_cache_size: int = 0,
        dims: int | None = None,
    ) -> None:
        provider, _, model = spec.partition("/")
        if not provider or not model:
            raise ConfigError(f"invalid embedding model '{spec}': use 'provider/model', e.g. 'openai/text-embedding-3-small'")
        super().__init__(provider=provider, model=model, batch_size=batch_size, query_cache_size=query_cache_size,
                         sentence_cache_size=sentence_cache_size)
        self.spec = spec
        self.api_base = api_base
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self._dims = dims
        self._dims_lock = threading.Lock()

    @classmethod
    def from_spec(cls, arg: str, settings: EmbeddingSettings) -> LiteLLMEmbedder:
        """``arg`` is the whole spec; ``api_base``/``api_key`` come from settings when it has them."""
        return cls(
            arg,
            api_base=getattr(settings, "api_base", None),  # optional settings; else litellm's env vars
            api_key=getattr(settings, "api_key", None),
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            retry_backoff_s=settings.retry_backoff_s,
            batch_size=settings.batch_size,
            query_cache_size=settings.query_cache_size,
            sentence_cache_size=settings.sentence_cache_size,
        )

    @property
    def dims(self) -> int:
        if self._dims is None:
            self.embed_batch([PROBE_TEXT])
        assert self._dims is not None
        return self._dims

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        response = self._call(list(texts))
        vectors = self._parse(response, len(texts))
        with self._dims_lock:
            if self._dims is None:
                self._dims = vectors.shape[1]
        if vectors.shape[1] != self._dims:
            raise EmbeddingError(f"embedding model {self.spec} returned {vectors.shape[1]} dims, expected {self._dims}")
        return l2_normalize(vectors)

    def _call(self, texts: list[str]) -> Any:
        litellm = import_litellm()
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return litellm.embedding(
                    model=self.spec, input=texts, api_base=self.api_base, api_key=self._api_key,
                    timeout=self.timeout_s, max_retries=_NO_RETRIES,
                )
            except Exception as exc:
                if attempt + 1 >= attempts or not _is_retryable(exc):
                    raise self._error(exc, attempt + 1) from None
                time.sleep(self.retry_backoff_s * (2**attempt))
        raise AssertionError("unreachable")

    def _parse(self, response: Any, expected: int) -> np.ndarray:
        try:
            items = sorted(response.data, key=lambda item: _field(item, "index"))
            rows = [_field(item, "embedding") for item in items]
            vectors = np.asarray(rows, dtype=np.float32)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedding model {self.spec} returned an unreadable response: {exc}") from None
        if vectors.ndim != 2 or vectors.shape[0] != expected or vectors.shape[1] == 0:
            raise EmbeddingError(
                f"embedding model {self.spec} returned {vectors.shape[0] if vectors.ndim else 0} vectors "
                f"for {expected} texts"
            )
        if not np.isfinite(vectors).all():
            raise EmbeddingError(f"embedding model {self.spec} returned non-finite values")
        return vectors

    def _error(self, exc: BaseException, attempts: int) -> EmbeddingError:
        detail = _LITELLM_PREFIX.sub("", " ".join(str(exc).split())).removeprefix(f"{type(exc).__name__}: ")
        status = _status_of(exc)
        where = f" (HTTP {status})" if status is not None else ""
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        message = f"embedding model {self.spec} failed{tries}{where}: {type(exc).__name__}: {detail}"
        return EmbeddingError(mask_secret(message, self._api_key)[:500])


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)
