from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rag.config import EmbeddingSettings
from rag.embed.hash import HashEmbedder, feature_hashes

SENTENCE = "Postgres hybrid search"


def test_pinned_values_never_change() -> None:
    """Stored vectors stay valid only if the hashing is stable across versions and machines."""
    rows, hashes = feature_hashes([SENTENCE])
    assert rows.tolist() == [0] * 5
    assert hashes.tolist() == [174101640757743385, 16976821269484825535, 760972013200982041,
                               13132161964622144639, 12202751242622712486]
    vector = HashEmbedder(16).embed_query(SENTENCE)
    expected = np.zeros(16)
    expected[[6, 9, 15]] = [-0.385372, 0.652491, -0.652491]
    np.testing.assert_allclose(vector, expected, atol=1e-6)


def test_deterministic_across_processes() -> None:
    code = ("from rag.embed.hash import HashEmbedder; "
            f"print(HashEmbedder(64).embed_query({SENTENCE!r}).tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123"}).stdout.strip()
    assert bytes.fromhex(out) == HashEmbedder(64).embed_query(SENTENCE).tobytes()


def test_shape_dtype_and_unit_norm() -> None:
    e = HashEmbedder(128)
    texts = ["a", "The quick brown fox", "fox fox fox fox", "x " * 500, "Ünïcödé wörds ça va", "1234 5678"]
    vectors = e.embed_documents(texts)
    assert vectors.shape == (len(texts), 128) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_case_punctuation_and_batching_do_not_matter() -> None:
    e = HashEmbedder(256, batch_size=3)
    a = e.embed_query("Hello, World!")
    np.testing.assert_array_equal(a, e.embed_query("hello world"))
    texts = [f"note {i} about postgres and vectors" for i in range(10)]
    together = e.embed_documents(texts)
    np.testing.assert_array_equal(together, np.stack([e.embed_query(t) for t in texts]))


def test_empty_and_wordless_texts_are_a_defined_unit_vector() -> None:
    e = HashEmbedder(32)
    vectors = e.embed_documents(["", "   ", "!!! ---", "real words"])
    assert np.isfinite(vectors).all()
    expected = np.zeros(32, dtype=np.float32)
    expected[0] = 1.0
    for row in vectors[:3]:
        np.testing.assert_array_equal(row, expected)
    cosine = vectors[3] @ vectors[0]
    assert np.isfinite(cosine)


def test_similar_texts_score_higher() -> None:
    e = HashEmbedder(384)
    q, near, far = e.embed_documents([
        "how to create an hnsw index in pgvector",
        "create an hnsw index with pgvector for fast search",
        "banana bread recipe with walnuts",
    ])
    assert q @ near > 0.3 > q @ far


def test_bigrams_make_word_order_matter() -> None:
    e = HashEmbedder(384)
    a, b = e.embed_documents(["dog bites man", "man bites dog"])
    assert 0.3 < a @ b < 0.99


def test_sublinear_term_frequency() -> None:
    one, many = HashEmbedder(4096).embed_documents(["alpha beta", "alpha alpha alpha alpha alpha alpha alpha beta"])
    # with raw counts alpha would dominate (7:1); with 1 + ln(tf) it is ~2.9:1
    ratio = np.abs(many).max() / np.sort(np.abs(many[many != 0]))[0]
    assert ratio < 4
    assert one @ many > 0.5


def test_dims_come_from_settings_or_spec() -> None:
    assert HashEmbedder.from_spec("", EmbeddingSettings(hash_dims=48)).dims == 48
    assert HashEmbedder.from_spec("200", EmbeddingSettings()).embed_query("x").shape == (200,)
    from rag.errors import ConfigError

    with pytest.raises(ConfigError):
        HashEmbedder(0)
