"""Retrieval quality and latency of the SQL match functions on a BEIR dataset (default: SciFact).

Loads the corpus straight into a vault (one document and one chunk per corpus entry, content =
title + "\\n\\n" + text), embeds it, runs every test query through the vector, BM25 and hybrid
functions, and prints nDCG@10 (ir-measures) next to the published baselines, plus the latency
p50/p95 of each match function beside a bare ``ORDER BY embedding <=> $1 LIMIT 10`` in the same run,
once per lexical backend: the SQL BM25, then pg_textsearch's bm25 index when the server has it
(``ragpg[bm25]``), with the hybrid/bare ratio. ``--out FILE`` writes the figures as JSON.

    python bench/sql_retrieval.py                      # local all-MiniLM-L6-v2, embedded server
    python bench/sql_retrieval.py --embedder hash      # fast; BM25 figures are the same
    python bench/sql_retrieval.py --database-url postgresql://...   # an existing (empty) database

The data is read from ../shared/data/beir/<dataset> (never copied into the repo); document
embeddings are cached under --cache-dir so reruns skip the slow part.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from rag.config import EmbeddingSettings, RetrievalSettings
from rag.retrieval import retrieve
from rag.store import migrate, models
from rag.store.database import open_connection

REPO = Path(__file__).resolve().parents[1]

DEFAULT_DATA = REPO.parent / "shared" / "data" / "beir"
PUBLISHED = {  # nDCG@10, from shared/data/beir/PUBLISHED_BASELINES.md
    "scifact": {"BM25 (Pyserini multifield)": 0.665, "BM25 (Pyserini flat)": 0.679, "all-MiniLM-L6-v2": 0.645},
    "nfcorpus": {"BM25 (Pyserini multifield)": 0.325, "BM25 (Pyserini flat)": 0.322, "all-MiniLM-L6-v2": 0.316},
}


# -- data ---------------------------------------------------------------------------------------

def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        next(fh)  # header
        for line in fh:
            qid, docid, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[docid] = int(score)
    return qrels


# -- metrics ------------------------------------------------------------------------------------

def ndcg_at_10(qrels: dict[str, dict[str, int]], run: dict[str, list[str]]) -> float:
    """Mean nDCG@10 over the qrels' queries (a query with no results scores 0), via ir-measures."""
    import ir_measures
    from ir_measures import nDCG

    scored = {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in run.items()}
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, scored)}
    return sum(per_query.get(qid, 0.0) for qid in qrels) / len(qrels)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


# -- database -----------------------------------------------------------------------------------

def _with_database(url: str, dbname: str) -> str:
    import re

    if "://" in url:
        return re.sub(r"(://[^/?]*/)([^?]*)", lambda m: m.group(1) + dbname, url, count=1)
    return f"{url} dbname={dbname}"


def open_database(url: str | None, tmp: Path) -> tuple[str, Callable[[], None]]:
    """An upgraded, empty database: the given URL, or a new one on a throwaway embedded server."""
    if url:
        migrate.upgrade(url)
        return url, lambda: None
    from rag.store.embedded import EmbeddedServer

    server = EmbeddedServer(tmp)
    status = server.start()
    assert status.url
    name = f"ragpg_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(status.url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    db_url = _with_database(status.url, name)
    migrate.upgrade(db_url)
    return db_url, server.stop


def text_search_config(conn: psycopg.Connection, base: str, split_hyphenated: bool, no_stopwords: bool) -> str:
    """`base`, or a copy of it that keeps only the parts of hyphenated words (as Lucene's
    StandardTokenizer splits them; Postgres also indexes the whole compound) and/or stems English
    words without dropping stopwords."""
    if not (split_hyphenated or no_stopwords):
        return base
    name = f"ragpg_bench_{base}_variant"
    conn.execute(sql.SQL("create text search configuration {} (copy = {})").format(
        sql.Identifier(name), sql.Identifier(base)))
    if split_hyphenated:
        conn.execute(sql.SQL("alter text search configuration {} drop mapping for hword, asciihword, numhword"
                             ).format(sql.Identifier(name)))
    if no_stopwords:
        conn.execute("create text search dictionary ragpg_bench_english_stem (template = snowball, language = english)")
        kinds = "asciiword, word, hword_part, hword_asciipart" + ("" if split_hyphenated else ", asciihword, hword")
        conn.execute(sql.SQL("alter text search configuration {} alter mapping for {} with ragpg_bench_english_stem"
                             ).format(sql.Identifier(name), sql.SQL(kinds)))
    return name


def load_corpus(conn: psycopg.Connection, vault: str, corpus: list[dict[str, Any]],
                config: str = "english") -> dict[str, int]:
    """One document + one chunk per corpus entry; returns corpus id -> chunk id."""
    vault_id = conn.execute("insert into vaults (name, root_path, text_search_config) values (%s, %s, %s::regconfig)"
                            " returning id", (vault, f"beir/{vault}", config)).fetchone()["id"]
    with conn.cursor() as cur:
        with cur.copy("copy documents (vault_id, source_path, title, document_version, size_bytes, metadata)"
                      " from stdin") as copy:
            for doc in corpus:
                content = f"{doc.get('title', '')}\n\n{doc.get('text', '')}"
                copy.write_row((vault_id, doc["_id"], doc.get("title") or None,
                                hashlib.sha256(content.encode()).hexdigest(), len(content.encode()),
                                json.dumps({"corpus_id": doc["_id"]})))
        doc_ids = {r["source_path"]: r["id"] for r in cur.execute(
            "select id, source_path from documents where vault_id = %s", (vault_id,)).fetchall()}
        with cur.copy("copy chunks (document_id, vault_id, ordinal, content, token_count, metadata,"
                      " text_search_config) from stdin") as copy:
            for doc in corpus:
                content = f"{doc.get('title', '')}\n\n{doc.get('text', '')}"
                meta = {"vault": vault, "source_path": doc["_id"], "title": doc.get("title") or ""}
                copy.write_row((doc_ids[doc["_id"]], vault_id, 0, content, len(content.split()), json.dumps(meta),
                                config))
        rows = cur.execute("select c.id, d.source_path from chunks c join documents d on d.id = c.document_id"
                           " where c.vault_id = %s", (vault_id,)).fetchall()
    return {r["source_path"]: r["id"] for r in rows}


def embed_corpus(embedder, corpus: list[dict[str, Any]], cache_dir: Path, dataset: str) -> np.ndarray:
    key = hashlib.sha256("\n".join(d["_id"] for d in corpus).encode()).hexdigest()[:12]
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.model_key)  # a file-name-safe key
    path = cache_dir / f"{dataset}-{model}-{embedder.dims}-{key}.npy"
    if path.exists():
        print(f"  document embeddings from cache {path}")
        return np.load(path)
    started = time.perf_counter()
    texts = [f"{d.get('title', '')}\n\n{d.get('text', '')}" for d in corpus]
    vectors = np.zeros((len(texts), embedder.dims), dtype=np.float32)
    step = 256
    for start in range(0, len(texts), step):
        vectors[start:start + step] = embedder.embed_documents(texts[start:start + step])
        done = min(start + step, len(texts))
        print(f"  embedded {done}/{len(texts)} ({done / (time.perf_counter() - started):.1f} docs/s)", flush=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def store_embeddings(conn: psycopg.Connection, model: models.EmbeddingModelRef, chunk_ids: list[int],
                     vectors: np.ndarray) -> None:
    """Bulk load, then build the HNSW index (as a bulk loader would)."""
    table = sql.Identifier(model.embedding_table)
    index = sql.Identifier(f"{model.embedding_table}_hnsw_idx")
    conn.execute(sql.SQL("drop index if exists {}").format(index))
    vault_of = {r["id"]: r["vault_id"] for r in conn.execute(  # the table is partitioned by vault
        "select id, vault_id from chunks where id = any(%s)", (list(chunk_ids),))}
    with conn.cursor() as cur, cur.copy(sql.SQL("copy {} (vault_id, chunk_id, embedding) from stdin").format(
            table)) as copy:
        for chunk_id, vector in zip(chunk_ids, vectors, strict=True):
            copy.write_row((vault_of[chunk_id], chunk_id, "[" + ",".join(repr(float(x)) for x in vector.tolist()) + "]"))
    conn.execute("set maintenance_work_mem = '512MB'")
    conn.execute(sql.SQL("create index {} on {} using hnsw (embedding vector_cosine_ops)").format(index, table))
    # Steady state, as the bulk loader leaves it (rag/ingest/bulk.py ends with VACUUM (ANALYZE)): a
    # table never vacuumed has no visibility map, so every index-only scan of the BM25 postings
    # visits the heap too (the SQL BM25 read 4.3 ms a query there, 2.4 ms after autovacuum came by).
    conn.execute(sql.SQL("vacuum (analyze) {}, chunks, documents, bm25_postings, bm25_term_stats, bm25_vault_stats"
                         ).format(table))


# -- the run ------------------------------------------------------------------------------------

def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, (time.perf_counter() - started) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--embedder", default="local", help="embedding spec: local, hash, hash:<dims>, ...")
    parser.add_argument("--database-url", default=None, help="an empty database (default: a throwaway server)")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragpg-bench-cache")
    parser.add_argument("--queries", type=int, default=0, help="use only the first N test queries")
    parser.add_argument("--k1", type=float, default=None)
    parser.add_argument("--b", type=float, default=None)
    parser.add_argument("--text-search-config", default="english", help="the vault's Postgres text search config")
    parser.add_argument("--split-hyphenated", action="store_true",
                        help="index only the parts of hyphenated words, as Lucene does (a copy of the config)")
    parser.add_argument("--no-stopwords", action="store_true",
                        help="stem English words but keep stopwords (a copy of the config)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)

    from rag.embed.registry import get_embedder

    data = args.data_dir / args.dataset
    if not (data / "corpus.jsonl").exists():
        print(f"no BEIR data at {data}", file=sys.stderr)
        return 2
    corpus = read_jsonl(data / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(data / "queries.jsonl")}
    qrels = read_qrels(data / "qrels" / "test.tsv")
    test_ids = [qid for qid in qrels if qid in queries][: args.queries or None]
    qrels = {qid: qrels[qid] for qid in test_ids}
    settings = RetrievalSettings()
    k1 = settings.bm25_k1 if args.k1 is None else args.k1
    b = settings.bm25_b if args.b is None else args.b
    embedder = get_embedder(args.embedder, EmbeddingSettings(model=args.embedder))
    print(f"{args.dataset}: {len(corpus)} documents, {len(test_ids)} test queries; embedder {embedder.model_key} "
          f"({embedder.dims} dims); BM25 k1={k1} b={b}; text search config {args.text_search_config}"
          f"{' with hyphenated words split' if args.split_hyphenated else ''}"
          f"{' without stopwords' if args.no_stopwords else ''}")

    with tempfile.TemporaryDirectory(prefix="ragpg-bench-") as tmp:
        url, stop = open_database(args.database_url, Path(tmp))
        try:
            return run(url, args, corpus, queries, qrels, test_ids, embedder, settings, k1, b)
        finally:
            stop()


def run(url, args, corpus, queries, qrels, test_ids, embedder, settings, k1, b) -> int:
    with open_connection(url, autocommit=True) as conn:
        config = text_search_config(conn, args.text_search_config, args.split_hyphenated, args.no_stopwords)
        _, ms = timed(load_corpus, conn, args.dataset, corpus, config)
        chunk_of = {r["source_path"]: r["id"] for r in conn.execute(
            "select c.id, d.source_path from chunks c join documents d on d.id = c.document_id").fetchall()}
        print(f"  loaded corpus in {ms / 1000:.1f}s")
        vectors = embed_corpus(embedder, corpus, args.cache_dir, args.dataset)
        model = models.register_model(conn, embedder.provider, embedder.model, embedder.dims)
        _, ms = timed(store_embeddings, conn, model, [chunk_of[d["_id"]] for d in corpus], vectors)
        print(f"  stored embeddings + built HNSW in {ms / 1000:.1f}s")
        query_vectors = embedder.embed_documents([queries[qid] for qid in test_ids])

        backends = ["sql"]
        if conn.execute("select ragpg_enable_bm25_index(%s, %s, %s) as b", (args.dataset, k1, b)).fetchone()["b"] \
                == "pg_textsearch":
            backends.append("pg_textsearch")
        results: dict[str, Any] = {"dataset": args.dataset, "queries": len(test_ids), "k1": k1, "b": b, "backends": {}}
        for backend in backends:
            if backend == "sql":
                conn.execute("select ragpg_disable_bm25_index(%s)", (args.dataset,))
            else:
                conn.execute("select ragpg_enable_bm25_index(%s, %s, %s)", (args.dataset, k1, b))
            conn.execute("vacuum analyze")
            results["backends"][backend] = measure(conn, model, test_ids, queries, query_vectors, qrels, settings, k1, b)
            report(args.dataset, backend, results["backends"][backend])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


LATENCY_NAMES = ("bare <=> (ef_search 40)", "bare <=> (ef_search 100)", "match_native_chunks", "match_lexical_chunks",
                 "match_hybrid_chunks", "retrieve.match_vector (Python)", "retrieve.match_hybrid (Python)")


def measure(conn, model, test_ids, queries, query_vectors, qrels, settings, k1, b) -> dict[str, Any]:
    """nDCG@10 of the vector, BM25 and hybrid functions and every query's latency, after a warm-up pass."""
    table = sql.Identifier(model.embedding_table)
    bare = sql.SQL("select chunk_id from {} order by embedding <=> %s::vector limit 10").format(table)
    exact = sql.SQL("select chunk_id from {} order by cosine_distance(embedding, %s::vector) limit 10").format(table)
    native = sql.SQL("select chunk_id, source_path from {}(%s::vector, -1, 10)").format(
        sql.Identifier(model.match_function))
    lexical = sql.SQL("select chunk_id, source_path from match_lexical_chunks(%s, 10, '{}', %s, %s)")
    hybrid = sql.SQL("select chunk_id, source_path from {}(%s, %s::vector, 10, '{{}}', -1, k1 => %s, b => %s)"
                     ).format(sql.Identifier(model.hybrid_function))

    runs: dict[str, dict[str, list[str]]] = {"vector": {}, "bm25": {}, "hybrid": {}}
    latency: dict[str, list[float]] = {name: [] for name in LATENCY_NAMES}
    hnsw_recall: list[float] = []

    def fetch(query: sql.Composable, params: tuple[Any, ...]) -> list[Any]:
        return conn.execute(query, params).fetchall()

    for _warm in range(2 if len(test_ids) > 20 else 1):
        for qid, qv in zip(test_ids, query_vectors, strict=True):
            vtext = "[" + ",".join(repr(float(x)) for x in qv.tolist()) + "]"
            text = queries[qid]
            record = _warm == 1 or len(test_ids) <= 20
            conn.execute("set hnsw.ef_search = 40")
            _, t_bare40 = timed(fetch, bare, (vtext,))
            conn.execute("set hnsw.ef_search = 100")
            approx, t_bare100 = timed(fetch, bare, (vtext,))
            conn.execute("reset hnsw.ef_search")
            rows_v, t_v = timed(fetch, native, (vtext,))
            rows_l, t_l = timed(fetch, lexical, (text, k1, b))
            rows_h, t_h = timed(fetch, hybrid, (text, vtext, k1, b))
            _, t_pv = timed(retrieve.match_vector, conn, model, qv, match_count=10, similarity_threshold=-1,
                            settings=settings)
            _, t_ph = timed(retrieve.match_hybrid, conn, model, text, qv, match_count=10,
                            similarity_threshold=-1, settings=settings, k1=k1, b=b)
            if not record:
                continue
            truth = {r["chunk_id"] for r in conn.execute(exact, (vtext,)).fetchall()}
            hnsw_recall.append(len(truth & {r["chunk_id"] for r in approx}) / max(1, len(truth)))
            runs["vector"][qid] = [r["source_path"] for r in rows_v]
            runs["bm25"][qid] = [r["source_path"] for r in rows_l]
            runs["hybrid"][qid] = [r["source_path"] for r in rows_h]
            for name, value in zip(latency, (t_bare40, t_bare100, t_v, t_l, t_h, t_pv, t_ph), strict=True):
                latency[name].append(value)
    p50 = {name: percentile(values, 50) for name, values in latency.items()}
    return {
        "ndcg_at_10": {name: ndcg_at_10(qrels, run_) for name, run_ in runs.items()},
        "hnsw_recall_at_10": statistics.mean(hnsw_recall),
        "latency_ms_p50": p50,
        "latency_ms_p95": {name: percentile(values, 95) for name, values in latency.items()},
        "hybrid_over_bare_ef40": p50["match_hybrid_chunks"] / p50["bare <=> (ef_search 40)"],
        "hybrid_over_bare_ef100": p50["match_hybrid_chunks"] / p50["bare <=> (ef_search 100)"],
    }


def report(dataset: str, backend: str, m: dict[str, Any]) -> None:
    print()
    print(f"lexical backend: {backend}")
    print(f"nDCG@10 on {dataset} test")
    for name, value in m["ndcg_at_10"].items():
        print(f"  {name:<8} {value:.4f}")
    for name, value in PUBLISHED.get(dataset, {}).items():
        print(f"  published {name}: {value:.3f}")
    print(f"  HNSW recall@10 vs exact scan (ef_search 100): {m['hnsw_recall_at_10']:.4f}")
    print("latency per query, ms (same connection, same run)      p50      p95")
    for name in LATENCY_NAMES:
        print(f"  {name:<48} {m['latency_ms_p50'][name]:7.2f}  {m['latency_ms_p95'][name]:7.2f}")
    print(f"  hybrid / bare probe: {m['hybrid_over_bare_ef40']:.2f}x (ef_search 40), "
          f"{m['hybrid_over_bare_ef100']:.2f}x (ef_search 100)")


if __name__ == "__main__":
    raise SystemExit(main())
