"""Measuring helpers for bench/scale.py: latency percentiles, memory of the server and the client,
relation sizes, and what machine and server settings a run had."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psutil
import psycopg
from psycopg import sql

SERVER_SETTINGS = ("shared_buffers", "work_mem", "maintenance_work_mem", "max_wal_size", "effective_cache_size",
                   "max_parallel_maintenance_workers", "max_parallel_workers_per_gather", "max_worker_processes",
                   "checkpoint_timeout", "wal_level", "synchronous_commit", "jit")


def percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": float("nan"), "p95": float("nan"), "n": 0}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]

    return {"p50": round(at(0.5), 3), "p95": round(at(0.95), 3), "mean": round(statistics.fmean(ordered), 3),
            "n": len(ordered)}


def timed_ms(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - started) * 1000


def client_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class MemorySampler:
    """Samples, every `interval` seconds on a thread, the server's memory (the postmaster and its
    children: sum of PSS, which counts shared buffers once instead of once per backend, and the
    largest single RSS) and this process's RSS; keeps the peaks."""

    def __init__(self, server_pid: int | None, interval: float = 2.0) -> None:
        self.server_pid, self.interval = server_pid, interval
        self.peak: dict[str, float] = {"server_pss_mb": 0.0, "server_max_backend_rss_mb": 0.0, "client_rss_mb": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> dict[str, float]:
        now = {"client_rss_mb": psutil.Process().memory_info().rss / 2**20}
        if self.server_pid:
            try:
                root = psutil.Process(self.server_pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                procs = []
            pss = rss = 0.0
            for p in procs:
                try:
                    info = p.memory_full_info()
                except psutil.Error:
                    continue
                pss += getattr(info, "pss", info.rss)
                rss = max(rss, info.rss)
            now["server_pss_mb"], now["server_max_backend_rss_mb"] = pss / 2**20, rss / 2**20
        for key, value in now.items():
            self.peak[key] = max(self.peak.get(key, 0.0), value)
        return now

    def peaks(self) -> dict[str, float]:
        return {k: round(v, 1) for k, v in self.peak.items()}


def relation_sizes(conn: psycopg.Connection, embedding_table: str) -> dict[str, int]:
    """Bytes of what a bulk load builds: the HNSW index, the BM25 tables and their indexes, the chunks."""
    def size(expr: str, *names: str) -> int:
        total = 0
        for name in names:
            # summed over its partitions (per vault since revision 0014); a plain relation is its own tree
            row = conn.execute(sql.SQL("select coalesce(sum({}(t.relid)), 0) as n from pg_partition_tree(to_regclass(%s)) t")
                               .format(sql.SQL(expr)), (name,)).fetchone()
            total += int(row["n"])
        return total

    return {
        "hnsw_index": size("pg_relation_size", f"{embedding_table}_hnsw_idx"),
        "embeddings_table": size("pg_table_size", embedding_table),
        "bm25_postings_total": size("pg_total_relation_size", "bm25_postings"),
        "bm25_term_stats_total": size("pg_total_relation_size", "bm25_term_stats"),
        "bm25_index_tables_total": sum(
            size("pg_total_relation_size", r["table_name"]) for r in conn.execute("select table_name from bm25_indexes")),
        "chunks_table": size("pg_table_size", "chunks"),
        "chunks_gin_indexes": size("pg_relation_size", "chunks_tsv_idx", "chunks_metadata_idx"),
        "chunks_folder_index": size("pg_relation_size", "chunks_folder_idx"),
        "database": int(conn.execute("select pg_database_size(current_database()) as n").fetchone()["n"]),
    }


def machine(conn: psycopg.Connection) -> dict[str, Any]:
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        pass
    settings = {r["name"]: r["value"] for r in conn.execute(
        "select name, current_setting(name) as value from pg_settings where name = any(%s)", (list(SERVER_SETTINGS),))}
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "memory_available_gib_at_start": round(psutil.virtual_memory().available / 2**30, 1),
        "platform": platform.platform(), "python": platform.python_version(),
        "server_version": conn.execute("show server_version").fetchone()["server_version"],
        "pgvector": conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()["extversion"],
        "server_settings": settings,
    }


def lexical_backends(conn: psycopg.Connection) -> dict[str, str]:
    """Which lexical backend each vault uses (rag.store.lexical_backend: sql or pg_textsearch)."""
    return {r["vault"]: str(r["backend"]) for r in conn.execute("select vault, backend from ragpg_lexical_backends()")}


def label(n: int) -> str:
    return f"{n // 1_000_000}m" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def table(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        u, load = r["unfiltered"], r["load"]
        lines.append(f"## {label(r['size'])} chunks ({r['documents']} documents), "
                     f"{r.get('vectors', {}).get('source', 'hash')} vectors")
        lines.append(f"load: {load['chunks_per_s']:.0f} chunks/s incl. builds ({load['seconds']['total']:.0f} s: "
                     + ", ".join(f"{k} {v:.1f}" for k, v in load["seconds"].items() if k != "total")
                     + f"); client peak RSS {load['client_peak_rss_mb']:.0f} MiB; server PSS peak "
                     f"{load['memory_peaks'].get('server_pss_mb', float('nan')):.0f} MiB")
        sz = r["sizes_bytes"]
        lines.append(f"sizes: HNSW {sz['hnsw_index'] / 2**20:.0f} MiB, BM25 postings "
                     f"{sz['bm25_postings_total'] / 2**20:.0f} MiB, database {sz['database'] / 2**20:.0f} MiB")
        bare = u["latency_ms"]["bare"]["p50"]
        lines.append(f"{'query':<22} {'p50 ms':>8} {'p95 ms':>8} {'bare p50':>9} {'full k':>7} {'recall':>7}")
        for key in ("vector", "lexical", "hybrid"):
            lat = u["latency_ms"][key]
            rec = u["recall_at_10"].get(key)
            lines.append(f"{key:<22} {lat['p50']:>8.2f} {lat['p95']:>8.2f} {bare:>9.2f} {'':>7} "
                         f"{'' if rec is None else format(rec, '.3f'):>7}")
        for name, fr in r["filtered"].items():
            b = fr["latency_ms"]["bare"]["p50"]
            for key in ("vector", "lexical", "hybrid"):
                lat = fr["latency_ms"][key]
                rec = {"vector": fr["recall_at_10"]["vector"],
                       "hybrid": fr["recall_at_10"]["hybrid_vs_exact_vector_leg"]}.get(key)
                lines.append(f"{name + ' ' + key:<22} {lat['p50']:>8.2f} {lat['p95']:>8.2f} {b:>9.2f} "
                             f"{fr['full_k_fraction'][key]:>7.2f} {'' if rec is None else format(rec, '.3f'):>7}")
            lines.append(f"{name + ' bare':<22} {b:>8.2f} {fr['latency_ms']['bare']['p95']:>8.2f} {b:>9.2f} "
                         f"{fr['full_k_fraction']['bare']:>7.2f} {fr['recall_at_10']['bare']:>7.3f}")
        if "compute_context" in r:
            cc = r["compute_context"]
            lines.append(f"compute_context base pass p50 {cc['base_pass_ms']['p50']:.2f} ms, whole call "
                         f"{cc['whole_call_ms']['p50']:.2f} ms (bare <=> p50 {bare:.2f} ms)")
        lines.append(f"HNSW recall@10: match_native {u['recall_at_10']['vector']:.3f}, bare (ef 40) "
                     f"{u['recall_at_10']['bare']:.3f}; lexical backend: {r['lexical_backend']}")
        for ef, v in r.get("unfiltered_ef_sweep", {}).items():
            lines.append(f"match_native at ef_search {ef}: recall@10 {v['recall_at_10']:.3f}, "
                         f"p50 {v['latency_ms']['p50']:.2f} ms, p95 {v['latency_ms']['p95']:.2f} ms")
        if "passage_queries" in r:
            lines.append("passage queries, vector recall@10 (match_native / bare): " + ", ".join(
                f"{k} {v['recall_at_10']['vector']:.3f}/{v['recall_at_10']['bare']:.3f}"
                for k, v in r["passage_queries"].items()))
    return "\n".join(lines)
