"""Embedding throughput: texts/s for the local and hash embedders on 512 ~500-byte texts.

    python bench/embed_throughput.py [--texts 512] [--runs 3] [--providers local,hash]

Prints the median of ``--runs`` timed runs per provider (the model is loaded by a warm-up
call first). A script, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from rag.config import EmbeddingSettings
from rag.embed import get_embedder

WORDS = (
    "postgres index vector search query chunk document vault note markdown heading embedding "
    "similarity cosine hybrid keyword ranking fusion retrieval answer citation model token batch "
    "table column function schema migration server client request latency throughput memory cache "
    "the a of to and in is for with on that by this as are be it from or at which we can use when "
    "data time file folder link tag project meeting idea draft review release bug fix test build"
).split()


def realistic_texts(count: int, target_bytes: int = 500, seed: int = 7) -> list[str]:
    """Markdown-like paragraphs of about ``target_bytes`` bytes, the same on every run."""
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        parts = [f"## Note {i}: {rng.choice(WORDS).title()} {rng.choice(WORDS)}\n"]
        size = len(parts[0])
        while size < target_bytes:
            sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))).capitalize() + ". "
            parts.append(sentence)
            size += len(sentence)
        texts.append("".join(parts)[:target_bytes])
    return texts


def throughput(spec: str, texts: list[str], runs: int, settings: EmbeddingSettings) -> float:
    embedder = get_embedder(spec, settings)
    embedder.embed_documents(texts[:8])  # load the model, warm caches
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed_documents(texts)
        timings.append(time.perf_counter() - started)
    return len(texts) / statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--providers", default="local,hash")
    args = parser.parse_args()
    settings = EmbeddingSettings()
    texts = realistic_texts(args.texts)
    mean_bytes = sum(len(t.encode()) for t in texts) / len(texts)
    print(f"{len(texts)} texts, {mean_bytes:.0f} bytes each on average, median of {args.runs} runs, "
          f"batch_size {settings.batch_size}")
    for spec in args.providers.split(","):
        print(f"{spec:>8}: {throughput(spec, texts, args.runs, settings):10.1f} texts/s")


if __name__ == "__main__":
    main()
