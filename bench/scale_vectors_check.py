"""Checks of bench/scale_vectors.py against the model itself, and the cache of the sentence pool's
vectors (the corpus generator, bench/scale_corpus.py, uses both modules; keeping these checks here
keeps the two free of a circle).

    python bench/scale_vectors_check.py sentences          # embed the pool (~15-20 min on 2 busy cores)
    python bench/scale_vectors_check.py validate --chunks 200
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_corpus as sc  # noqa: E402
import scale_vectors as sv  # noqa: E402

from rag.ingest.passage_text import embedding_text  # noqa: E402


def validate(n_chunks: int, seed: int = 7) -> dict[str, Any]:
    """For `n_chunks` chunks generated as the corpus generates them: the median cosine between the
    pooled vector (no noise) and the model's embedding of the chunk's text (as ragpg embeds it:
    heading path + text, and the text alone); between the model's embeddings of two chunks made of
    the same sentences with different dropped words and tokens (real twins); and between two
    pooled+perturbed twins (what the corpus has for them)."""
    pool = sc._Pool(sc.DATA)
    svecs = sv.sentence_vectors(pool.sentences)
    rng, zipf = random.Random(seed + 11), sc._zipf_tokens(seed + 11, 4096)
    texts, plain, groups, twins = [], [], [], []
    doc_no = 0
    while len(groups) < n_chunks:
        doc, sources = sc._document(doc_no, rng, pool, zipf, 1 + sc._poisson(rng, 3.0))
        for (heading, text, _), group in zip(doc["chunks"], sources, strict=True):
            texts.append(embedding_text(heading, text, {}))  # as scale_corpus embeds them
            plain.append(text)
            groups.append(group)
            token = next(zipf) if rng.random() < 0.33 else None
            twins.append(sc._perturb(rng, " ".join(pool.sentences[i] for i in group), token))
        doc_no += 1
    texts, plain, groups, twins = texts[:n_chunks], plain[:n_chunks], groups[:n_chunks], twins[:n_chunks]
    model_vecs, plain_vecs, twin_vecs = sv._local_embed(texts), sv._local_embed(plain), sv._local_embed(twins)
    mean_vecs = sv.pooled(svecs, groups)
    noisy = np.random.default_rng(seed)
    a, b = sv.pooled(svecs, groups, noisy), sv.pooled(svecs, groups, noisy)

    def med(x: np.ndarray) -> float:
        return round(float(np.median(x)), 4)

    return {"chunks": n_chunks, "noise_sigma": sv.NOISE_SIGMA,
            "median_cos_pooled_vs_model_heading_and_text": med(sv._cos(mean_vecs, model_vecs)),
            "p10_cos_pooled_vs_model_heading_and_text": round(float(np.percentile(sv._cos(mean_vecs, model_vecs), 10)), 4),
            "median_cos_pooled_vs_model_text": med(sv._cos(mean_vecs, plain_vecs)),
            "median_cos_pooled_noisy_vs_model_heading_and_text": med(sv._cos(a, model_vecs)),
            "median_cos_real_twins_model": med(sv._cos(plain_vecs, twin_vecs)),
            "median_cos_pooled_twins": med(sv._cos(a, b))}



if __name__ == "__main__":
    import argparse
    import json

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["sentences", "validate"])
    p.add_argument("--chunks", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, help="also write validate's figures to this JSON file")
    args = p.parse_args()
    if args.what == "sentences":
        print(sv.sentence_vectors(sc._Pool(sc.DATA).sentences).shape)
    else:
        figures = {**validate(args.chunks, args.seed), "command": " ".join(["scale_vectors_check.py", *sys.argv[1:]]),
                   "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
        print(json.dumps(figures, indent=1))
        if args.out:
            args.out.write_text(json.dumps(figures, indent=1) + "\n")
