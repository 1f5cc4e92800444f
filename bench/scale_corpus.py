"""Synthetic corpora for bench/scale.py: BEIR text recombined and perturbed, embedded, cached.

The text comes from ../shared/data/beir/{scifact,nfcorpus} (read, never copied into the repo). A
corpus of N chunks is generated deterministically from a seed and cached under
/tmp/ragpg-bench-cache/scale-<N>-s<seed>-v<VERSION>/ (hash vectors) or
scale-<N>-s<seed>-model-all-MiniLM-L6-v2-v<VERSION>/ (model vectors; same text and metadata) so every
run of a size loads the same rows:

  docs.jsonl     one document per line: source_path, folder, title, tags, date, chunks [[heading, text, tokens], ...]
  vectors.f32    one 384-dim float32 row per chunk, in load order: rag.embed.hash of embedding_text (hash), or
                 the perturbed mean of the local model's vectors of the chunk's source sentences (model:
                 bench/scale_vectors.py)
  attrs.npz      per chunk: the filter attributes below, so exact filtered top-k is computed in numpy
  meta.json      counts and the parameters that made it

Shape (like a notes vault or a document store, not a copy of BEIR):
  * a document has 1 + Poisson(3) chunks (mean 4); its title is a source abstract's title, its
    chunks run over 2-6 consecutive sentences of that abstract (sometimes one sentence of another
    one), with ~3% of words dropped and, in a third of the chunks, one token from a Zipf-distributed
    synthetic vocabulary (so the lexicon keeps growing with the corpus, as real ones do);
  * metadata at controlled selectivities, independent of the text (the hard case for filtered HNSW):
      folder  area<a>/topic<t>/<year>, a = doc % 10, t = (doc // 10) % 10
              -> {"folder": {"$prefix": "area3/"}} ~10%, {"folder": {"$prefix": "area3/topic7/"}} ~1%
      tags    "common10" on ~10% of documents, "rare1" on ~1% (hash-spread)  -> containment
      date    uniform over 2015-01-01 + 0..3649 days -> {"date": {"$gte": ...}} at ~10% and ~1%
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scale_vectors

from rag.embed.hash import HashEmbedder
from rag.ingest.passage_text import embedding_text
from rag.tokens import count_tokens

VERSION = 1
DIMS = 384
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir"
CACHE = Path("/tmp/ragpg-bench-cache")
SOURCES = ("scifact", "nfcorpus")
START = dt.date(2015, 1, 1)
DAYS = 3650
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")

# Filters at controlled selectivity (fractions of documents; chunk fractions differ by a little).
FILTERS: dict[str, dict[str, Any]] = {
    "folder_1pct": {"folder": {"$prefix": "area3/topic7/"}},
    "folder_10pct": {"folder": {"$prefix": "area3/"}},
    "tag_1pct": {"tags": ["rare1"]},
    "tag_10pct": {"tags": ["common10"]},
    "date_1pct": {"date": {"$gte": (START + dt.timedelta(days=DAYS - 36)).isoformat()}},
    "date_10pct": {"date": {"$gte": (START + dt.timedelta(days=DAYS - 365)).isoformat()}},
}

# The same filters as a pgvector user would write them in plain SQL over chunks c (bench constants,
# no user input): the "bare" figures beside ragpg's.
BARE_FILTERS: dict[str, str] = {
    "folder_1pct": "c.metadata ->> 'folder' like 'area3/topic7/%'",
    "folder_10pct": "c.metadata ->> 'folder' like 'area3/%'",
    "tag_1pct": """c.metadata @> '{"tags": ["rare1"]}'""",
    "tag_10pct": """c.metadata @> '{"tags": ["common10"]}'""",
    "date_1pct": f"c.metadata ->> 'date' >= '{FILTERS['date_1pct']['date']['$gte']}'",
    "date_10pct": f"c.metadata ->> 'date' >= '{FILTERS['date_10pct']['date']['$gte']}'",
}


@dataclass(frozen=True)
class Corpus:
    root: Path
    n_chunks: int
    n_docs: int

    @property
    def docs_path(self) -> Path:
        return self.root / "docs.jsonl"

    @property
    def vectors_path(self) -> Path:
        return self.root / "vectors.f32"

    def attrs(self) -> dict[str, np.ndarray]:
        with np.load(self.root / "attrs.npz") as z:
            return {k: z[k] for k in z.files}

    def masks(self) -> dict[str, np.ndarray]:
        """Per filter name, which chunks (in load order) it keeps."""
        a = self.attrs()
        return {
            "folder_1pct": (a["area"] == 3) & (a["topic"] == 7),
            "folder_10pct": a["area"] == 3,
            "tag_1pct": a["rare1"],
            "tag_10pct": a["common10"],
            "date_1pct": a["day"] >= DAYS - 36,
            "date_10pct": a["day"] >= DAYS - 365,
        }

    def documents(self) -> Iterator[dict[str, Any]]:
        """The documents in load order, one at a time (the file is never read whole)."""
        with self.docs_path.open(encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)

    def vector_blocks(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, block) over the vectors, `rows` at a time (bounded memory, no memmap)."""
        with self.vectors_path.open("rb") as fh:
            start = 0
            while block := fh.read(rows * DIMS * 4):
                arr = np.frombuffer(block, dtype=np.float32).reshape(-1, DIMS)
                yield start, arr
                start += len(arr)


class _Pool:
    """Sentences and titles of the source abstracts; `sentences` lists every abstract's sentences in
    order, `first[d]` is the row there of abstract d's first sentence."""

    def __init__(self, data: Path) -> None:
        self.docs: list[tuple[str, list[str]]] = []
        self.sentences: list[str] = []
        self.first: list[int] = []
        for name in SOURCES:
            with (data / name / "corpus.jsonl").open(encoding="utf-8") as fh:
                for line in fh:
                    obj = json.loads(line)
                    sentences = [s.strip() for s in _SENTENCE.split(obj.get("text") or "") if len(s.strip()) > 20]
                    if sentences:
                        self.docs.append(((obj.get("title") or "").strip() or sentences[0][:80], sentences))
                        self.first.append(len(self.sentences))
                        self.sentences.extend(sentences)


def _perturb(rng: random.Random, text: str, zipf_token: str | None) -> str:
    words = [w for w in text.split(" ") if rng.random() >= 0.03]
    if zipf_token is not None:
        words.insert(rng.randrange(len(words) + 1), zipf_token)
    return " ".join(words)


def _zipf_tokens(seed: int, n: int) -> Iterator[str]:
    rng = np.random.default_rng(seed + 1)
    while True:
        for v in rng.zipf(1.3, size=n):
            yield f"zq{int(v) % 2_000_000:x}"


def corpus_dir(n_chunks: int, seed: int, vectors: str = "hash") -> Path:
    """hash: scale-<n>-s<seed>-v<VERSION> (as before there were two sources); model: the vector
    source and the local model in the name."""
    if vectors == "hash":
        return CACHE / f"scale-{n_chunks}-s{seed}-v{VERSION}"
    if vectors == "model":
        return CACHE / f"scale-{n_chunks}-s{seed}-model-{scale_vectors.MODEL}-v{VERSION}"
    raise ValueError(f"unknown vector source {vectors!r} (hash or model)")


def generate(n_chunks: int, seed: int = 7, data: Path = DATA, log: Any = print, vectors: str = "hash") -> Corpus:
    """The cached corpus of `n_chunks` chunks, generated first when absent (streamed to disk).
    `vectors`: hash (rag.embed.hash of each chunk's embedding text) or model (bench/scale_vectors.py:
    the mean of the local model's vectors of the chunk's source sentences, perturbed). The text and
    metadata are the same for both."""
    root = corpus_dir(n_chunks, seed, vectors)
    if (root / "meta.json").exists():
        meta = json.loads((root / "meta.json").read_text())
        return Corpus(root, meta["n_chunks"], meta["n_docs"])
    staging = root.with_name(root.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    pool = _Pool(data)
    rng = random.Random(seed)
    zipf = _zipf_tokens(seed, 4096)
    embedder = HashEmbedder(DIMS)
    svecs = scale_vectors.sentence_vectors(pool.sentences, log=log) if vectors == "model" else None
    noise = np.random.default_rng(seed + 3)
    attrs = {"area": np.zeros(n_chunks, np.int8), "topic": np.zeros(n_chunks, np.int8),
             "rare1": np.zeros(n_chunks, bool), "common10": np.zeros(n_chunks, bool), "day": np.zeros(n_chunks, np.int16)}
    started, made, doc_no = time.perf_counter(), 0, 0
    pending_texts: list[str] = []
    pending_groups: list[list[int]] = []
    with (staging / "docs.jsonl").open("w", encoding="utf-8") as docs_fh, \
            (staging / "vectors.f32").open("wb") as vec_fh:
        while made < n_chunks:
            doc, groups = _document(doc_no, rng, pool, zipf, min(1 + _poisson(rng, 3.0), n_chunks - made))
            docs_fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
            rows = slice(made, made + len(doc["chunks"]))
            attrs["area"][rows], attrs["topic"][rows] = doc_no % 10, (doc_no // 10) % 10
            attrs["rare1"][rows], attrs["common10"][rows] = "rare1" in doc["tags"], "common10" in doc["tags"]
            attrs["day"][rows] = doc["day"]
            if svecs is None:
                # no note names: the corpus vectors (and the cached corpora) stay what they were; the scale runs time searches
                pending_texts.extend(embedding_text(heading, text, {}) for heading, text, _ in doc["chunks"])
            else:
                pending_groups.extend(groups)
            made += len(doc["chunks"])
            doc_no += 1
            if len(pending_texts) + len(pending_groups) >= 4096 or made >= n_chunks:
                block = (embedder.embed_documents(pending_texts) if svecs is None
                         else scale_vectors.pooled(svecs, pending_groups, noise))
                vec_fh.write(block.astype(np.float32).tobytes())
                pending_texts, pending_groups = [], []
            if doc_no % 20000 == 0:
                log(f"  generated {made}/{n_chunks} chunks ({made / (time.perf_counter() - started):.0f}/s)")
    np.savez(staging / "attrs.npz", **attrs)
    meta = {"n_chunks": made, "n_docs": doc_no, "seed": seed, "version": VERSION, "dims": DIMS, "vectors": vectors,
            **({"model": scale_vectors.MODEL, "noise_sigma": scale_vectors.NOISE_SIGMA} if svecs is not None else {}),
            "sources": list(SOURCES), "seconds": round(time.perf_counter() - started, 1)}
    (staging / "meta.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    return Corpus(root, made, doc_no)


def _poisson(rng: random.Random, lam: float) -> int:
    # Knuth: small lambda, a handful of draws.
    limit, k, p = np.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _document(doc_no: int, rng: random.Random, pool: _Pool, zipf: Iterator[str], n: int
              ) -> tuple[dict[str, Any], list[list[int]]]:
    """A document, and per chunk the pool rows (`_Pool.sentences`) of the sentences it was built from."""
    source = rng.randrange(len(pool.docs))
    title, sentences = pool.docs[source]
    h = (doc_no * 2654435761) % 2**32
    tags = [f"topic{doc_no % 7}"]
    if h % 100 == 42:
        tags.append("rare1")
    if (h // 100) % 10 == 4:
        tags.append("common10")
    day = rng.randrange(DAYS)
    year = (START + dt.timedelta(days=day)).year
    short = " ".join(title.split()[:8])
    chunks, groups = [], []
    pos = rng.randrange(len(sentences))
    for ordinal in range(n):
        count = rng.randint(2, 6)
        rows = [pool.first[source] + (pos + i) % len(sentences) for i in range(count)]
        pos += count
        if rng.random() < 0.3:
            other_no = rng.randrange(len(pool.docs))
            other = pool.docs[other_no][1]
            rows.insert(rng.randrange(len(rows) + 1), pool.first[other_no] + rng.randrange(len(other)))
        token = next(zipf) if rng.random() < 0.33 else None
        text = _perturb(rng, " ".join(pool.sentences[r] for r in rows), token)
        chunks.append([f"{short} > Part {ordinal + 1}", text, count_tokens(text)])
        groups.append(rows)
    return {"source_path": f"area{doc_no % 10}/topic{(doc_no // 10) % 10}/{year}/doc{doc_no:07d}.md",
            "folder": f"area{doc_no % 10}/topic{(doc_no // 10) % 10}/{year}", "title": title, "tags": tags,
            "day": day, "date": (START + dt.timedelta(days=day)).isoformat(), "chunks": chunks}, groups


def embed_queries(texts: list[str], vectors: str = "hash") -> np.ndarray:
    """Query vectors of the corpus' vector source: rag.embed.hash, or the local model itself."""
    if vectors == "model":
        from rag.embed.local import LocalEmbedder

        return LocalEmbedder().embed_documents(texts).astype(np.float32)
    return HashEmbedder(DIMS).embed_documents(texts).astype(np.float32)


def queries(n: int, seed: int = 7, data: Path = DATA, vectors: str = "hash") -> tuple[list[str], np.ndarray]:
    """`n` BEIR test questions (both sources, shuffled) and their embeddings (`embed_queries`)."""
    texts: list[str] = []
    for name in SOURCES:
        with (data / name / "queries.jsonl").open(encoding="utf-8") as fh:
            texts.extend(t for line in fh if (t := (json.loads(line).get("text") or "").strip()))
    random.Random(seed).shuffle(texts)
    texts = texts[:n]
    return texts, embed_queries(texts, vectors)


def passage_queries(n: int, seed: int = 7, data: Path = DATA, vectors: str = "hash") -> tuple[list[str], np.ndarray]:
    """`n` sentences of the source abstracts as queries ("find the passage that says ..."): their
    nearest chunks are the ones built from that sentence, the neighbourhood structure of real
    embeddings, where BEIR questions under the hash embedder have near-ties (~0.001 cosine between
    the 10th and 11th neighbour)."""
    pool = _Pool(data)
    rng = random.Random(seed + 2)
    texts = []
    for _ in range(n):
        sentences = pool.docs[rng.randrange(len(pool.docs))][1]
        texts.append(sentences[rng.randrange(len(sentences))])
    return texts, embed_queries(texts, vectors)


def exact_top_k(corpus: Corpus, qvecs: np.ndarray, k: int, masks: dict[str, np.ndarray | None],
                block_rows: int = 65536) -> dict[str, list[np.ndarray]]:
    """Per mask name (None = no filter), each query's exact top-k rows by cosine, streaming the vectors."""
    best = {name: (np.full((len(qvecs), k), -np.inf, dtype=np.float32), np.zeros((len(qvecs), k), dtype=np.int64))
            for name in masks}
    for start, block in corpus.vector_blocks(block_rows):
        scores = qvecs @ block.T
        rows = np.arange(start, start + len(block))
        for name, mask in masks.items():
            s = scores if mask is None else np.where(mask[start:start + len(block)], scores, -np.inf)
            top_s, top_i = best[name]
            all_s = np.concatenate([top_s, s], axis=1)
            all_i = np.concatenate([top_i, np.broadcast_to(rows, s.shape)], axis=1)
            keep = np.argpartition(-all_s, k - 1, axis=1)[:, :k]
            best[name] = (np.take_along_axis(all_s, keep, 1), np.take_along_axis(all_i, keep, 1))
    out = {}
    for name, (s, i) in best.items():
        order = np.argsort(-s, axis=1)
        out[name] = [row[o][np.isfinite(sr[o])] for row, sr, o in zip(i, s, order, strict=True)]
    return out


if __name__ == "__main__":  # generate in a process of its own: `python bench/scale_corpus.py N [SEED [hash|model]]`
    import sys

    print(generate(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 7,
                   vectors=sys.argv[3] if len(sys.argv) > 3 else "hash"))
