"""Queries of bench/scale.py: vector, lexical and hybrid top-10 one at a time (latency, recall against
an exact top-10, full k), with and without metadata filters, per ef_search, and compute_context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import scale_corpus as corpus_mod
from psycopg import sql
from psycopg.types.json import Jsonb
from scale_measure import percentiles, timed_ms

from rag.config import RetrievalSettings, load_settings
from rag.store.models import EmbeddingModelRef

K = 10
VAULT = "scale"
EXACT = 2**31 - 1  # exact_scan_max_rows that makes every filtered vector leg an exact scan


def recall(found: list[int], truth: list[int]) -> float:
    return len(set(found) & set(truth)) / len(truth) if truth else 1.0


class Searcher:
    def __init__(self, conn: psycopg.Connection, model: EmbeddingModelRef) -> None:
        self.conn = conn
        table = sql.Identifier(model.embedding_table)
        self.bare = sql.SQL("select chunk_id from {} order by embedding <=> %s limit 10").format(table)
        self.table = table
        self.vector = sql.SQL("select chunk_id from {}(%s, -1, 10, %s)").format(sql.Identifier(model.match_function))
        self.vector_ef = sql.SQL("select chunk_id from {}(%s, -1, 10, %s, ef_search => %s)").format(
            sql.Identifier(model.match_function))
        self.hybrid = sql.SQL("select chunk_id from {}(%s, %s, 10, %s, -1, exact_scan_max_rows => %s)").format(
            sql.Identifier(model.hybrid_function))
        self.hybrid_default = sql.SQL("select chunk_id from {}(%s, %s, 10, %s, -1)").format(
            sql.Identifier(model.hybrid_function))
        self.lexical = sql.SQL("select chunk_id from match_lexical_chunks(%s, 10, %s)")

    def ids(self, query: sql.Composable, params: tuple[Any, ...]) -> tuple[list[int], float]:
        rows, ms = timed_ms(lambda: self.conn.execute(query, params).fetchall())
        return [r["chunk_id"] for r in rows], ms

    def bare_ids(self, qvec: np.ndarray, where: str | None = None) -> tuple[list[int], float]:
        self.conn.execute("set hnsw.ef_search = 40")  # pgvector's default, stated so a server setting cannot move it
        try:
            if where is None:
                return self.ids(self.bare, (qvec,))
            query = sql.SQL("select e.chunk_id from {} e join chunks c on c.vault_id = e.vault_id and c.id = e.chunk_id"
                            " where {} "
                            "order by e.embedding <=> %s limit 10").format(self.table, sql.SQL(where.replace("%", "%%")))
            return self.ids(query, (qvec,))
        finally:
            self.conn.execute("reset hnsw.ef_search")


def unfiltered(s: Searcher, texts: list[str], qvecs: np.ndarray, ids: np.ndarray, truth: list[np.ndarray],
               warmup: int) -> dict[str, Any]:
    lat: dict[str, list[float]] = {k: [] for k in ("bare", "vector", "lexical", "hybrid")}
    rec: dict[str, list[float]] = {"bare": [], "vector": []}
    full = {k: 0 for k in lat}
    for i, (text, qv) in enumerate(zip(texts, qvecs, strict=True)):
        exact = [int(ids[r]) for r in truth[i]]
        got_bare, t_bare = s.bare_ids(qv)
        got_vec, t_vec = s.ids(s.vector, (qv, Jsonb({})))
        got_lex, t_lex = s.ids(s.lexical, (text, Jsonb({})))
        got_hyb, t_hyb = s.ids(s.hybrid_default, (text, qv, Jsonb({})))
        if i < warmup:
            continue
        for key, got, ms in (("bare", got_bare, t_bare), ("vector", got_vec, t_vec), ("lexical", got_lex, t_lex),
                             ("hybrid", got_hyb, t_hyb)):
            lat[key].append(ms)
            full[key] += len(got) >= K
        rec["bare"].append(recall(got_bare, exact))
        rec["vector"].append(recall(got_vec, exact))
    return {"latency_ms": {k: percentiles(v) for k, v in lat.items()},
            "full_k_fraction": {k: round(v / max(len(texts) - warmup, 1), 4) for k, v in full.items()},
            "recall_at_10": {k: round(float(np.mean(v)), 4) for k, v in rec.items()}}


def ef_sweep(s: Searcher, qvecs: np.ndarray, ids: np.ndarray, truth: list[np.ndarray], warmup: int,
             efs: list[int]) -> dict[str, Any]:
    """Unfiltered match_native recall@10 and latency per ef_search, the settings interleaved per query
    (so machine noise falls on all of them alike)."""
    lat: dict[int, list[float]] = {ef: [] for ef in efs}
    rec: dict[int, list[float]] = {ef: [] for ef in efs}
    for i, qv in enumerate(qvecs):
        exact = [int(ids[r]) for r in truth[i]]
        for ef in efs:
            got, ms = s.ids(s.vector_ef, (qv, Jsonb({}), ef))
            if i >= warmup:
                lat[ef].append(ms)
                rec[ef].append(recall(got, exact))
    return {str(ef): {"recall_at_10": round(float(np.mean(rec[ef])), 4), "latency_ms": percentiles(lat[ef])}
            for ef in efs}


def filtered(s: Searcher, name: str, texts: list[str], qvecs: np.ndarray, ids: np.ndarray,
             truth: list[np.ndarray], matching: int, spec: dict[str, Any] | None = None,
             bare: str | None = None) -> dict[str, Any]:
    """One filter (corpus_mod.FILTERS[name], or `spec` with its plain-SQL form `bare`)."""
    spec = corpus_mod.FILTERS[name] if spec is None else spec
    bare = corpus_mod.BARE_FILTERS[name] if bare is None else bare
    f = Jsonb(spec)
    lat: dict[str, list[float]] = {k: [] for k in ("bare", "vector", "lexical", "hybrid")}
    full = {k: 0 for k in lat}
    rec: dict[str, list[float]] = {"bare": [], "vector": [], "hybrid_vs_exact_vector_leg": []}
    for i, (text, qv) in enumerate(zip(texts, qvecs, strict=True)):
        exact = [int(ids[r]) for r in truth[i]]
        got_bare, t_bare = s.bare_ids(qv, bare)
        got_vec, t_vec = s.ids(s.vector, (qv, f))
        got_lex, t_lex = s.ids(s.lexical, (text, f))
        got_hyb, t_hyb = s.ids(s.hybrid, (text, qv, f, RetrievalSettings().exact_scan_max_rows))
        ref_hyb, _ = s.ids(s.hybrid, (text, qv, f, EXACT))
        for key, got, ms in (("bare", got_bare, t_bare), ("vector", got_vec, t_vec), ("lexical", got_lex, t_lex),
                             ("hybrid", got_hyb, t_hyb)):
            lat[key].append(ms)
            full[key] += len(got) >= min(K, matching)
        rec["bare"].append(recall(got_bare, exact))
        rec["vector"].append(recall(got_vec, exact))
        rec["hybrid_vs_exact_vector_leg"].append(recall(got_hyb, ref_hyb))
    return {"filter": spec, "bare_sql": bare, "matching_chunks": matching,
            "latency_ms": {k: percentiles(v) for k, v in lat.items()},
            "full_k_fraction": {k: round(v / len(texts), 4) for k, v in full.items()},
            "recall_at_10": {k: round(float(np.mean(v)), 4) for k, v in rec.items()}}


def passage_recall(s: Searcher, qvecs: np.ndarray, ids: np.ndarray, truth: dict[str, list[np.ndarray]]
                   ) -> dict[str, Any]:
    """Recall@10 of the vector leg for passage queries (a corpus sentence: real-embedding-like
    neighbourhoods, where BEIR questions under the hash embedder have near-ties), per filter."""
    out: dict[str, Any] = {}
    for name, rows in truth.items():
        f = Jsonb(corpus_mod.FILTERS.get(name, {}))
        rec: dict[str, list[float]] = {"bare": [], "vector": []}
        lat: list[float] = []
        for i, qv in enumerate(qvecs):
            exact = [int(ids[r]) for r in rows[i]]
            got_bare, _ = s.bare_ids(qv, corpus_mod.BARE_FILTERS.get(name))
            got_vec, ms = s.ids(s.vector, (qv, f))
            lat.append(ms)
            rec["bare"].append(recall(got_bare, exact))
            rec["vector"].append(recall(got_vec, exact))
        out[name] = {"recall_at_10": {k: round(float(np.mean(v)), 4) for k, v in rec.items()},
                     "vector_latency_ms": percentiles(lat)}
    return out


def context_pass(url: str, texts: list[str], embedding_model: str) -> dict[str, Any]:
    from rag.compute import compute_context
    from rag.runtime import Runtime

    settings = load_settings(Path("/nonexistent/ragpg-scale.toml"), database_url=url,
                             embedding={"model": embedding_model, "query_cache_size": 0}, retrieval={"query_log": False})
    rt = Runtime.from_settings(settings, pool_max_size=1)
    whole: list[float] = []
    base: list[float] = []
    try:
        for i, text in enumerate(texts):
            result, ms = timed_ms(lambda t=text: compute_context(t, vaults=[VAULT], profile="chat", mode="base",
                                                                 runtime=rt))
            if i >= 5:
                whole.append(ms)
                base.append(result.timings_ms.get("base_pass_ms", float("nan")))
    finally:
        rt.close()
    return {"profile": "chat", "mode": "base", "whole_call_ms": percentiles(whole), "base_pass_ms": percentiles(base)}
