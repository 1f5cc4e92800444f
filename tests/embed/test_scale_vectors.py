"""bench/scale_vectors.py (model-geometry vectors for the scale bench): the sentence-vector cache's
key and reuse, mean pooling with the seeded perturbation, and the corpus generator's record of which
sentences made each chunk. Small synthetic pools in tmp_path; no model, no database."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import scale_corpus  # noqa: E402
import scale_vectors  # noqa: E402


def fake_embed(calls: list[list[str]]):  # type: ignore[no-untyped-def]
    def embed(texts: Sequence[str]) -> np.ndarray:
        calls.append(list(texts))
        rows = np.array([[len(t), t.count("a") + 1.0, 1.0] + [0.0] * (scale_vectors.DIMS - 3) for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return embed


def test_pool_key_depends_on_model_and_every_sentence_in_order() -> None:
    key = scale_vectors.pool_key(["one", "two"])
    assert key == scale_vectors.pool_key(["one", "two"])
    assert len({key, scale_vectors.pool_key(["two", "one"]), scale_vectors.pool_key(["one", "two", "x"]),
                scale_vectors.pool_key(["one", "tw"]), scale_vectors.pool_key(["one", "two"], "other-model"),
                scale_vectors.pool_key(["onetwo"])}) == 6
    assert scale_vectors.MODEL in key


def test_sentence_vectors_embeds_each_distinct_sentence_once_and_reuses_the_cache(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    sentences = ["aaa", "b", "aaa", "ca"]
    vecs = scale_vectors.sentence_vectors(sentences, fake_embed(calls), cache=tmp_path, log=lambda *a: None)
    assert sum(len(c) for c in calls) == 3  # "aaa" once
    expected = fake_embed([])(sentences)
    np.testing.assert_allclose(vecs, expected, rtol=1e-6)
    assert vecs.dtype == np.float32 and len(list(tmp_path.glob("*.npy"))) == 1
    again = scale_vectors.sentence_vectors(sentences, fake_embed(calls), cache=tmp_path, log=lambda *a: None)
    assert len(calls) == 1 and np.array_equal(again, vecs)
    scale_vectors.sentence_vectors(["b", "aaa"], fake_embed(calls), cache=tmp_path, log=lambda *a: None)
    assert len(calls) == 2 and len(list(tmp_path.glob("*.npy"))) == 2  # another pool, another file


def test_pooled_is_the_normalised_mean_and_the_noise_separates_twins() -> None:
    rng = np.random.default_rng(0)
    svecs = rng.normal(size=(50, scale_vectors.DIMS))
    svecs /= np.linalg.norm(svecs, axis=1, keepdims=True)
    groups = [[0, 1, 2], [3], [4, 4, 5]]
    plain = scale_vectors.pooled(svecs, groups)
    for row, g in zip(plain, groups, strict=True):
        mean = svecs[g].mean(axis=0)
        np.testing.assert_allclose(row, mean / np.linalg.norm(mean), atol=1e-6)
    twins = [[7, 8, 9]] * 400
    a = scale_vectors.pooled(svecs, twins, np.random.default_rng(1))
    b = scale_vectors.pooled(svecs, twins, np.random.default_rng(2))
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cos = np.einsum("ij,ij->i", a, b)
    sigma = scale_vectors.NOISE_SIGMA
    assert cos.max() < 0.9999  # never identical vectors
    assert np.median(cos) == pytest.approx(1 / (1 + scale_vectors.DIMS * sigma**2), abs=0.01)
    assert np.array_equal(a, scale_vectors.pooled(svecs, twins, np.random.default_rng(1)))  # seeded


def _tiny_beir(root: Path) -> Path:
    rnd = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    for name in scale_corpus.SOURCES:
        (root / name).mkdir(parents=True)
        with (root / name / "corpus.jsonl").open("w") as fh:
            for d in range(6):
                sentences = [f"{name.title()} {d} s{i} " + " ".join(rnd.choices(words, k=8)) + "."
                             for i in range(rnd.randint(2, 7))]
                fh.write(json.dumps({"_id": f"{name}{d}", "title": f"T {name} {d}", "text": " ".join(sentences)}) + "\n")
    return root


def test_document_groups_name_the_sentences_each_chunk_was_built_from(tmp_path: Path) -> None:
    pool = scale_corpus._Pool(_tiny_beir(tmp_path))
    assert [pool.sentences[pool.first[d]] for d in range(len(pool.docs))] == [s[0] for _, s in pool.docs]
    rng, zipf = random.Random(5), scale_corpus._zipf_tokens(5, 64)
    for doc_no in range(30):
        doc, groups = scale_corpus._document(doc_no, rng, pool, zipf, 4)
        assert len(groups) == len(doc["chunks"]) == 4
        for (_, text, _), rows in zip(doc["chunks"], groups, strict=True):
            source = " ".join(pool.sentences[r] for r in rows).split(" ")
            kept = [w for w in text.split(" ") if not w.startswith("zq")]
            it = iter(source)  # the chunk's words are the sentences' words in order, a few dropped
            assert all(any(w == s for s in it) for w in kept)
            assert len(kept) >= 0.8 * len(source)


def test_model_corpus_is_cached_apart_from_the_hash_one() -> None:
    assert scale_corpus.corpus_dir(1000, 7).name == f"scale-1000-s7-v{scale_corpus.VERSION}"
    model_dir = scale_corpus.corpus_dir(1000, 7, "model")
    assert "model" in model_dir.name and scale_vectors.MODEL in model_dir.name
    with pytest.raises(ValueError):
        scale_corpus.corpus_dir(1000, 7, "other")


def test_model_corpus_has_the_hash_corpus_text_and_pooled_unit_vectors(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    data = _tiny_beir(tmp_path / "beir")
    monkeypatch.setattr(scale_corpus, "CACHE", tmp_path / "cache")
    pool = scale_corpus._Pool(data)
    scale_vectors.sentence_vectors(pool.sentences, fake_embed([]), cache=tmp_path / "cache", log=lambda *a: None)
    monkeypatch.setattr(scale_vectors, "CACHE", tmp_path / "cache")  # generate() finds the pool's vectors there
    hashed = scale_corpus.generate(60, 7, data=data, log=lambda *a: None)
    model = scale_corpus.generate(60, 7, data=data, log=lambda *a: None, vectors="model")
    assert hashed.root != model.root and model.n_chunks == 60
    assert (hashed.root / "docs.jsonl").read_bytes() == (model.root / "docs.jsonl").read_bytes()
    rows = np.concatenate([b for _, b in model.vector_blocks(16)])
    assert rows.shape == (60, scale_vectors.DIMS)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert rows[:, 3:].std() < 0.05 < rows[:, :3].std()  # the fake model's geometry, not hash features
    assert json.loads((model.root / "meta.json").read_text())["vectors"] == "model"
