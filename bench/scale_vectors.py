"""Vectors with a sentence-embedding model's geometry for bench/scale.py `--vectors model`, at a cost
that fits a million chunks.

Embedding 1M chunks with the local model (all-MiniLM-L6-v2, rag.embed.local) takes hours on 2
cores. Every chunk of the synthetic corpus is built from a few sentences of the source abstracts
(bench/scale_corpus.py), so instead:

* each sentence of the pool the generator draws from is embedded once with the local model
  (~80k sentences of SciFact + NFCorpus; cached as .npy under /tmp/ragpg-bench-cache, keyed by the
  model and a hash of the pool);
* a chunk's vector is the L2-normalised mean of the vectors of the sentences it was built from
  (the model forms a text's vector by mean pooling, so this is close to embedding the chunk: the
  median cosine to the model's embedding of the chunk's actual text is measured by
  `python bench/scale_vectors_check.py validate` and reported in bench/README.md),
* plus a seeded Gaussian perturbation of `NOISE_SIGMA` per dimension, renormalised, so that two
  chunks built from the same sentences (frequent: ~80k sentences, 1M chunks) are near but not
  identical vectors, as two chunks differing in a few dropped words and one token are under the
  model. Two such twins end up at cosine ~1 / (1 + 384 sigma^2) (`validate` prints the median).

    python bench/scale_vectors_check.py sentences          # embed the pool (~15-20 min on 2 busy cores)
    python bench/scale_vectors_check.py validate --chunks 200
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

MODEL = "all-MiniLM-L6-v2"
DIMS = 384
CACHE = Path("/tmp/ragpg-bench-cache")
# Per-dimension std of the perturbation added to a chunk's unit mean vector (noise of norm ~0.13):
# pooled twins at cosine 1 / (1 + 384 * 0.0067^2) = 0.983, the median cosine `validate` measured
# between the model's embeddings of two real twins (same sentences, different dropped words and
# Zipf token; 200 chunks, 2026-11-25). With 0.0125 the pooled twins were at 0.944.
NOISE_SIGMA = 0.0067


def pool_key(sentences: Sequence[str], model: str = MODEL) -> str:
    """File stem of a pool's sentence-vector cache: the model, the pool's size and a hash of its
    sentences in order (a different pool or model never reads another's vectors)."""
    digest = hashlib.sha256(model.encode())
    for s in sentences:
        digest.update(b"\0" + s.encode())
    return f"sentences-{model}-{len(sentences)}-{digest.hexdigest()[:12]}"


def _local_embed(texts: Sequence[str]) -> np.ndarray:
    from rag.embed.local import LocalEmbedder

    return LocalEmbedder().embed_documents(list(texts))


def sentence_vectors(sentences: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray] = _local_embed,
                     model: str = MODEL, cache: Path | None = None, log: Any = print) -> np.ndarray:
    """One float32 unit row per sentence (in order): the cached file (under `cache`, default CACHE),
    else embedded (each distinct sentence once) and cached."""
    cache = CACHE if cache is None else cache
    path = cache / f"{pool_key(sentences, model)}.npy"
    if path.exists():
        vecs = np.load(path)
        if vecs.shape == (len(sentences), DIMS):
            return vecs
    distinct = list(dict.fromkeys(sentences))
    log(f"embedding {len(distinct)} distinct sentences of {len(sentences)} with {model} into {path} ...")
    started, parts = time.perf_counter(), []
    for start in range(0, len(distinct), 2048):
        parts.append(np.asarray(embed(distinct[start:start + 2048]), dtype=np.float32))
        done = start + len(parts[-1])
        log(f"  {done}/{len(distinct)} ({done / (time.perf_counter() - started):.0f}/s)")
    unique = np.concatenate(parts) if parts else np.zeros((0, DIMS), np.float32)
    row = {s: i for i, s in enumerate(distinct)}
    vecs = unique[[row[s] for s in sentences]] if sentences else unique
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, vecs)
    tmp.rename(path)
    return vecs


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def pooled(sentence_vecs: np.ndarray, groups: Sequence[Sequence[int]], rng: np.random.Generator | None = None,
           sigma: float = NOISE_SIGMA) -> np.ndarray:
    """Per group of sentence rows: the normalised mean of their vectors, plus N(0, sigma^2) per
    dimension drawn from `rng` (none without one), normalised again; float32 rows."""
    out = np.zeros((len(groups), sentence_vecs.shape[1]), dtype=np.float64)
    for i, g in enumerate(groups):
        out[i] = sentence_vecs[list(g)].mean(axis=0)
    out = unit(out)
    if rng is not None and sigma > 0:
        out = unit(out + rng.normal(0.0, sigma, size=out.shape))
    return out.astype(np.float32)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", unit(a), unit(b))
