from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rag.embed.base import Embedder, embed_in_batches, l2_normalize


class CountingEmbedder(Embedder):
    """A fake that implements the real interface: vector = (len, word count, 1), normalised."""

    def __init__(self, batch_size: int = 64, query_cache_size: int = 0, sentence_cache_size: int = 0) -> None:
        super().__init__(provider="fake", model="Counting-Model.v1", batch_size=batch_size,
                         query_cache_size=query_cache_size, sentence_cache_size=sentence_cache_size)
        self.batches: list[list[str]] = []

    @property
    def dims(self) -> int:
        return 3

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return l2_normalize(np.array([[len(t), len(t.split()), 1.0] for t in texts]))


def test_names() -> None:
    # SQL object names are not the embedder's business: SQL generates them (tests/retrieval/test_model_names.py).
    assert CountingEmbedder().model_key == "fake/Counting-Model.v1"


def test_150_texts_make_3_calls_of_at_most_64() -> None:
    e = CountingEmbedder()
    texts = [f"text number {i}" for i in range(150)]
    vectors = e.embed_documents(texts)
    assert [len(b) for b in e.batches] == [64, 64, 22]
    assert [t for b in e.batches for t in b] == texts
    assert vectors.shape == (150, 3) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_embed_in_batches_helper() -> None:
    calls: list[int] = []

    def batch(texts: Sequence[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.ones((len(texts), 2), dtype=np.float32)

    assert embed_in_batches(batch, ["x"] * 10, batch_size=4).shape == (10, 2)
    assert calls == [4, 4, 2]
    assert embed_in_batches(batch, ["x"] * 64).shape == (64, 2)
    assert calls[-1] == 64
    empty = embed_in_batches(batch, [], dims=2)
    assert empty.shape == (0, 2) and empty.dtype == np.float32
    with pytest.raises(ValueError):
        embed_in_batches(batch, ["x"], batch_size=0)


def test_l2_normalize_keeps_zero_rows_finite() -> None:
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_embed_query_and_its_cache() -> None:
    e = CountingEmbedder(query_cache_size=2)
    first = e.embed_query("hello world")
    assert first.shape == (3,)
    first[:] = 0  # callers may mutate what they get; the cache keeps its own copy
    again = e.embed_query("hello world")
    assert len(e.batches) == 1 and np.linalg.norm(again) == pytest.approx(1.0)
    e.embed_query("a")
    e.embed_query("b")  # evicts "hello world"
    e.embed_query("hello world")
    assert len(e.batches) == 4
    uncached = CountingEmbedder()
    uncached.embed_query("x")
    uncached.embed_query("x")
    assert len(uncached.batches) == 2


def test_embed_sentences_embeds_each_new_text_once_and_keeps_the_last_ones() -> None:
    e = CountingEmbedder(sentence_cache_size=3)
    first = e.embed_sentences(["a b", "c", "a b"])  # a repeat within one call is embedded once
    assert e.batches == [["a b", "c"]]
    np.testing.assert_array_equal(first, e.embed_documents(["a b", "c", "a b"]))
    e.batches.clear()
    first[:] = 0  # callers may mutate what they get; the cache keeps its own rows
    again = e.embed_sentences(["c", "d e f", "a b"])
    assert e.batches == [["d e f"]]  # only the new one
    np.testing.assert_allclose(np.linalg.norm(again, axis=1), 1.0, rtol=1e-6)
    assert again.dtype == np.float32 and again.shape == (3, 3)
    e.batches.clear()
    e.embed_sentences(["g"])  # four texts seen, three kept: the least recently used ("c") goes
    e.embed_sentences(["a b", "d e f", "g"])
    assert e.batches == [["g"]]
    e.embed_sentences(["c"])
    assert e.batches == [["g"], ["c"]]
    assert e.embed_sentences([]).shape == (0, 3)


def test_embed_sentences_without_a_cache_embeds_every_time() -> None:
    e = CountingEmbedder()
    e.embed_sentences(["x", "y"])
    e.embed_sentences(["x", "y"])
    assert e.batches == [["x", "y"], ["x", "y"]]
