"""The small vaults' shared bm25 index against the SQL BM25 (issue 49): how many of a search's top-k it finds.

The shared index (db/sql/55_bm25_index.sql) ranks with the pooled statistics of every small vault, where
ragpg scores each chunk with its own vault's, so it is read ragpg_bm25_shared_depth_factor() times deeper
and its candidates scored exactly. This loads the scale corpus over N Zipf-sized vaults as
`bench/scale.py --tenants` does, asks every question naming no vault with the indexes, then again with
every index disabled (the SQL BM25, exact), and reports the share of the SQL BM25's top 10 and top 60
(a hybrid search's candidates) that the indexed search returned, with both searches' latencies.

    python bench/scale_bm25_shared.py --size 100000 --tenants 100 --queries 100
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scale_corpus as corpus_mod
import scale_tenants as tenants_mod
from scale import ensure_corpus, fresh_database, prepared, server
from scale_measure import percentiles

from rag.config import load_settings
from rag.store import lexical_backend
from rag.store.database import open_connection
from rag.store.models import register_model


def top(conn: Any, text: str, k: int) -> tuple[list[int], float]:
    started = time.perf_counter()
    ids = [r["chunk_id"] for r in conn.execute("select chunk_id from match_lexical_chunks(%s, %s)", (text, k))]
    return ids, (time.perf_counter() - started) * 1000


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=100000)
    p.add_argument("--tenants", type=int, default=100)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "scale-bm25-shared.json")
    args = p.parse_args(argv)
    corpus = ensure_corpus(args.size, args.seed, "hash")
    with server([]) as (admin_url, _):
        url = fresh_database(admin_url)
        conn = open_connection(url, autocommit=True)
        model = register_model(conn, "hash", f"feature-hash-{corpus_mod.DIMS}", corpus_mod.DIMS)
        settings = load_settings(Path("/nonexistent/ragpg-scale.toml"), database_url=url)
        doc_vault = tenants_mod.assignment(corpus.n_docs, args.tenants, args.seed)
        load = tenants_mod.load(conn, corpus, model, prepared(corpus, doc_vault), doc_vault, args.tenants,
                                settings.ingest)
        r = settings.retrieval
        for v in load["vaults"]:
            lexical_backend.choose_for_vault(conn, v["name"], "auto", r.bm25_k1, r.bm25_b)
        conn.execute("vacuum analyze")
        texts, _ = corpus_mod.queries(args.queries, args.seed, vectors="hash")
        indexed = {k: [top(conn, t, k) for t in texts] for k in (10, 60)}
        for v in load["vaults"]:
            conn.execute("select ragpg_disable_bm25_index(%s)", (v["name"],))
        exact = {k: [top(conn, t, k) for t in texts] for k in (10, 60)}
        out: dict[str, Any] = {"command": " ".join(["scale_bm25_shared.py", *argv]), "size": corpus.n_chunks,
                               "tenants": args.tenants, "vaults_with_own_partitions": load["vaults_with_own_partitions"],
                               "queries": len(texts)}
        for k in (10, 60):
            recall = [len(set(a[0]) & set(b[0])) / len(b[0]) for a, b in zip(indexed[k], exact[k], strict=True) if b[0]]
            out[f"top{k}"] = {"recall_vs_sql_bm25": round(float(np.mean(recall)), 4),
                              "questions_all_found": int(sum(x == 1.0 for x in recall)), "questions": len(recall),
                              "indexed_ms": percentiles([x[1] for x in indexed[k]]),
                              "sql_bm25_ms": percentiles([x[1] for x in exact[k]])}
        conn.close()
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
