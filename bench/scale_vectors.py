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
  `python bench/scale_vectors.py validate` and reported in bench/README.md),
* plus a seeded Gaussian perturbation of `NOISE_SIGMA` per dimension, renormalised, so that two
  chunks built from the same sentences (frequent: ~80k sentences, 1M chunks) are near but not
  identical vectors, as two chunks differing in a few dropped words and one token are under the
  model. Two such twins end up at cosine ~1 / (1 + 384 sigma^2) (`validate` prints the median).

    python bench/scale_vectors.py sentences          # embed the pool (~15-20 min on 2 busy cores)
    python bench/scale_vectors.py validate --chunks 200
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


def validate(n_chunks: int, seed: int = 7) -> dict[str, Any]:
    """For `n_chunks` chunks generated as the corpus generates them: the median cosine between the
    pooled vector (no noise) and the model's embedding of the chunk's text (as ragpg embeds it:
    heading path + text, and the text alone); between the model's embeddings of two chunks made of
    the same sentences with different dropped words and tokens (real twins); and between two
    pooled+perturbed twins (what the corpus has for them)."""
    import random

    import scale_corpus as sc

    from rag.ingest.store import embedding_text

    pool = sc._Pool(sc.DATA)
    svecs = sentence_vectors(pool.sentences)
    rng, zipf = random.Random(seed + 11), sc._zipf_tokens(seed + 11, 4096)
    texts, plain, groups, twins = [], [], [], []
    doc_no = 0
    while len(groups) < n_chunks:
        doc, sources = sc._document(doc_no, rng, pool, zipf, 1 + sc._poisson(rng, 3.0))
        for (heading, text, _), group in zip(doc["chunks"], sources, strict=True):
            texts.append(embedding_text(heading, text))
            plain.append(text)
            groups.append(group)
            token = next(zipf) if rng.random() < 0.33 else None
            twins.append(sc._perturb(rng, " ".join(pool.sentences[i] for i in group), token))
        doc_no += 1
    texts, plain, groups, twins = texts[:n_chunks], plain[:n_chunks], groups[:n_chunks], twins[:n_chunks]
    model_vecs, plain_vecs, twin_vecs = _local_embed(texts), _local_embed(plain), _local_embed(twins)
    mean_vecs = pooled(svecs, groups)
    noisy = np.random.default_rng(seed)
    a, b = pooled(svecs, groups, noisy), pooled(svecs, groups, noisy)

    def med(x: np.ndarray) -> float:
        return round(float(np.median(x)), 4)

    return {"chunks": n_chunks, "noise_sigma": NOISE_SIGMA,
            "median_cos_pooled_vs_model_heading_and_text": med(_cos(mean_vecs, model_vecs)),
            "p10_cos_pooled_vs_model_heading_and_text": round(float(np.percentile(_cos(mean_vecs, model_vecs), 10)), 4),
            "median_cos_pooled_vs_model_text": med(_cos(mean_vecs, plain_vecs)),
            "median_cos_pooled_noisy_vs_model_heading_and_text": med(_cos(a, model_vecs)),
            "median_cos_real_twins_model": med(_cos(plain_vecs, twin_vecs)),
            "median_cos_pooled_twins": med(_cos(a, b))}


if __name__ == "__main__":
    import argparse
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["sentences", "validate"])
    p.add_argument("--chunks", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, help="also write validate's figures to this JSON file")
    args = p.parse_args()
    import scale_corpus

    if args.what == "sentences":
        print(sentence_vectors(scale_corpus._Pool(scale_corpus.DATA).sentences).shape)
    else:
        figures = {**validate(args.chunks, args.seed), "command": " ".join(["scale_vectors.py", *sys.argv[1:]]),
                   "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        print(json.dumps(figures, indent=1))
        if args.out:
            args.out.write_text(json.dumps(figures, indent=1) + "\n")
