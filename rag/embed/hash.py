"""Deterministic feature-hashing embedder: no model, no network, the same vector on every machine.

Features are the lower-cased word unigrams and bigrams of a text (``\\w+`` runs). Each word is
hashed with blake2b (64 bits, stable across processes, unlike ``hash()``; cached, since words
repeat); a bigram's hash mixes its two word hashes with splitmix64 (vectorised in numpy, also
stable). The hash modulo ``dims`` picks a bucket, its top bit a sign (+1/-1) so collisions
cancel instead of piling up. Each bucket's signed count ``c`` becomes ``sign(c) * (1 + ln|c|)``
(sublinear tf), then the row is L2-normalised. A text without any word (``""``, ``"!!"``), or
whose buckets all cancel, gets the unit vector ``e_0`` (1.0 in bucket 0) instead of zeros, so its
norm is 1 and cosine with anything is defined (never NaN).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from hashlib import blake2b
from typing import Final

import numpy as np

from rag.config import EmbeddingSettings
from rag.embed.base import DEFAULT_BATCH_SIZE, Embedder, l2_normalize
from rag.errors import ConfigError

PROVIDER: Final = "hash"
_WORD = re.compile(r"\w+")
_SIGN_BIT: Final = np.uint64(63)
_BIGRAM_SALT: Final = np.uint64(0x6A09E667F3BCC908)


@lru_cache(maxsize=1 << 18)
def _word_hash(word: str) -> int:
    return int.from_bytes(blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: np.ndarray = x ^ (x >> np.uint64(31))
    return mixed


def feature_hashes(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, hashes)``: one uint64 hash per unigram and bigram feature, and the text it belongs to."""
    words: list[str] = []
    lengths = np.empty(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        found = _WORD.findall(text.lower())
        lengths[i] = len(found)
        words.extend(found)
    unigrams = np.fromiter(map(_word_hash, words), dtype=np.uint64, count=len(words))
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    same_text = rows[1:] == rows[:-1]
    left, right = unigrams[:-1][same_text], unigrams[1:][same_text]
    bigrams = _splitmix64(left ^ _splitmix64(right ^ _BIGRAM_SALT))
    return np.concatenate([rows, rows[1:][same_text]]), np.concatenate([unigrams, bigrams])


class HashEmbedder(Embedder):
    """provider ``hash``, model ``feature-hash-<dims>``."""

    def __init__(self, dims: int, *, batch_size: int = DEFAULT_BATCH_SIZE, query_cache_size: int = 0,
                 sentence_cache_size: int = 0) -> None:
        if dims <= 0:
            raise ConfigError(f"hash embedder dims must be positive, got {dims}")
        super().__init__(provider=PROVIDER, model=f"feature-hash-{dims}", batch_size=batch_size,
                         query_cache_size=query_cache_size, sentence_cache_size=sentence_cache_size)
        self._dims = dims

    @classmethod
    def from_spec(cls, arg: str, settings: EmbeddingSettings) -> HashEmbedder:
        """``hash`` -> ``settings.hash_dims``; ``hash:<dims>`` -> that many dims."""
        if not arg:
            dims = settings.hash_dims
        elif arg.isascii() and arg.isdigit() and int(arg) > 0:
            dims = int(arg)
        else:
            raise ConfigError(f"invalid embedding model 'hash:{arg}': use 'hash' or 'hash:<dims>' with dims > 0")
        return cls(dims, batch_size=settings.batch_size, query_cache_size=settings.query_cache_size,
                   sentence_cache_size=settings.sentence_cache_size)

    @property
    def dims(self) -> int:
        return self._dims

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        n, dims = len(texts), self._dims
        rows, hashes = feature_hashes(texts)
        buckets = (hashes % np.uint64(dims)).astype(np.int64)
        signs = np.where((hashes >> _SIGN_BIT) == 0, 1.0, -1.0)
        counts = np.bincount(rows * dims + buckets, weights=signs, minlength=n * dims).reshape(n, dims)
        values = np.sign(counts) * (1.0 + np.log(np.maximum(np.abs(counts), 1.0)))
        values[~values.any(axis=1), 0] = 1.0
        return l2_normalize(values)
