"""HNSW recall@10 vs exact search on synthetic vectors, with build time and query latency.

For each size (default 20k and 200k) a fresh database gets one vault, one document per 100
chunks (inserted server-side with generate_series) and a registered embedding model
(``ragpg_register_embedding_model`` via ``rag.store.models.register_model``: its table, its HNSW
cosine index and its ``match_native_chunks_<name>`` function). The vectors are bulk-loaded with
binary COPY after dropping the registered index, then the index is rebuilt from its own registered
definition (``pg_get_indexdef``), as a bulk loader would; load and build are timed separately.

Data (``--distribution``):
  clustered  unit vectors drawn around 500 random unit centres, cluster sizes ~ Dirichlet(1), noise
             with norm ~1.0 (cosine to the centre ~0.7, between members ~0.5, between clusters ~0):
             roughly the neighbourhood structure of sentence embeddings. The default.
  uniform    i.i.d. normal vectors, normalized: no structure, the hardest case for HNSW.
Queries are fresh draws from the same distribution (not members of the data set). The ground
truth is an exact top-10 by inner product over the (normalized) float32 vectors in numpy,
checked against the database's exact scan (``cosine_distance``, not index-assisted) on a few queries.

Measured for each ``--ef`` value (``hnsw.ef_search``), over ``--queries`` queries:
  bare        ``order by embedding <=> q limit 10``, hnsw.iterative_scan = off
  match       ``match_native_chunks_<model>(q, -1, 10, '{}', ef_search => ef)`` (iterative scan on,
              relaxed_order, as the wrapper sets it; ef is raised to match_count)
  bare+filter the bare query joined to chunks with ``metadata @> {"bucket": b}`` (10% of rows),
              iterative scan off, seq/bitmap scans disabled so the plan stays on HNSW
              (post-filtering): the recall a filter costs a plain HNSW scan
  match+filter the match function with the same filter and exact_scan_max_rows => 0, i.e. forced
              through HNSW with iterative scan
plus, once, the match function with the filter and its default planner (exact scan when the
filter matches <= 10,000 chunks) and the exact scans' latency.

    python bench/hnsw_recall.py --sizes 20000,200000 --ef 10,20,40,100,200 [--distribution clustered]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest_throughput import drop_database, fresh_database, server_url  # noqa: E402

from rag.store import models
from rag.store.database import open_connection  # noqa: E402

K = 10
BUCKETS = 10
CHUNKS_PER_DOCUMENT = 100
N_CLUSTERS = 500
CLUSTER_NOISE = 1.0


# -- data ---------------------------------------------------------------------------------------

def _normalize(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def synthetic(n: int, n_queries: int, dims: int, distribution: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(data, queries), unit-norm float32."""
    rng = np.random.default_rng(seed)
    if distribution == "uniform":
        return (_normalize(rng.standard_normal((n, dims), dtype=np.float32)),
                _normalize(rng.standard_normal((n_queries, dims), dtype=np.float32)))
    if distribution != "clustered":
        raise ValueError(f"unknown distribution {distribution!r}")
    centres = _normalize(rng.standard_normal((N_CLUSTERS, dims), dtype=np.float32))
    weights = rng.dirichlet(np.ones(N_CLUSTERS))

    def draw(count: int) -> np.ndarray:
        out = np.empty((count, dims), dtype=np.float32)
        step = 50_000
        for start in range(0, count, step):
            m = min(step, count - start)
            labels = rng.choice(N_CLUSTERS, size=m, p=weights)
            noise = rng.standard_normal((m, dims), dtype=np.float32) * (CLUSTER_NOISE / np.sqrt(dims))
            out[start:start + m] = _normalize(centres[labels] + noise)
        return out

    return draw(n), draw(n_queries)


def exact_top_k(data: np.ndarray, queries: np.ndarray, k: int = K, mask: np.ndarray | None = None,
                ) -> list[np.ndarray]:
    """Row indexes of each query's exact top-k by cosine (= inner product on unit vectors)."""
    out = []
    for start in range(0, len(queries), 64):
        scores = queries[start:start + 64] @ data.T
        if mask is not None:
            scores[:, ~mask] = -np.inf
        part = np.argpartition(-scores, k, axis=1)[:, :k]
        for row, idx in zip(scores, part, strict=True):
            out.append(idx[np.argsort(-row[idx])])
    return out


# -- database -----------------------------------------------------------------------------------

def load(conn: psycopg.Connection, data: np.ndarray, model_name: str,
         maintenance_work_mem: str) -> tuple[models.EmbeddingModelRef, np.ndarray, dict[str, Any]]:
    """Vault, documents and chunks (server-side), vectors by binary COPY, then the HNSW build."""
    n, dims = data.shape
    timings: dict[str, Any] = {}
    started = time.perf_counter()
    vault_id = conn.execute("insert into vaults (name, root_path) values (%s, %s) returning id",
                            ("synthetic", "synthetic")).fetchone()["id"]
    n_docs = (n + CHUNKS_PER_DOCUMENT - 1) // CHUNKS_PER_DOCUMENT
    conn.execute(
        "insert into documents (vault_id, source_path, document_version, size_bytes)"
        " select %(v)s, 'doc-' || lpad(g::text, 6, '0'), 'v1', 0 from generate_series(0, %(d)s - 1) g",
        {"v": vault_id, "d": n_docs})
    conn.execute(
        "insert into chunks (document_id, vault_id, ordinal, content, metadata)"
        " select d.id, %(v)s, g %% %(per)s, 's' || g, jsonb_build_object('bucket', g %% %(b)s)"
        " from generate_series(0, %(n)s - 1) g"
        " join documents d on d.vault_id = %(v)s and d.source_path = 'doc-' || lpad((g / %(per)s)::text, 6, '0')",
        {"v": vault_id, "per": CHUNKS_PER_DOCUMENT, "b": BUCKETS, "n": n})
    ids = conn.execute(
        "select c.id from chunks c join documents d on d.id = c.document_id where c.vault_id = %s"
        " order by d.source_path, c.ordinal", (vault_id,)).fetchall()
    chunk_ids = np.array([r["id"] for r in ids], dtype=np.int64)
    assert len(chunk_ids) == n
    timings["chunks_insert_s"] = time.perf_counter() - started

    model = models.register_model(conn, "bench", model_name, dims)
    table = sql.Identifier(model.embedding_table)
    index = conn.execute(
        "select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as def"
        " from pg_index i join pg_am a on a.oid = (select relam from pg_class where oid = i.indexrelid)"
        " where i.indrelid = %s::regclass and a.amname = 'hnsw'", (model.embedding_table,)).fetchone()
    assert index, "the registered model has no HNSW index"
    conn.execute(sql.SQL("drop index {}").format(sql.Identifier(index["name"])))

    started = time.perf_counter()
    with conn.cursor() as cur, cur.copy(
            sql.SQL("copy {} (vault_id, chunk_id, embedding) from stdin with (format binary)").format(table)) as copy:
        copy.set_types(["int8", "int8", "vector"])
        for chunk_id, vector in zip(chunk_ids.tolist(), data, strict=True):
            copy.write_row((vault_id, chunk_id, vector))
    timings["copy_binary_s"] = time.perf_counter() - started
    timings["copy_rows_per_s"] = n / timings["copy_binary_s"]

    conn.execute("select set_config('maintenance_work_mem', %s, false)", (maintenance_work_mem,))
    timings["maintenance_work_mem"] = conn.execute("show maintenance_work_mem").fetchone()["maintenance_work_mem"]
    timings["max_parallel_maintenance_workers"] = int(conn.execute(
        "show max_parallel_maintenance_workers").fetchone()["max_parallel_maintenance_workers"])
    started = time.perf_counter()
    conn.execute(index["def"])  # the registered definition, as pg_get_indexdef printed it
    timings["hnsw_build_s"] = time.perf_counter() - started
    timings["hnsw_index_definition"] = index["def"]
    timings["hnsw_index_mb"] = conn.execute(
        "select pg_relation_size(%s::regclass) / 1048576.0 as mb", (index["name"],)).fetchone()["mb"]
    timings["hnsw_index_mb"] = round(float(timings["hnsw_index_mb"]), 1)
    conn.execute(sql.SQL("vacuum analyze {}").format(table))
    conn.execute("analyze chunks")
    return model, chunk_ids, timings


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def summarize(recalls: list[float], times: list[float], counts: list[int] | None = None) -> dict[str, Any]:
    out = {"recall_at_10": round(statistics.mean(recalls), 4),
           "p50_ms": round(percentile(times, 50), 3), "p95_ms": round(percentile(times, 95), 3)}
    if counts is not None:
        out["mean_results"] = round(statistics.mean(counts), 2)
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def measure(conn: psycopg.Connection, model: models.EmbeddingModelRef, chunk_ids: np.ndarray, data: np.ndarray,
            queries: np.ndarray, ef_values: list[int], exact_queries: int) -> dict[str, Any]:
    table = sql.Identifier(model.embedding_table)
    fn = sql.Identifier(model.match_function)
    buckets = np.arange(len(data)) % BUCKETS
    q_buckets = [i % BUCKETS for i in range(len(queries))]
    truth = [set(chunk_ids[t].tolist()) for t in exact_top_k(data, queries)]
    truth_f: list[set[int]] = [set()] * len(queries)
    for b in range(BUCKETS):
        members = [i for i in range(len(queries)) if q_buckets[i] == b]
        if members:
            for i, t in zip(members, exact_top_k(data, queries[members], mask=buckets == b), strict=True):
                truth_f[i] = set(chunk_ids[t].tolist())

    bare = sql.SQL("select chunk_id from {} order by embedding <=> %s limit %s").format(table)
    bare_f = sql.SQL("select e.chunk_id from {} e join chunks c on c.id = e.chunk_id where c.metadata @> %s::jsonb"
                     " order by e.embedding <=> %s limit %s").format(table)
    match = sql.SQL("select chunk_id from {}(query_embedding => %s, similarity_threshold => -1,"
                    " match_count => %s, filter => %s::jsonb, exact_scan_max_rows => %s,"
                    " ef_search => %s)").format(fn)
    exact = sql.SQL("select chunk_id from {} order by cosine_distance(embedding, %s) limit %s").format(table)
    exact_f = sql.SQL("select e.chunk_id from {} e join chunks c on c.id = e.chunk_id where c.metadata @> %s::jsonb"
                      " order by cosine_distance(e.embedding, %s) limit %s").format(table)

    def ids(query: sql.Composable, params: tuple[Any, ...]) -> tuple[list[int], float]:
        started = time.perf_counter()
        rows = conn.execute(query, params).fetchall()
        return [r["chunk_id"] for r in rows], _ms(started)

    def flt(i: int) -> str:
        return json.dumps({"bucket": q_buckets[i]})

    def uses_hnsw(query: sql.Composable, params: tuple[Any, ...]) -> bool:
        plan = conn.execute(sql.SQL("explain (format json) ") + query, params).fetchone()
        return "hnsw" in json.dumps(plan).lower()

    def run(variant: str, ef: int) -> dict[str, Any]:
        recalls, times, counts = [], [], []
        forced = variant == "bare+filter"
        if forced:  # keep the planner on the HNSW index (post-filtering), not a bitmap scan of the GIN index
            conn.execute("select set_config('enable_seqscan', 'off', false), set_config('enable_bitmapscan', 'off', false)")
        for i, q in enumerate(queries):
            if variant == "bare":
                got, ms = ids(bare, (q, K))
            elif variant == "bare+filter":
                got, ms = ids(bare_f, (flt(i), q, K))
            elif variant == "match":
                got, ms = ids(match, (q, K, "{}", 10_000, ef))
            else:  # match+filter, forced through HNSW
                got, ms = ids(match, (q, K, flt(i), 0, ef))
            expected = truth_f[i] if variant.endswith("filter") else truth[i]
            recalls.append(len(expected & set(got)) / K)
            times.append(ms)
            counts.append(len(got))
        out = summarize(recalls, times, counts)
        if variant.startswith("bare"):
            out["plan_uses_hnsw"] = uses_hnsw(bare, (queries[0], K)) if variant == "bare" else \
                uses_hnsw(bare_f, (flt(0), queries[0], K))
        if forced:
            conn.execute("reset enable_seqscan")
            conn.execute("reset enable_bitmapscan")
        return out

    conn.execute("select set_config('hnsw.iterative_scan', 'off', false)")
    # warm the index and the heap
    for q in queries[: min(50, len(queries))]:
        conn.execute(bare, (q, K)).fetchall()
    results: dict[str, Any] = {"ef_search": {}}
    for ef in ef_values:
        conn.execute("select set_config('hnsw.ef_search', %s, false)", (str(ef),))
        row = {v: run(v, ef) for v in ("bare", "match", "bare+filter", "match+filter")}
        results["ef_search"][str(ef)] = row
        print(f"    ef_search {ef:>4}: " + "  ".join(
            f"{v} r={r['recall_at_10']:.3f} p50={r['p50_ms']:.2f}ms" for v, r in row.items()), flush=True)
    conn.execute("reset hnsw.ef_search")

    # the match function's default planner with the filter (exact scan when <= 10,000 chunks match)
    recalls, times = [], []
    for i, q in enumerate(queries):
        got, ms = ids(match, (q, K, flt(i), 10_000, 100))
        recalls.append(len(truth_f[i] & set(got)) / K)
        times.append(ms)
    results["match+filter default planner (ef 100)"] = summarize(recalls, times)

    # exact scans: latency, and a check of the numpy ground truth
    n_exact = min(exact_queries, len(queries))
    times, times_f, agree = [], [], []
    for i, q in enumerate(queries[:n_exact]):
        got, ms = ids(exact, (q, K))
        times.append(ms)
        agree.append(len(truth[i] & set(got)) / K)
        _, ms = ids(exact_f, (flt(i), q, K))
        times_f.append(ms)
    results["exact scan"] = {"queries": n_exact, "p50_ms": round(percentile(times, 50), 3),
                             "p95_ms": round(percentile(times, 95), 3),
                             "agreement_with_numpy_truth": round(statistics.mean(agree), 4)}
    results["exact scan + filter"] = {"queries": n_exact, "p50_ms": round(percentile(times_f, 50), 3),
                                      "p95_ms": round(percentile(times_f, 95), 3)}
    return results


def run_size(admin_url: str, n: int, *, dims: int, distribution: str, ef_values: list[int], n_queries: int,
             seed: int, maintenance_work_mem: str, exact_queries: int, keep: bool = False) -> dict[str, Any]:
    print(f"  hnsw: {n:,} {distribution} {dims}-dim vectors, {n_queries} queries", flush=True)
    started = time.perf_counter()
    data, queries = synthetic(n, n_queries, dims, distribution, seed)
    gen_s = time.perf_counter() - started
    url = fresh_database(admin_url)
    try:
        with open_connection(url, autocommit=True) as conn:
            register_vector(conn)
            model, chunk_ids, timings = load(conn, data, f"synthetic-{distribution}-{dims}", maintenance_work_mem)
            print(f"    chunks {timings['chunks_insert_s']:.1f}s, binary COPY {timings['copy_binary_s']:.1f}s "
                  f"({timings['copy_rows_per_s']:,.0f} rows/s), HNSW build {timings['hnsw_build_s']:.1f}s "
                  f"({timings['hnsw_index_mb']} MB)", flush=True)
            results = measure(conn, model, chunk_ids, data, queries, ef_values, exact_queries)
    finally:
        if not keep:
            drop_database(admin_url, url)
    return {"size": n, "dims": dims, "distribution": distribution, "queries": n_queries, "k": K,
            "filter_selectivity": 1 / BUCKETS, "generate_s": round(gen_s, 2),
            **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in timings.items()}, **results}


def add_arguments(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    p = prefix
    parser.add_argument(f"--{p}sizes", default="20000,200000", help="comma-separated data set sizes")
    parser.add_argument(f"--{p}ef", default="10,20,40,100,200", help="hnsw.ef_search values")
    parser.add_argument(f"--{p}distribution", default="clustered", help="clustered, uniform, or both (comma list)")
    parser.add_argument(f"--{p}queries", type=int, default=200)
    parser.add_argument(f"--{p}dims", type=int, default=384)
    parser.add_argument(f"--{p}seed", type=int, default=8)
    parser.add_argument(f"--{p}maintenance-work-mem", default="1GB")
    parser.add_argument(f"--{p}exact-queries", type=int, default=20, help="queries timed with an exact scan")


def run_all_sizes(admin_url: str, args: argparse.Namespace, prefix: str = "") -> list[dict[str, Any]]:
    def get(name: str) -> Any:
        return getattr(args, (prefix + name).replace("-", "_"))

    out = []
    for distribution in [d.strip() for d in get("distribution").split(",") if d.strip()]:
        for size in [int(s) for s in get("sizes").split(",") if s.strip()]:
            out.append(run_size(admin_url, size, dims=get("dims"), distribution=distribution,
                                ef_values=[int(e) for e in get("ef").split(",")], n_queries=get("queries"),
                                seed=get("seed"), maintenance_work_mem=get("maintenance_work_mem"),
                                exact_queries=get("exact_queries")))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    with server_url() as admin_url:
        results = run_all_sizes(admin_url, args)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    else:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
