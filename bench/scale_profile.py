"""Where a search naming no vault spends its time: each SQL function's own and total time.

    DATABASE_URL=<server> python bench/scale.py --sizes 100000 --tenants 1000 --own-partition-min-chunks 1000 ...
    python bench/scale_profile.py --database-url <the ragpg_scale_... database it made> [--queries 20]

bench/scale.py leaves the database it made on a server DATABASE_URL names (a throwaway embedded one
it removes). This runs the unfiltered vector, lexical and hybrid searches of scale.py (the same BEIR
questions and hash vectors, after a warm-up) in one transaction each with `track_functions = all`,
and prints p50 and, per function, its calls and total and self milliseconds from
pg_stat_xact_user_functions: the split of a search across graph walks, index reads, exact scoring
and row reads. Nothing is written.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import psycopg  # noqa: E402
import scale_corpus as corpus_mod  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402

WARMUP = 5
SHOWN = 12
NO_FILTER = "{}"


def searches(model: dict[str, Any]) -> dict[str, sql.Composed]:
    return {
        "vector": sql.SQL("select chunk_id from {}(%(vec)s::vector, -1, 10, %(f)s::jsonb)").format(
            sql.Identifier(model["match_function"])),
        "lexical": sql.SQL("select chunk_id from match_lexical_chunks(%(text)s, 10, %(f)s::jsonb)").format(),
        "hybrid": sql.SQL("select chunk_id from {}(%(text)s, %(vec)s::vector, 10, %(f)s::jsonb, -1)").format(
            sql.Identifier(model["hybrid_function"])),
    }


def profile(conn: psycopg.Connection[dict[str, Any]], query: sql.Composed, params: list[dict[str, str]]) -> None:
    for p in params[:WARMUP]:
        conn.execute(query, p).fetchall()
    with conn.transaction():
        conn.execute("set local track_functions = 'all'")
        times = []
        for p in params[WARMUP:]:
            started = time.perf_counter()
            conn.execute(query, p).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        rows = conn.execute("select funcname, calls, total_time, self_time from pg_stat_xact_user_functions "
                            "order by self_time desc limit %s", (SHOWN,)).fetchall()
    n = len(times)
    print(f"  p50 {statistics.median(times):.1f} ms over {n} questions; per question, ms:")
    for r in rows:
        print(f"    {r['funcname']:44s} calls {r['calls'] / n:6.1f}  total {r['total_time'] / n:7.2f}"
              f"  self {r['self_time'] / n:7.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    texts, vectors = corpus_mod.queries(args.queries + WARMUP, args.seed, vectors="hash")
    params = [{"text": t, "vec": "[" + ",".join(f"{x:.7f}" for x in v) + "]", "f": NO_FILTER}
              for t, v in zip(texts[-WARMUP:] + texts[:-WARMUP], list(vectors[-WARMUP:]) + list(vectors[:-WARMUP]),
                              strict=True)]
    with psycopg.connect(args.database_url, autocommit=True, row_factory=dict_row) as conn:
        model = conn.execute("select match_function, hybrid_function from embedding_models order by id limit 1").fetchone()
        assert model is not None, "no embedding model in this database"
        vaults = conn.execute("select count(*) as n from vaults").fetchone()
        print(f"{vaults['n'] if vaults else 0} vaults; searches naming none")
        for name, query in searches(model).items():
            print(f"{name}:")
            profile(conn, query, params)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
