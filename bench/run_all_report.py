"""The report of bench/run_all.py: the machine and server it ran on, and the summary table."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest_throughput as it  # noqa: E402

from rag.store.database import open_connection  # noqa: E402


def machine() -> dict[str, Any]:
    import psycopg

    out = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
           "psycopg": psycopg.__version__}
    try:
        out["cpu_model"] = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                                if line.startswith("model name"))
        out["mem_gb"] = round(int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                                       if line.startswith("MemTotal"))) / 1048576, 1)
    except (OSError, StopIteration):
        pass
    return out


def server_versions(admin_url: str) -> dict[str, Any]:
    url = it.fresh_database(admin_url)
    try:
        with open_connection(url) as conn:
            row = conn.execute("select current_setting('server_version') as pg,"
                               " (select extversion from pg_extension where extname = 'vector') as pgvector,"
                               " current_setting('shared_buffers') as shared_buffers,"
                               " current_setting('max_parallel_workers_per_gather') as parallel_gather").fetchone()
        return dict(row)
    finally:
        it.drop_database(admin_url, url)


def print_table(results: dict[str, Any]) -> None:
    print()
    print("=" * 100)
    m, s = results["meta"], results["meta"]["server"]
    print(f"ragpg benchmarks  {m['started_at']}  wall {m['wall_s']:.0f} s  |  {m['machine']['cpus']} cores, "
          f"Python {m['machine']['python']}, PostgreSQL {s['pg']}, pgvector {s['pgvector']}  |  load avg "
          f"{m['load_avg_start'][0]} -> {m['load_avg_end'][0]}")
    for row in results.get("ingest", []):
        print(f"ingest  {row['embedder']:>6} {row['vault']}: {row['ingest_chunks_per_s']:>8,.1f} chunks/s "
              f"(model alone {row['model_alone_chunks_per_s']:,.1f}/s, {row['chunks']} chunks)"
              + (f", no-op reindex {row['noop_reindex_in_process_s']} s / CLI {row['noop_reindex_cli_s']} s"
                 if "noop_reindex_cli_s" in row else ""))
    r = results.get("retrieval")
    if r:
        print(f"\nretrieval  {r['dataset']} ({r['documents']} docs, {r['queries']} queries, {r['embedder']})"
              f"{'':<10}nDCG@10     p50 ms    p95 ms")
        for name, lat in r["latency"].items():
            nd = r["ndcg_at_10"].get(name)
            print(f"  {name:<62} {nd if nd is not None else '':>7}  {lat['p50_ms']:8.2f}  {lat['p95_ms']:8.2f}")
        cc = r["compute_context"]
        for mode in ("base", "auto"):
            label = f"compute_context mode={mode} (first {cc['queries']} queries)"
            print(f"  {label:<62} {cc[mode]['ndcg_at_10']:>7}"
                  f"  {cc[mode]['p50_ms']:8.2f}  {cc[mode]['p95_ms']:8.2f}")
        print(f"  {'  embed_query alone':<62} {'':>7}  {cc['embed_query_alone']['p50_ms']:8.2f}"
              f"  {cc['embed_query_alone']['p95_ms']:8.2f}")
    p = results.get("peer")
    if p:
        print(f"\npeer (same data, embeddings, queries; langchain-postgres {p['langchain_postgres_version']})"
              f"{'':<8}nDCG@10     p50 ms    p95 ms")
        for name, row in p["systems"].items():
            print(f"  {name:<62} {row['ndcg_at_10']:>7}  {row['p50_ms']:8.2f}  {row['p95_ms']:8.2f}")
        for backend, by_harness in p.get("hybrid_p50", {}).items():
            for harness, h in by_harness.items():
                print(f"  hybrid p50, lexical {backend}, {harness}: ragpg {h['ragpg_ms']:.2f} / langchain "
                      f"{h['langchain_ms']:.2f} ms = {h['ratio']:.2f}x")
        print(f"  langchain add_texts {p['langchain_add_texts_s']} s (row by row), HNSW build "
              f"{p['langchain_hnsw_build_s']} s; ragpg COPY + HNSW build "
              f"{results['retrieval']['store_embeddings_and_hnsw_s']} s")
    for h in results.get("hnsw", []):
        print(f"\nhnsw  {h['size']:,} {h['distribution']} {h['dims']}-dim: binary COPY {h['copy_binary_s']} s, "
              f"build {h['hnsw_build_s']} s ({h['hnsw_index_mb']} MB); exact scan p50 {h['exact scan']['p50_ms']} ms")
        print(f"  {'ef_search':>9}  {'bare r@10':>9} {'p50':>7}  {'match r@10':>10} {'p50':>7}  "
              f"{'bare+filter':>11} {'p50':>7}  {'match+filter':>12} {'p50':>7}")
        for ef, row in h["ef_search"].items():
            print(f"  {ef:>9}  {row['bare']['recall_at_10']:>9.3f} {row['bare']['p50_ms']:>7.2f}  "
                  f"{row['match']['recall_at_10']:>10.3f} {row['match']['p50_ms']:>7.2f}  "
                  f"{row['bare+filter']['recall_at_10']:>11.3f} {row['bare+filter']['p50_ms']:>7.2f}  "
                  f"{row['match+filter']['recall_at_10']:>12.3f} {row['match+filter']['p50_ms']:>7.2f}")
    print("=" * 100)


