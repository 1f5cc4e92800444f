"""The one embedder interface every provider implements, and the helpers they share.

An embedder turns texts into float32 rows of shape ``(n, dims)``, L2-normalised so that
cosine similarity is a dot product. Providers implement :meth:`Embedder.embed_batch`
(one call's worth of texts); batching, the query cache and the sentence cache live here. The names of a model's SQL objects do not: SQL
generates them (`rag.store.models`).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

from rag.config import EmbeddingSettings

DEFAULT_BATCH_SIZE: Final[int] = EmbeddingSettings.model_fields["batch_size"].default

def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32. All-zero rows stay zero (no NaN)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0).astype(np.float32)


def embed_in_batches(
    embed_batch: Callable[[Sequence[str]], np.ndarray],
    texts: Sequence[str],
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    dims: int = 0,
) -> np.ndarray:
    """Call ``embed_batch`` on consecutive slices of at most ``batch_size`` texts; stack the rows.

    ``dims`` only shapes the result for no texts: ``(0, dims)``.
    """
    if batch_size <= 0:
        raise ValueError("batch_size must be positive")
    parts = [embed_batch(texts[start : start + batch_size]) for start in range(0, len(texts), batch_size)]
    if not parts:
        return np.zeros((0, dims), dtype=np.float32)
    return np.ascontiguousarray(np.concatenate(parts, axis=0), dtype=np.float32)


class Embedder(ABC):
    """An embedding model: ``provider``/``model`` name it, ``dims`` sizes its vectors.

    Subclasses implement :meth:`embed_batch` and :attr:`dims`; they may override
    :meth:`embed_documents` (e.g. to sort by length) but must keep its contract:
    float32, shape ``(len(texts), dims)``, rows L2-normalised, order preserved.
    """

    provider: str
    model: str
    batch_size: int

    def __init__(self, *, provider: str, model: str, batch_size: int = DEFAULT_BATCH_SIZE,
                 query_cache_size: int = 0, sentence_cache_size: int = 0) -> None:
        self.provider = provider
        self.model = model
        self.batch_size = batch_size
        self._query_cache_size = query_cache_size
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_lock = threading.Lock()
        self._sentence_cache_size = sentence_cache_size
        self._sentence_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._sentence_lock = threading.Lock()

    @property
    @abstractmethod
    def dims(self) -> int:
        """Length of every vector this embedder returns."""

    def load(self) -> None:  # noqa: B027 - a hook: most embedders have nothing to load
        """Load the model now instead of on the first call; an embedder with nothing to load does nothing."""

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed one batch (at most ``batch_size`` texts) -> float32 ``(len(texts), dims)``, normalised."""

    @property
    def sentence_cache_size(self) -> int:
        """How many sentence vectors `embed_sentences` keeps (0: none)."""
        return self._sentence_cache_size

    @property
    def model_key(self) -> str:
        """``"<provider>/<model>"``, the name stored beside every vector."""
        return f"{self.provider}/{self.model}"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        return embed_in_batches(self.embed_batch, texts, self.batch_size)

    def embed_query(self, text: str) -> np.ndarray:
        """One vector of shape ``(dims,)``; the last ``query_cache_size`` queries are cached."""
        if self._query_cache_size <= 0:
            return self._embed_one(text)
        with self._query_lock:
            cached = self._query_cache.get(text)
            if cached is not None:
                self._query_cache.move_to_end(text)
                return cached.copy()
        vector = self._embed_one(text)
        with self._query_lock:
            self._query_cache[text] = vector.copy()
            while len(self._query_cache) > self._query_cache_size:
                self._query_cache.popitem(last=False)
        return vector

    def embed_sentences(self, texts: Sequence[str]) -> np.ndarray:
        """`embed_documents` for the short texts an answer weighs, the last `sentence_cache_size` kept.

        A long-lived process (`ragpg serve`, a chat backend) quotes from the same popular passages
        again and again; embedding their sentences is most of an answer's time without an LLM. Each
        distinct text is embedded once per call; the rows come back in the caller's order."""
        texts = list(texts)
        if self._sentence_cache_size <= 0 or not texts:
            return self.embed_documents(texts)
        found: dict[str, np.ndarray] = {}
        with self._sentence_lock:
            for text in texts:
                vector = self._sentence_cache.get(text)
                if vector is not None:
                    self._sentence_cache.move_to_end(text)
                    found[text] = vector
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            fresh = self.embed_documents(missing)
            with self._sentence_lock:
                for text, vector in zip(missing, fresh, strict=True):
                    found[text] = vector
                    self._sentence_cache[text] = vector.copy()  # a row of its own: no batch kept alive by a view
                while len(self._sentence_cache) > self._sentence_cache_size:
                    self._sentence_cache.popitem(last=False)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=True)

    def _embed_one(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_key}>"
