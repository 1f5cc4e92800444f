"""All ragpg benchmarks in one run: prints a short table and writes every figure to a JSON file.

Sections (each on a fresh database of one throwaway embedded server, or of DATABASE_URL's server):
  hnsw       HNSW recall@10 vs exact search on synthetic 384-dim vectors at --sizes, per
             hnsw.ef_search, bare and through match_native_chunks_<model> (iterative scan), with
             and without a 10% metadata filter; bulk-load, build time and latency (bench/hnsw_recall.py)
  ingest     chunks/s of a full index run of --vault vs. the model alone, and no-op reindex time,
             per --providers embedder (the functions of bench/ingest_throughput.py)
  retrieval  a BEIR dataset (SciFact) loaded straight into a vault with the --embedder vectors
             (cached, bench/sql_retrieval.py): nDCG@10 and p50/p95 latency of match_native_chunks
             (vector), match_lexical_chunks (BM25), match_hybrid_chunks (RRF), their Python wrappers,
             and rag.compute_context in mode base and auto with no LLM
  peer       the same data, embeddings and queries in langchain-postgres' PGVectorStore, side by
             side with ragpg's vector and hybrid functions (bench/peer_langchain.py)

    python bench/run_all.py                          # everything, local MiniLM embedder
    python bench/run_all.py --embedder hash --skip-ingest --sizes 20000 --queries 100   # quick
    python bench/run_all.py --only hnsw --sizes 20000,200000,500000

Latency is measured one query at a time on one connection, after a warm-up pass; report p50
(median) rather than means on a shared machine. The load average before and after each section is
recorded next to the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hnsw_recall  # noqa: E402
import ingest_throughput as it  # noqa: E402
import peer_langchain  # noqa: E402
import sql_retrieval as sr  # noqa: E402
from run_all_report import machine, print_table, server_versions  # noqa: E402

from rag.config import EmbeddingSettings, RetrievalSettings, load_settings  # noqa: E402
from rag.retrieval import retrieve  # noqa: E402
from rag.store import models
from rag.store.database import open_connection  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SECTIONS = ("hnsw", "ingest", "retrieval", "peer")
WARMUP_QUERIES = 20


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(sr.percentile(values, 50), 3), "p95_ms": round(sr.percentile(values, 95), 3),
            "mean_ms": round(statistics.mean(values), 3), "n": len(values)}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- ingest -------------------------------------------------------------------------------------

def ingest_one(admin_url: str, spec: str, path: Path, kind: str, runs: int) -> dict[str, Any]:
    """bench/ingest_throughput.bench_one, returning its figures."""
    from rag.embed import get_embedder
    from rag.ingest.pipeline import index_vaults

    url = it.fresh_database(admin_url)
    try:
        settings = it.bench_settings(url, spec)
        embedder = get_embedder(spec, settings.embedding)
        embedder.embed_documents(["warm up the model"])
        it.add(url, path.name, path, kind)
        report = index_vaults(settings, embedder=embedder)
        chunks = report.total("chunks_written")
        rate = chunks / report.seconds
        alone = it.model_alone(embedder, it.chunk_texts(url))
        out: dict[str, Any] = {
            "embedder": spec, "model": f"{embedder.provider}/{embedder.model}", "vault": path.name, "kind": kind,
            "files": report.total("files_indexed"), "chunks": chunks, "seconds": round(report.seconds, 2),
            "ingest_chunks_per_s": round(rate, 1), "model_alone_chunks_per_s": round(alone, 1),
            "ingest_share_of_model_alone": round(rate / alone, 3)}
        if kind == "folder":
            in_proc, cli = it.noop_times(settings, url, runs)
            out.update(noop_reindex_runs=runs, noop_reindex_in_process_s=round(in_proc, 3),
                       noop_reindex_cli_s=round(cli, 3))
        print(f"  ingest {spec}: {out['chunks']} chunks in {out['seconds']} s -> {rate:,.1f} chunks/s "
              f"(model alone {alone:,.1f}/s)" + (f"; no-op reindex {out['noop_reindex_in_process_s']} s in process, "
                                                 f"{out['noop_reindex_cli_s']} s CLI" if kind == "folder" else ""),
              flush=True)
        return out
    finally:
        it.drop_database(admin_url, url)


# -- retrieval ----------------------------------------------------------------------------------

class Dataset:
    def __init__(self, data_dir: Path, name: str, n_queries: int) -> None:
        data = data_dir / name
        if not (data / "corpus.jsonl").exists():
            raise SystemExit(f"no BEIR data at {data}")
        self.name = name
        self.corpus = sr.read_jsonl(data / "corpus.jsonl")
        self.queries = {q["_id"]: q["text"] for q in sr.read_jsonl(data / "queries.jsonl")}
        qrels = sr.read_qrels(data / "qrels" / "test.tsv")
        self.test_ids = [qid for qid in qrels if qid in self.queries][: n_queries or None]
        self.qrels = {qid: qrels[qid] for qid in self.test_ids}


def wait_for_cache(embedder: Any, ds: Dataset, cache_dir: Path, minutes: float) -> None:
    """Another process may be filling the embedding cache: wait for its file rather than recompute."""
    import hashlib

    key = hashlib.sha256("\n".join(d["_id"] for d in ds.corpus).encode()).hexdigest()[:12]
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", embedder.model_key)  # a file-name-safe key
    path = cache_dir / f"{ds.name}-{model}-{embedder.dims}-{key}.npy"
    deadline = time.monotonic() + minutes * 60
    if not path.exists() and minutes > 0:
        print(f"  waiting up to {minutes:g} min for {path}", flush=True)
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(10)
    if path.exists():  # let a concurrent np.save finish
        size = -1
        while path.stat().st_size != size:
            size = path.stat().st_size
            time.sleep(1)


def retrieval_section(admin_url: str, args: argparse.Namespace, ds: Dataset, embedder: Any) -> tuple[dict, dict]:
    """Figures, and what the peer section needs (database, vectors, model)."""
    settings = RetrievalSettings()
    url = it.fresh_database(admin_url)
    out: dict[str, Any] = {"dataset": ds.name, "documents": len(ds.corpus), "queries": len(ds.test_ids),
                           "embedder": f"{embedder.provider}/{embedder.model}", "dims": embedder.dims,
                           "bm25": {"k1": settings.bm25_k1, "b": settings.bm25_b}}
    with open_connection(url, autocommit=True) as conn:
        started = time.perf_counter()
        chunk_of = sr.load_corpus(conn, ds.name, ds.corpus)
        out["load_corpus_s"] = round(time.perf_counter() - started, 2)
        wait_for_cache(embedder, ds, args.cache_dir, args.wait_for_cache)
        started = time.perf_counter()
        vectors = sr.embed_corpus(embedder, ds.corpus, args.cache_dir, ds.name)
        out["embed_corpus_s"] = round(time.perf_counter() - started, 2)
        model = models.register_model(conn, embedder.provider, embedder.model, embedder.dims)
        started = time.perf_counter()
        sr.store_embeddings(conn, model, [chunk_of[d["_id"]] for d in ds.corpus], vectors)
        out["store_embeddings_and_hnsw_s"] = round(time.perf_counter() - started, 2)
        texts = [ds.queries[q] for q in ds.test_ids]
        started = time.perf_counter()
        query_vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
        out["embed_queries_ms_per_query"] = round((time.perf_counter() - started) * 1000 / len(texts), 3)
        print(f"  retrieval: {ds.name} loaded in {out['load_corpus_s']} s, embeddings + HNSW "
              f"{out['store_embeddings_and_hnsw_s']} s", flush=True)
        out.update(match_functions(conn, model, ds, query_vectors, settings))
    out["compute_context"] = compute_context_figures(url, ds, embedder, args.embedder, args.context_queries)
    return out, {"url": url, "vectors": vectors, "query_vectors": query_vectors, "model": model,
                 "settings": settings}


def match_functions(conn: Any, model: models.EmbeddingModelRef, ds: Dataset, query_vectors: np.ndarray,
                    settings: RetrievalSettings) -> dict[str, Any]:
    k1, b = settings.bm25_k1, settings.bm25_b
    native = sql.SQL("select chunk_id, source_path from {}(%s::vector, -1, 10)").format(
        sql.Identifier(model.match_function))
    lexical = sql.SQL("select chunk_id, source_path from match_lexical_chunks(%s, 10, '{}', %s, %s)")
    hybrid = sql.SQL("select chunk_id, source_path from {}(%s, %s::vector, 10, '{{}}', -1, k1 => %s, b => %s)"
                     ).format(sql.Identifier(model.hybrid_function))
    bare = sql.SQL("select chunk_id from {} order by embedding <=> %s::vector limit 10").format(
        sql.Identifier(model.embedding_table))
    names = {"vector": "match_native_chunks (SQL)", "bm25": "match_lexical_chunks (SQL)",
             "hybrid": "match_hybrid_chunks (SQL)"}
    runs: dict[str, dict[str, list[str]]] = {k: {} for k in names}
    latency: dict[str, list[float]] = {n: [] for n in (
        *names.values(), "retrieve.match_vector (Python)", "retrieve.match_lexical (Python)",
        "retrieve.match_hybrid (Python)", "bare ORDER BY <=> LIMIT 10 (ef_search 100)")}

    def fetch(query: sql.Composable, params: tuple[Any, ...]) -> list[Any]:
        return conn.execute(query, params).fetchall()

    timed = sr.timed
    conn.execute("set hnsw.ef_search = 100")
    order = list(range(min(WARMUP_QUERIES, len(ds.test_ids)))) + list(range(len(ds.test_ids)))
    for n, i in enumerate(order):
        record = n >= min(WARMUP_QUERIES, len(ds.test_ids))
        qid, qv, text = ds.test_ids[i], query_vectors[i], ds.queries[ds.test_ids[i]]
        vtext = "[" + ",".join(repr(float(x)) for x in qv.tolist()) + "]"
        rows_v, t_v = timed(fetch, native, (vtext,))
        rows_l, t_l = timed(fetch, lexical, (text, k1, b))
        rows_h, t_h = timed(fetch, hybrid, (text, vtext, k1, b))
        _, t_pv = timed(retrieve.match_vector, conn, model, qv, match_count=10, similarity_threshold=-1,
                        settings=settings)
        _, t_pl = timed(retrieve.match_lexical, conn, text, match_count=10, settings=settings)
        _, t_ph = timed(retrieve.match_hybrid, conn, model, text, qv, match_count=10, similarity_threshold=-1,
                        settings=settings)
        _, t_b = timed(fetch, bare, (vtext,))
        if not record:
            continue
        runs["vector"][qid] = [r["source_path"] for r in rows_v]
        runs["bm25"][qid] = [r["source_path"] for r in rows_l]
        runs["hybrid"][qid] = [r["source_path"] for r in rows_h]
        for name, value in zip(latency, (t_v, t_l, t_h, t_pv, t_pl, t_ph, t_b), strict=True):
            latency[name].append(value)
    conn.execute("reset hnsw.ef_search")
    return {"ndcg_at_10": {names[k]: round(sr.ndcg_at_10(ds.qrels, run), 4) for k, run in runs.items()},
            "published_ndcg_at_10": sr.PUBLISHED.get(ds.name, {}),
            "latency": {name: _stats(values) for name, values in latency.items()}}


def compute_context_figures(url: str, ds: Dataset, embedder: Any, spec: str, n_queries: int) -> dict[str, Any]:
    """rag.compute_context (profile chat) in mode base and auto, with no LLM configured."""
    from rag.compute import compute_context
    from rag.runtime import Runtime

    settings = load_settings(Path(tempfile.gettempdir()) / "ragpg-bench-absent.toml", database_url=url,
                             embedding={"model": spec}, llm={"model": None})
    rt = Runtime(settings, _embedder=embedder)
    test_ids = ds.test_ids[: n_queries or None]
    qrels = {qid: ds.qrels[qid] for qid in test_ids}
    out: dict[str, Any] = {"profile": "chat", "llm": None, "budget_tokens": 4000, "queries": len(test_ids)}
    try:
        texts = [ds.queries[q] for q in test_ids]
        embed_ms = []
        for t in texts[:WARMUP_QUERIES] + texts:
            started = time.perf_counter()
            embedder.embed_query(t)
            embed_ms.append((time.perf_counter() - started) * 1000)
        out["embed_query_alone"] = _stats(embed_ms[WARMUP_QUERIES:])
        for mode in ("base", "auto"):
            times: list[float] = []
            run: dict[str, list[str]] = {}
            routes: dict[str, int] = {}
            winners: dict[str, int] = {}
            warm = min(WARMUP_QUERIES, len(test_ids))
            for n, i in enumerate(list(range(warm)) + list(range(len(test_ids)))):
                started = time.perf_counter()
                result = compute_context(ds.queries[test_ids[i]], vaults=[ds.name], mode=mode, runtime=rt)
                ms = (time.perf_counter() - started) * 1000
                if n < warm:
                    continue
                times.append(ms)
                run[test_ids[i]] = [r.candidate.source_path for r in result.ranked]
                route = result.decision.route
                routes[route] = routes.get(route, 0) + 1
                winner = result.decision.winner
                winners[winner] = winners.get(winner, 0) + 1
            out[mode] = {**_stats(times), "ndcg_at_10": round(sr.ndcg_at_10(qrels, run), 4), "routes": routes,
                         "winners": winners}
            print(f"  compute_context {mode}: p50 {out[mode]['p50_ms']:.1f} ms, routes {routes}, winners {winners}",
                  flush=True)
    finally:
        rt.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "latest.json")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma list of sections: {', '.join(SECTIONS)}")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-hnsw", action="store_true")
    parser.add_argument("--skip-peer", action="store_true")
    g = parser.add_argument_group("retrieval and peer")
    g.add_argument("--dataset", default="scifact")
    g.add_argument("--data-dir", type=Path, default=sr.DEFAULT_DATA)
    g.add_argument("--embedder", default="local", help="local (all-MiniLM-L6-v2) or hash for a quick run")
    g.add_argument("--queries", type=int, default=0, help="first N test queries (default all)")
    g.add_argument("--context-queries", type=int, default=100, help="first N of them for compute_context (0: all)")
    g.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragpg-bench-cache")
    g.add_argument("--wait-for-cache", type=float, default=0.0, metavar="MINUTES",
                   help="wait for another process to write the embedding cache before computing it")
    g = parser.add_argument_group("ingest")
    g.add_argument("--vault", type=Path, default=it.DATA / "obsidian-help")
    g.add_argument("--providers", default="hash,local")
    g.add_argument("--runs", type=int, default=3, help="no-op reindex runs")
    g = parser.add_argument_group("hnsw (bench/hnsw_recall.py)")
    hnsw_recall.add_arguments(g, prefix="hnsw-")
    parser.add_argument("--sizes", dest="hnsw_sizes", help="alias of --hnsw-sizes")
    args = parser.parse_args(argv)
    if args.hnsw_sizes is None:
        args.hnsw_sizes = "20000,200000"

    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    for flag, name in ((args.skip_ingest, "ingest"), (args.skip_hnsw, "hnsw"), (args.skip_peer, "peer")):
        if flag and name in sections:
            sections.remove(name)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LANGFUSE_TRACING_ENABLED", "false")

    started = time.perf_counter()
    results: dict[str, Any] = {"meta": {
        "command": "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])]),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "sections": sections,
        "machine": machine(), "load_avg_start": _load(), "section_load_avg": {}, "section_wall_s": {},
        "note": "latencies are single-client, one query at a time, after a warm-up pass; the machine is shared "
                "(see load averages), so compare p50s measured in the same run"}}

    def section(name: str, fn: Any) -> Any:
        print(f"[{name}] load avg {_load()}", flush=True)
        t0, load0 = time.perf_counter(), _load()
        value = fn()
        results["meta"]["section_wall_s"][name] = round(time.perf_counter() - t0, 1)
        results["meta"]["section_load_avg"][name] = {"start": load0, "end": _load()}
        partial = args.out.with_suffix(".partial.json")
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps({**results, name: value[0] if isinstance(value, tuple) else value},
                                      indent=2, default=str) + "\n")
        return value

    with it.server_url() as admin_url:
        results["meta"]["server"] = server_versions(admin_url)
        if "hnsw" in sections:
            results["hnsw"] = section("hnsw", lambda: hnsw_recall.run_all_sizes(admin_url, args, prefix="hnsw_"))
        if "ingest" in sections:
            results["ingest"] = section("ingest", lambda: [
                ingest_one(admin_url, spec.strip(), args.vault, "folder", args.runs)
                for spec in args.providers.split(",") if spec.strip()])
        if "retrieval" in sections or "peer" in sections:
            from rag.embed.registry import get_embedder

            ds = Dataset(args.data_dir, args.dataset, args.queries)
            embedder = get_embedder(args.embedder, EmbeddingSettings(model=args.embedder))
            retrieval, shared = section("retrieval", lambda: retrieval_section(admin_url, args, ds, embedder))
            try:
                if "retrieval" in sections:
                    results["retrieval"] = retrieval
                if "peer" in sections:
                    results["peer"] = section("peer", lambda: peer_langchain.run_peer(
                        shared["url"], corpus=ds.corpus, vectors=shared["vectors"], queries=ds.queries,
                        test_ids=ds.test_ids, query_vectors=shared["query_vectors"], qrels=ds.qrels,
                        model=shared["model"], settings=shared["settings"], vault=ds.name))
            finally:
                it.drop_database(admin_url, shared["url"])
    results["meta"]["load_avg_end"] = _load()
    results["meta"]["wall_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    args.out.with_suffix(".partial.json").unlink(missing_ok=True)
    print_table(results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
