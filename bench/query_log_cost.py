"""What the query log costs a compute_context call: written inline, on the request path, vs in the background.

Uses an existing ragpg installation holding an indexed BEIR vault, as bench/compute_context.py does
(`RAGPG_DATA_DIR=... python bench/query_log_cost.py --dataset nfcorpus`). For every judged query of
the test split, interleaved so that a busy machine slows every variant alike:

- `off`: compute_context with retrieval.query_log = false;
- `background`: compute_context with the query log on, as shipped: the record is queued and a
  writer thread sends it later (rag/store/query_log.py);
- `record inline`: the statement the retrieve stage used to run on the request path,
  `select ragpg_record_query(...)` on an autocommit connection, timed alone for the same question
  (so `off + record inline` is what a call paid before).

Prints the median of each and writes them to --out. Writes query-log rows (that is the point).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rag.compute import compute_context  # noqa: E402
from rag.config import LLMSettings, Settings, load_settings  # noqa: E402
from rag.eval.beir import check_vault, load_beir_queries  # noqa: E402
from rag.retrieval.query_log import record_query  # noqa: E402
from rag.runtime import Runtime  # noqa: E402
from rag.store.database import open_connection  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "beir"
WARMUP_QUERIES = 5
TOP = 10  # retrieval.query_log_top's default: the notes counted per question


def settings_with(base: Settings, query_log: bool) -> Settings:
    return base.model_copy(update={
        "llm": LLMSettings(),
        "embedding": base.embedding.model_copy(update={"query_cache_size": 0}),
        "retrieval": base.retrieval.model_copy(update={"query_log": query_log}),
    })


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="nfcorpus")
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--profile", default="chat")
    parser.add_argument("--max-queries", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    base = load_settings()
    off, background = (Runtime.from_settings(settings_with(base, q), pool_max_size=1) for q in (False, True))
    times: dict[str, list[float]] = {"off": [], "background": [], "record_inline": []}
    try:
        data = load_beir_queries(args.data_dir / args.dataset, "test")
        model, _ = check_vault(off, args.dataset, data)
        queries = list(data.queries.values())[: args.max_queries or None]
        with open_connection(off.primary_url(), autocommit=True) as conn:
            for text in queries[:WARMUP_QUERIES]:
                for rt in (off, background):
                    compute_context(text, vaults=[args.dataset], profile=args.profile, mode="base", runtime=rt)
            for i, text in enumerate(queries):
                order = (("off", off), ("background", background)) if i % 2 == 0 else (
                    ("background", background), ("off", off))
                for name, rt in order:
                    started = time.perf_counter()
                    result = compute_context(text, vaults=[args.dataset], profile=args.profile, mode="base",
                                             runtime=rt)
                    times[name].append((time.perf_counter() - started) * 1000)
                embedding = off.embedder.embed_query(text)
                started = time.perf_counter()
                record_query(conn, model.id, text, embedding, [r.candidate for r in result.ranked], TOP)
                times["record_inline"].append((time.perf_counter() - started) * 1000)
        background.query_log.flush(30)
        stats = background.query_log.stats
    finally:
        off.close()
        background.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{args.dataset} / {args.profile}, mode base, {len(queries)} queries, medians (ms):")
    print(f"  compute_context, query log off:        {med['off']:.2f}")
    print(f"  compute_context, query log background: {med['background']:.2f}")
    print(f"  the inline record alone (before):      {med['record_inline']:.2f}  "
          f"(before ~ {med['off'] + med['record_inline']:.2f})")
    print(f"  background writer: {stats.written} records in {stats.batches} statements, "
          f"{stats.dropped_full + stats.dropped_failed} dropped")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "command": " ".join(["python", "bench/query_log_cost.py", *sys.argv[1:]]), "dataset": args.dataset,
            "profile": args.profile, "queries": len(queries), "median_ms": med,
            "writer": {"written": stats.written, "batches": stats.batches},
            "load_average": os.getloadavg()}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
