"""Side by side with langchain-postgres (PGVectorStore / PGEngine, v2 API) on the same BEIR data.

Both stores hold the same texts (title + "\\n\\n" + text) with the same document embeddings (the
bench/sql_retrieval.py cache) and answer the same test queries with the same query embeddings:

  ragpg      retrieve.match_vector (match_native_chunks_<model>, HNSW ef_search 100) and
             retrieve.match_hybrid (match_hybrid_chunks_<model>: RRF k=60 of 60 HNSW + 60 BM25 candidates)
  langchain  PGVectorStore.similarity_search_with_score: vector (HNSW m=16 ef_construction=64 as ours,
             hnsw.ef_search 100 via HNSWQueryOptions, and its default 40), hybrid with
             HybridSearchConfig(tsv_column content_tsv + GIN index, reciprocal_rank_fusion rrf_k=60,
             primary_top_k=secondary_top_k=60) and the same with its default weighted_sum_ranking.

LangChain receives the precomputed vectors through an Embeddings class that looks texts up
(``Precomputed``), so neither side spends time embedding. Each hybrid call gets its own copy of
the HybridSearchConfig: langchain-postgres 0.0.19 writes the first query into the store's config
(``fts_query``) and would keyword-search that text for every later query
(langchain-ai/langchain-postgres#337, #288).

The reported latency is per call through each library's Python API on one connection (ragpg: a
psycopg connection; LangChain: its async SQLAlchemy engine driven from a background event loop,
as the sync PGVectorStore API does). Two harnesses, both reported: interleaved query by query so
that machine noise hits both, and blocks (each system answers every query in a row, three rounds
with the first system rotated). Each runs once per lexical backend of ragpg's hybrid (the SQL
BM25, then pg_textsearch's bm25 index when the server has it); `hybrid_p50` holds ragpg's hybrid
p50 beside LangChain's RRF hybrid p50 of the same pass, and their ratio.

    python bench/peer_langchain.py [--embedder hash] [--queries 100]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
from langchain_core.embeddings import Embeddings
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sql_retrieval as sr  # noqa: E402

from rag.config import EmbeddingSettings, RetrievalSettings  # noqa: E402
from rag.retrieval import retrieve  # noqa: E402
from rag.store import models
from rag.store.database import open_connection  # noqa: E402

K = 10
OURS_HYBRID = "ragpg hybrid (match_hybrid: RRF of HNSW + BM25)"
PEER_HYBRID = "langchain hybrid (RRF k=60 of HNSW + ts_rank_cd, 60+60)"
TABLE = "langchain_bench_docs"
NAMESPACE = uuid.UUID("6f1d6f38-9a55-4a8e-9a0e-0b7f3c1d2e4a")


class Precomputed(Embeddings):
    """Embeddings computed beforehand, looked up by text (identical texts have identical vectors)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def sqlalchemy_url(url: str) -> str:
    """The psycopg3 async SQLAlchemy URL of a libpq URL; a unix-socket ``?host=/dir`` passes through."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"expected a postgresql:// URL, got {parts.scheme}://")
    host = parse_qs(parts.query).get("host")
    if host and not parts.hostname:
        return f"postgresql+psycopg://{parts.netloc}{parts.path}?host={quote(host[0], safe='/')}"
    return "postgresql+psycopg://" + url.split("://", 1)[1]


def percentile(values: list[float], q: float) -> float:
    return sr.percentile(values, q)


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 3), "p95_ms": round(percentile(values, 95), 3),
            "mean_ms": round(sum(values) / len(values), 3)}


def run_peer(url: str, *, corpus: list[dict[str, Any]], vectors: np.ndarray, queries: dict[str, str],
             test_ids: list[str], query_vectors: np.ndarray, qrels: dict[str, dict[str, int]],
             model: models.EmbeddingModelRef, settings: RetrievalSettings, vault: str, warmup: int = 20
             ) -> dict[str, Any]:
    """Load LangChain's table next to ragpg's (already loaded) data in ``url`` and compare."""
    from langchain_postgres import PGEngine, PGVectorStore
    from langchain_postgres.v2.hybrid_search_config import (
        HybridSearchConfig,
        reciprocal_rank_fusion,
        weighted_sum_ranking,
    )
    from langchain_postgres.v2.indexes import HNSWIndex, HNSWQueryOptions

    texts = [f"{d.get('title', '')}\n\n{d.get('text', '')}" for d in corpus]
    lookup = {t: v.tolist() for t, v in zip(texts, vectors, strict=True)}
    qtexts = [queries[qid] for qid in test_ids]
    lookup.update({t: v.tolist() for t, v in zip(qtexts, query_vectors, strict=True)})
    embeddings = Precomputed(lookup)
    dims = vectors.shape[1]
    out: dict[str, Any] = {"sqlalchemy_url_form": "postgresql+psycopg://user@/db?host=/socket/dir",
                           "langchain_postgres_version": _version("langchain-postgres")}

    engine = PGEngine.from_connection_string(sqlalchemy_url(url))
    try:
        started = time.perf_counter()
        engine.init_vectorstore_table(TABLE, dims, overwrite_existing=True,
                                      hybrid_search_config=HybridSearchConfig(tsv_column="content_tsv"))
        base = PGVectorStore.create_sync(engine, embeddings, TABLE,
                                         hybrid_search_config=HybridSearchConfig(tsv_column="content_tsv"))
        ids = [str(uuid.uuid5(NAMESPACE, d["_id"])) for d in corpus]
        base.add_texts(texts, metadatas=[{"corpus_id": d["_id"]} for d in corpus], ids=ids)
        out["langchain_add_texts_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        base.apply_vector_index(HNSWIndex())  # m=16, ef_construction=64, vector_cosine_ops: as ours
        out["langchain_hnsw_build_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        base.apply_hybrid_search_index()  # GIN on content_tsv
        out["langchain_gin_build_s"] = round(time.perf_counter() - started, 2)
        with open_connection(url, autocommit=True) as conn:
            # (vacuumed as ragpg's tables are after their load: both searched in a steady state)
            conn.execute("vacuum (analyze) " + TABLE)  # a constant name, no user value

        vec100 = PGVectorStore.create_sync(engine, embeddings, TABLE,
                                           index_query_options=HNSWQueryOptions(ef_search=100))
        vec40 = PGVectorStore.create_sync(engine, embeddings, TABLE)
        rrf = HybridSearchConfig(tsv_column="content_tsv", fusion_function=reciprocal_rank_fusion,
                                 fusion_function_parameters={"rrf_k": 60}, primary_top_k=60, secondary_top_k=60)
        wsum = HybridSearchConfig(tsv_column="content_tsv", fusion_function=weighted_sum_ranking,
                                  primary_top_k=60, secondary_top_k=60)
        hyb = PGVectorStore.create_sync(engine, embeddings, TABLE, hybrid_search_config=rrf,
                                        index_query_options=HNSWQueryOptions(ef_search=100))

        def fresh(config: Any) -> Any:  # see the module docstring: the library mutates the config
            return dataclasses.replace(config, fts_query="",
                                       fusion_function_parameters=dict(config.fusion_function_parameters))

        def lc(store: Any, config: Any = None) -> Callable[[int], list[str]]:
            def call(i: int) -> list[str]:
                kwargs = {"hybrid_search_config": fresh(config)} if config is not None else {}
                docs = store.similarity_search_with_score(qtexts[i], k=K, **kwargs)
                return [doc.metadata["corpus_id"] for doc, _ in docs]
            return call

        with open_connection(url, autocommit=True) as conn:
            def ours_vector(i: int) -> list[str]:
                return [m.source_path for m in retrieve.match_vector(
                    conn, model, query_vectors[i], match_count=K, similarity_threshold=-1, settings=settings)]

            def ours_hybrid(i: int) -> list[str]:
                return [m.source_path for m in retrieve.match_hybrid(
                    conn, model, qtexts[i], query_vectors[i], match_count=K, similarity_threshold=-1,
                    settings=settings)]

            systems: dict[str, Callable[[int], list[str]]] = {
                "ragpg vector (match_native, ef_search 100)": ours_vector,
                "langchain vector (HNSW, ef_search 100)": lc(vec100),
                "langchain vector (HNSW, default ef_search 40)": lc(vec40),
                OURS_HYBRID: ours_hybrid,
                PEER_HYBRID: lc(hyb, rrf),
                "langchain hybrid (weighted_sum default fusion, 60+60)": lc(hyb, wsum),
            }
            for i in range(min(warmup, len(test_ids))):
                for fn in systems.values():
                    fn(i)
            out["passes"] = {}
            for backend in lexical_backends(conn, vault, settings):
                passes = {harness: timed(systems, test_ids) for harness, timed in HARNESSES.items()}
                out["passes"][backend] = {
                    harness: {name: {"ndcg_at_10": round(sr.ndcg_at_10(qrels, runs[name]), 4), **_stats(times[name])}
                              for name in systems}
                    for harness, (runs, times) in passes.items()}
            select_backend(conn, vault, "sql", settings)
            # LangChain's keyword half is `content_tsv @@ plainto_tsquery(query)`: every term must match
            fts = sql.SQL("select count(*) as n from {} where content_tsv @@ plainto_tsquery('pg_catalog.english', %s)"
                          ).format(sql.Identifier(TABLE))
            hits = [conn.execute(fts, (t,)).fetchone()["n"] for t in qtexts]
            out["langchain_keyword_matches"] = {
                "queries_with_any_match": sum(1 for h in hits if h), "mean_matches": round(sum(hits) / len(hits), 2)}
    finally:
        engine._run_as_sync(engine.close())

    first = next(iter(out["passes"].values()))
    out["systems"] = first["interleaved"]
    out["hybrid_p50"] = {backend: {harness: {"ragpg_ms": rows[OURS_HYBRID]["p50_ms"],
                                             "langchain_ms": rows[PEER_HYBRID]["p50_ms"],
                                             "ratio": round(rows[OURS_HYBRID]["p50_ms"] / rows[PEER_HYBRID]["p50_ms"], 3)}
                                   for harness, rows in by_harness.items()}
                         for backend, by_harness in out["passes"].items()}
    out["queries"] = len(test_ids)
    return out


Runs = dict[str, dict[str, list[str]]]
Times = dict[str, list[float]]


def interleaved(systems: dict[str, Callable[[int], list[str]]], test_ids: list[str]) -> tuple[Runs, Times]:
    """Query by query, every system in turn: machine noise hits all of them alike."""
    runs: Runs = {name: {} for name in systems}
    times: Times = {name: [] for name in systems}
    for i, qid in enumerate(test_ids):
        for name, fn in systems.items():
            started = time.perf_counter()
            runs[name][qid] = fn(i)
            times[name].append((time.perf_counter() - started) * 1000)
    return runs, times


def blocks(systems: dict[str, Callable[[int], list[str]]], test_ids: list[str], rounds: int = 3
           ) -> tuple[Runs, Times]:
    """Each system answers every query in a row (a service under its own load), in `rounds` rounds
    whose first system rotates: every call follows one of its own kind, where interleaved each
    follows the other library's."""
    runs: Runs = {name: {} for name in systems}
    times: Times = {name: [] for name in systems}
    names = list(systems)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            for i, qid in enumerate(test_ids):
                started = time.perf_counter()
                runs[name][qid] = systems[name](i)
                times[name].append((time.perf_counter() - started) * 1000)
    return runs, times


HARNESSES = {"interleaved": interleaved, "blocks": blocks}


def select_backend(conn: Any, vault: str, backend: str, settings: RetrievalSettings) -> str:
    """Make `vault` use this lexical backend; returns the one it uses (the SQL BM25 without the library)."""
    if backend == "sql":
        conn.execute("select ragpg_disable_bm25_index(%s)", (vault,))
        return "sql"
    row = conn.execute("select ragpg_enable_bm25_index(%s, %s, %s) as b", (vault, settings.bm25_k1, settings.bm25_b))
    return str(row.fetchone()["b"])


def lexical_backends(conn: Any, vault: str, settings: RetrievalSettings) -> Iterator[str]:
    """The SQL BM25, then pg_textsearch's bm25 index when the server has it; each selected while yielded."""
    yield select_backend(conn, vault, "sql", settings)
    if select_backend(conn, vault, "pg_textsearch", settings) == "pg_textsearch":
        yield "pg_textsearch"


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--data-dir", type=Path, default=sr.DEFAULT_DATA)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragpg-bench-cache")
    parser.add_argument("--queries", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    from rag.embed.registry import get_embedder

    data = args.data_dir / args.dataset
    corpus = sr.read_jsonl(data / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in sr.read_jsonl(data / "queries.jsonl")}
    qrels = sr.read_qrels(data / "qrels" / "test.tsv")
    test_ids = [qid for qid in qrels if qid in queries][: args.queries or None]
    qrels = {qid: qrels[qid] for qid in test_ids}
    embedder = get_embedder(args.embedder, EmbeddingSettings(model=args.embedder))
    settings = RetrievalSettings()
    with tempfile.TemporaryDirectory(prefix="ragpg-bench-") as tmp:
        url, stop = sr.open_database(args.database_url, Path(tmp))
        try:
            with open_connection(url, autocommit=True) as conn:
                chunk_of = sr.load_corpus(conn, args.dataset, corpus)
                vectors = sr.embed_corpus(embedder, corpus, args.cache_dir, args.dataset)
                model = models.register_model(conn, embedder.provider, embedder.model, embedder.dims)
                sr.store_embeddings(conn, model, [chunk_of[d["_id"]] for d in corpus], vectors)
            query_vectors = np.asarray(embedder.embed_documents([queries[q] for q in test_ids]), dtype=np.float32)
            result = run_peer(url, corpus=corpus, vectors=vectors, queries=queries, test_ids=test_ids,
                              query_vectors=query_vectors, qrels=qrels, model=model, settings=settings,
                              vault=args.dataset)
        finally:
            stop()
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
