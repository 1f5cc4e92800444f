"""HNSW recall@10 and latency per ef_search on a scale corpus' vectors alone, and how tied its exact
neighbours are: what ef_search (up to pgvector's 1000) the unfiltered search needs for a recall.

    python bench/scale_ef.py --size 1000000 --vectors model --ef 100,200,400,600,800,1000

The cached corpus of bench/scale.py (generated first when absent), its vectors only: a throwaway
embedded server, one table (bigint id, vector(384)) filled by binary COPY, the HNSW index ragpg
registers (cosine, m 16, ef_construction 64; `--m`, `--ef-construction` to try others) built with
maintenance_work_mem 3GB (in memory at 1M),
then the BEIR questions of scale.py (same seed and count, after the same warm-up) as bare
`ORDER BY embedding <=> q LIMIT 10` at each ef_search, interleaved per query. Ground truth: exact
top-50 in numpy, from which the near-tie figures come (cosine of the 1st, 10th and 11th neighbour,
chunks within 0.01 of the 10th). Writes bench/results/scale-<size>[-model]-ef.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LANGFUSE_TRACING_ENABLED", "false")

import scale_corpus as corpus_mod  # noqa: E402
from scale import REPO, ensure_corpus, fresh_database, server  # noqa: E402
from scale_measure import label, machine, percentiles, timed_ms  # noqa: E402

from rag.store.database import open_connection  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=1_000_000)
    p.add_argument("--vectors", choices=["hash", "model"], default="model")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--ef", default="100,200,400,600,800,1000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--m", type=int, default=16, help="HNSW m (ragpg registers 16)")
    p.add_argument("--ef-construction", type=int, default=64, help="HNSW ef_construction (ragpg registers 64)")
    p.add_argument("--out-dir", type=Path, default=REPO / "bench" / "results")
    args = p.parse_args(argv)
    efs = [int(x) for x in args.ef.split(",")]
    started, load_before = time.perf_counter(), os.getloadavg()
    corpus = ensure_corpus(args.size, args.seed, args.vectors)
    texts, qvecs = corpus_mod.queries(args.queries + args.warmup, args.seed, vectors=args.vectors)
    print("exact top-50 in numpy ...", flush=True)
    exact = corpus_mod.exact_top_k(corpus, qvecs, 50, {"none": None})["none"]
    vectors = np.memmap(corpus.vectors_path, dtype=np.float32, mode="r").reshape(-1, corpus_mod.DIMS)
    top_cos = np.stack([vectors[np.sort(rows)] @ qv for qv, rows in zip(qvecs, exact, strict=True)])
    top_cos = -np.sort(-top_cos, axis=1)
    out: dict[str, Any] = {"size": corpus.n_chunks, "vectors": args.vectors, "index": f"hnsw cosine m {args.m} ef_construction {args.ef_construction}",
                           "near_ties": {"median_cos_1st": round(float(np.median(top_cos[:, 0])), 4),
                                         "median_cos_10th": round(float(np.median(top_cos[:, 9])), 4),
                                         "median_gap_10th_11th": round(float(np.median(top_cos[:, 9] - top_cos[:, 10])), 5),
                                         "median_within_0.01_of_10th": float(np.median(
                                             (top_cos >= (top_cos[:, 9:10] - 0.01)).sum(axis=1))),
                                         "median_within_0.01_capped_at": 50}}
    print(out["near_ties"], flush=True)
    with server([]) as (admin_url, _pid):
        conn = open_connection(fresh_database(admin_url), autocommit=True)
        out["machine"] = machine(conn)
        conn.execute("create table ev (id bigint, embedding vector(384))")
        t0 = time.perf_counter()
        with conn.cursor() as cur, cur.copy("copy ev (id, embedding) from stdin with (format binary)") as copy:
            copy.set_types(["int8", "vector"])
            for start, block in corpus.vector_blocks(8192):
                for j, v in enumerate(block):
                    copy.write_row((start + j, v))
        out["copy_s"] = round(time.perf_counter() - t0, 1)
        conn.execute("set maintenance_work_mem = '3GB'")
        t0 = time.perf_counter()
        conn.execute(f"create index ev_hnsw on ev using hnsw (embedding vector_cosine_ops) "
                     f"with (m = {int(args.m)}, ef_construction = {int(args.ef_construction)})")
        out["hnsw_build_s"] = round(time.perf_counter() - t0, 1)
        conn.execute("vacuum analyze ev")
        print(f"copy {out['copy_s']} s, HNSW build {out['hnsw_build_s']} s", flush=True)
        lat: dict[int, list[float]] = {ef: [] for ef in efs}
        rec: dict[int, list[float]] = {ef: [] for ef in efs}
        for i, qv in enumerate(qvecs):
            truth = {int(r) for r in exact[i][:10]}
            for ef in efs:
                conn.execute(f"set hnsw.ef_search = {ef}")
                rows, ms = timed_ms(lambda q=qv: conn.execute(
                    "select id from ev order by embedding <=> %s limit 10", (q,)).fetchall())
                if i >= args.warmup:
                    lat[ef].append(ms)
                    rec[ef].append(len({r["id"] for r in rows} & truth) / 10)
        out["bare_ef_sweep"] = {str(ef): {"recall_at_10": round(float(np.mean(rec[ef])), 4),
                                          "latency_ms": percentiles(lat[ef])} for ef in efs}
        conn.close()
    for ef, v in out["bare_ef_sweep"].items():
        print(f"ef_search {ef}: recall@10 {v['recall_at_10']:.3f}, p50 {v['latency_ms']['p50']:.2f} ms, "
              f"p95 {v['latency_ms']['p95']:.2f} ms", flush=True)
    out["meta"] = {"command": " ".join(["scale_ef.py", *(argv or sys.argv[1:])]),
                   "seconds": round(time.perf_counter() - started, 1), "load_average_start": load_before,
                   "load_average_end": os.getloadavg(), "finished": time.strftime("%Y-%m-%d %H:%M:%S")}
    index = "" if (args.m, args.ef_construction) == (16, 64) else f"-m{args.m}-efc{args.ef_construction}"
    path = args.out_dir / f"scale-{label(args.size)}{'' if args.vectors == 'hash' else '-' + args.vectors}-ef{index}.json"
    path.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
