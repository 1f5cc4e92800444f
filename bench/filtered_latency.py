"""Filtered vector search latency on a database that bench/scale.py built (its six metadata filters).

    DATABASE_URL=postgresql://.../ragpg_scale_xxxx python bench/filtered_latency.py [--label after]

Thirty chunk vectors of the corpus as queries (every 9973rd chunk, in id order), each filter of
bench/scale_corpus.FILTERS through `match_native_chunks_<model>` (top 10), one pass to warm up and
one measured; prints p50/p95 ms per filter as one JSON line, and with --ids the returned chunk ids
and similarities, so runs of two revisions of db/sql can be compared row for row. To compare
revisions on one database: `git checkout <rev> -- db/sql`, `RAGPG_DATABASE_URL=... ragpg db
upgrade` (re-applies the SQL files), run, and back again; alternate the two a few times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_corpus as corpus_mod  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="run")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--ids", action="store_true", help="also print the rows each search returned")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL")
    if not url:
        parser.error("set DATABASE_URL to a database bench/scale.py built")
    with psycopg.connect(url, autocommit=True) as conn:
        model = conn.execute("select match_function, embedding_table from embedding_models").fetchone()
        assert model is not None, "no embedding model in this database"
        fn, table = sql.Identifier(model[0]), sql.Identifier(model[1])
        vectors = [r[0] for r in conn.execute(
            sql.SQL("select embedding::text from {} where chunk_id %% 9973 = 3 order by chunk_id limit %s").format(table),
            (args.queries,)).fetchall()]
        search = sql.SQL("select chunk_id, similarity from {}(%s::vector, -1, 10, %s)").format(fn)
        latency: dict[str, list[float]] = {}
        rows: dict[str, list[list[tuple[int, float]]]] = {}
        for name, filter_ in corpus_mod.FILTERS.items():
            for measured in (False, True):
                for vector in vectors:
                    started = time.perf_counter()
                    found = conn.execute(search, (vector, Jsonb(filter_))).fetchall()
                    elapsed_ms = (time.perf_counter() - started) * 1000
                    if measured:
                        latency.setdefault(name, []).append(elapsed_ms)
                        rows.setdefault(name, []).append([(r[0], round(r[1], 12)) for r in found])
    report: dict[str, object] = {"label": args.label, "queries": len(vectors), "p50_p95_ms": {
        name: [round(statistics.median(v), 1), round(sorted(v)[int(0.95 * len(v))], 1)] for name, v in latency.items()}}
    if args.ids:
        report["rows"] = rows
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
