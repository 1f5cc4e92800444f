"""compute_context quality and latency on BEIR vaults: mode `base` vs `auto` (no LLM) per profile.

Uses an existing ragpg installation (settings from the environment, e.g. RAGPG_DATA_DIR) in which
each dataset is a loaded and indexed BEIR vault named like its folder (`ragpg vault add-beir
scifact ../shared/data/beir/scifact && ragpg index scifact`). Read-only: nothing is written to the
database. Every judged query of the test split runs through

    compute_context(query, vaults=[dataset], profile=P, mode=M)   for M in (base, auto)

with no LLM configured, so `auto` corrects a weak base pass by pseudo-relevance feedback and the
decision rule (rag.retrieval.autorag.score_decision) picks the winner. The document ranking is each corpus
id (= source_path) at its first ranked chunk, as `ragpg eval-beir` does; nDCG@10 comes from
ir_measures. Latency is the wall time of the whole call (query embedding, passes, ranking,
context assembly, evidence packs), with the p50 of its steps from ContextResult.timings_ms
(embed = the query embedding, base pass = embedding + base retrieval pass, assembly = ranking,
context and evidence packs); the query-embedding cache is off so every call pays for its
embedding, and there is no LLM call to exclude. One query at a time after a warm-up. The target
is on the base pass: p50 of the query embedding plus the base retrieval pass ≤ 15 ms;
the whole call's p50 is printed beside it.

    RAGPG_DATA_DIR=/tmp/ragpg-beir python bench/compute_context.py --out /tmp/compute_context.json
    ... --datasets scifact --profiles chat --max-queries 100      # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rag.compute import compute_context  # noqa: E402
from rag.config import LLMSettings, load_settings  # noqa: E402
from rag.eval.beir import check_vault, document_ranking, load_beir_queries, score_run  # noqa: E402
from rag.runtime import Runtime  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "beir"
DATASETS = ("scifact", "nfcorpus")
PROFILES = ("chat", "default_research", "notes")
MODES = ("base", "auto")
NDCG = "ndcg@10"  # the key rag.eval.beir.score_run reports nDCG@10 under
DEPTH = 10  # nDCG@10 needs the first ten documents
WARMUP_QUERIES = 5
BASE_P50_TARGET_MS = 15.0
PERCENTILES = {"p50": 0.50, "p95": 0.95}


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def runtime() -> Runtime:
    base = load_settings()
    # No LLM (auto = PRF), and no query-embedding cache: each call embeds its query, as a fresh one would.
    settings = base.model_copy(update={
        "llm": LLMSettings(),
        "embedding": base.embedding.model_copy(update={"query_cache_size": 0}),
    })
    return Runtime.from_settings(settings, pool_max_size=1)


def run_one(rt: Runtime, dataset: str, queries: dict[str, str], qrels: Any, profile: str,
            mode: str) -> dict[str, Any]:
    for text in list(queries.values())[:WARMUP_QUERIES]:
        compute_context(text, vaults=[dataset], profile=profile, mode=mode, runtime=rt)
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    stages: dict[str, list[float]] = {}
    routes: Counter[str] = Counter()
    winners: Counter[str] = Counter()
    for qid, text in queries.items():
        started = time.perf_counter()
        result = compute_context(text, vaults=[dataset], profile=profile, mode=mode, runtime=rt)
        latencies.append((time.perf_counter() - started) * 1000)
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
        rankings[qid] = document_ranking((r.candidate.source_path for r in result.ranked), qid, DEPTH)
        routes[result.decision.route] += 1
        winners[result.decision.winner] += 1
    metrics = score_run(qrels, rankings, DEPTH)
    return {
        "dataset": dataset, "profile": profile, "mode": mode, "queries": len(queries),
        "ndcg@10": metrics[NDCG],
        "latency_ms": {name: percentile(latencies, q) for name, q in PERCENTILES.items()}
        | {"mean": statistics.fmean(latencies)},
        "stages_ms_p50": {stage: percentile(times, 0.5) for stage, times in stages.items()},
        "routes": dict(routes), "winners": dict(winners),
    }


def embed_latency(rt: Runtime, queries: Sequence[str]) -> dict[str, float]:
    times = []
    for text in queries:
        started = time.perf_counter()
        rt.embedder.embed_query(text)
        times.append((time.perf_counter() - started) * 1000)
    return {name: percentile(times, q) for name, q in PERCENTILES.items()}


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = (f"{'dataset':<9} {'profile':<17} {'mode':<5} {'queries':>7} {'nDCG@10':>8} {'Δ vs base':>9} "
            f"{'p50 ms':>7} {'p95 ms':>7} {'embed':>6} {'base pass':>9} {'assembly':>8}  "
            "auto corrections (route → winner)")
    lines = [head, "-" * len(head)]
    base = {(r["dataset"], r["profile"]): r["ndcg@10"] for r in rows if r["mode"] == "base"}
    for r in rows:
        st = r["stages_ms_p50"]
        delta = r["ndcg@10"] - base.get((r["dataset"], r["profile"]), r["ndcg@10"])
        routes = ", ".join(f"{k}:{v}" for k, v in sorted(r["routes"].items())) if r["mode"] == "auto" else ""
        wins = ", ".join(f"{k}:{v}" for k, v in sorted(r["winners"].items())) if r["mode"] == "auto" else ""
        lines.append(f"{r['dataset']:<9} {r['profile']:<17} {r['mode']:<5} {r['queries']:>7} {r['ndcg@10']:>8.4f} "
                     f"{delta:>+9.4f} {r['latency_ms']['p50']:>7.1f} {r['latency_ms']['p95']:>7.1f} "
                     f"{st.get('embed_ms', float('nan')):>6.1f} {st.get('base_pass_ms', float('nan')):>9.1f} "
                     f"{st.get('assembly_ms', float('nan')):>8.1f}  "
                     f"{routes}{' → ' + wins if wins else ''}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES))
    parser.add_argument("--data-dir", type=Path, default=DATA, help="folder holding the BEIR dataset folders")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-queries", type=int, default=0, help="first N judged queries (0 = all)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file for every figure")
    args = parser.parse_args(argv)

    rt = runtime()
    rows: list[dict[str, Any]] = []
    checks: list[str] = []
    embed: dict[str, Any] = {}
    try:
        for dataset in args.datasets:
            data = load_beir_queries(args.data_dir / dataset, args.split)
            _, notes = check_vault(rt, dataset, data)
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            queries = dict(list(data.queries.items())[: args.max_queries or None])
            qrels = {qid: data.qrels[qid] for qid in queries}
            embed[dataset] = embed_latency(rt, list(queries.values()))
            for profile in args.profiles:
                for mode in MODES:
                    print(f"{dataset} {profile} {mode}: {len(queries)} queries ...", file=sys.stderr, flush=True)
                    rows.append(run_one(rt, dataset, queries, qrels, profile, mode))
            for profile in args.profiles:
                pair = {r["mode"]: r for r in rows if r["dataset"] == dataset and r["profile"] == profile}
                if pair["auto"]["ndcg@10"] < pair["base"]["ndcg@10"]:
                    checks.append(f"{dataset}/{profile}: auto nDCG@10 {pair['auto']['ndcg@10']:.4f} is below "
                                  f"base {pair['base']['ndcg@10']:.4f}")
                base_pass = pair["base"]["stages_ms_p50"].get("base_pass_ms", float("nan"))
                if not base_pass <= BASE_P50_TARGET_MS:
                    checks.append(f"{dataset}/{profile}: base pass p50 {base_pass:.1f} ms (whole base-mode call "
                                  f"{pair['base']['latency_ms']['p50']:.1f} ms) is over the "
                                  f"{BASE_P50_TARGET_MS:.0f} ms target")
    finally:
        rt.close()
    print(table(rows))
    print("query embedding alone (ms): " + ", ".join(
        f"{d} p50 {v['p50']:.1f} p95 {v['p95']:.1f}" for d, v in embed.items()))
    print("targets: " + ("all met" if not checks else "; ".join(checks)))
    payload = {"embedding_model": rt.settings.embedding.model, "split": args.split, "rows": rows,
               "embed_latency_ms": embed, "base_p50_target_ms": BASE_P50_TARGET_MS, "target_misses": checks,
               "load_average": os.getloadavg()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
