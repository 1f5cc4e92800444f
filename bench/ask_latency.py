"""`ragpg ask` latency without an LLM, per stage, on the golden set's questions.

Uses an existing ragpg installation (settings from the environment, e.g. RAGPG_DATA_DIR) whose
vault the golden file targets is indexed (`ragpg vault add help ../shared/data/obsidian-help &&
ragpg index help`). Read-only. Every question of the chosen split runs through

    ask(question, folders=case.folders, debug=True)

in process, one at a time after a warm-up, with no LLM configured (the answer is quoted from the
notes). Stages, from the call's own timings: retrieval (the query embedding and the base retrieval
pass), answer (embedding the sentences of the passages drawn on, the abstention signals and the
quoted answer) and the rest (scope: vault and folder lookups, the folder prior; ranking). With
`--compare-sentence-context` every question runs twice, alternately with
`notes.extractive_sentence_context` on and off, to show what embedding each sentence after its note's
title and section costs. `--sentence-cache-size 0` turns off the process's cache of sentence
vectors (`embedding.sentence_cache_size`), so every question pays for every sentence as a one-shot
`ragpg ask` does; with the cache (the default) the figures are those of a long-lived process
(`ragpg serve`) answering the questions one after another.

    RAGPG_DATA_DIR=/tmp/ragpg-local python bench/ask_latency.py --out /tmp/ask.json
    ... --split dev --max-questions 40 --compare-sentence-context --sentence-cache-size 0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rag.config import LLMSettings, load_settings  # noqa: E402
from rag.eval.golden import GoldenCase, load_golden, select_split  # noqa: E402
from rag.notes.ask import ask  # noqa: E402
from rag.runtime import Runtime  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "eval" / "golden" / "obsidian-help.yaml"
WARMUP_QUESTIONS = 3
STAGES = ("total_ms", "retrieval_ms", "answer_ms", "other_ms")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def runtime(sentence_context: bool, sentence_cache_size: int | None) -> Runtime:
    embedding = {} if sentence_cache_size is None else {"embedding": {"sentence_cache_size": sentence_cache_size}}
    settings = load_settings(llm=LLMSettings(model=None), notes={"extractive_sentence_context": sentence_context},
                             **embedding)
    return Runtime.from_settings(settings, pool_max_size=2)


def timed_ask(rt: Runtime, case: GoldenCase, detail: str) -> dict[str, float]:
    started = time.perf_counter()
    response = ask(case.query, folders=list(case.folders), detail=detail, debug=True, runtime=rt)
    total = (time.perf_counter() - started) * 1000
    timings = (response.debug or {}).get("timings_ms", {})
    retrieval = float(timings.get("base_pass_ms", 0.0)) + float(timings.get("fill_similarity_ms", 0.0))
    answer = float(timings.get("answer_ms", 0.0))  # absent when nothing matched
    return {"total_ms": total, "retrieval_ms": retrieval, "answer_ms": answer,
            "other_ms": max(total - retrieval - answer, 0.0), "abstained": float(response.abstained)}


def summarize(rows: Sequence[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(rows), "abstained": int(sum(r["abstained"] for r in rows))}
    for stage in STAGES:
        values = [r[stage] for r in rows]
        out[stage] = {"p50": round(statistics.median(values), 2), "p95": round(percentile(values, 0.95), 2)}
    return out


def run(cases: Sequence[GoldenCase], configs: dict[str, Runtime], detail: str) -> dict[str, dict[str, Any]]:
    for rt in configs.values():
        for case in cases[:WARMUP_QUESTIONS]:
            timed_ask(rt, case, detail)
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    for case in cases:  # the configurations alternate per question, so drift hits both alike
        for name, rt in configs.items():
            rows[name].append(timed_ask(rt, case, detail))
    return {name: summarize(r) for name, r in rows.items()}


def print_table(results: dict[str, dict[str, Any]]) -> None:
    print(f"{'configuration':26s} {'n':>4s} " + " ".join(f"{s.removesuffix('_ms') + ' p50/p95 ms':>22s}" for s in STAGES))
    for name, r in results.items():
        cells = " ".join(f"{r[s]['p50']:>10.1f} / {r[s]['p95']:<9.1f}" for s in STAGES)
        print(f"{name:26s} {r['questions']:>4d} {cells}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--golden", type=Path, default=GOLDEN)
    ap.add_argument("--split", default="all", choices=("dev", "test", "all"))
    ap.add_argument("--max-questions", type=int, default=0, help="0: every question of the split")
    ap.add_argument("--detail", default="normal", choices=("brief", "normal", "detailed"))
    ap.add_argument("--compare-sentence-context", action="store_true",
                    help="also run with notes.extractive_sentence_context off, alternating per question")
    ap.add_argument("--sentence-cache-size", type=int, default=None,
                    help="sentence vectors kept per process (default: the setting; 0: none, as a one-shot ask)")
    ap.add_argument("--out", type=Path, help="write the figures as JSON")
    args = ap.parse_args(argv)
    cases = list(select_split(load_golden(args.golden), args.split).cases)
    if args.max_questions > 0:
        cases = cases[:args.max_questions]
    if not cases:
        print(f"no questions in split {args.split!r} of {args.golden}", file=sys.stderr)
        return 2
    configs = {"sentence context on": runtime(True, args.sentence_cache_size)}
    if args.compare_sentence_context:
        configs["sentence context off"] = runtime(False, args.sentence_cache_size)
    results = run(cases, configs, args.detail)
    print_table(results)
    if args.out:
        report = {"command": " ".join(["python", "bench/ask_latency.py", *(argv or sys.argv[1:])]),
                  "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": platform.machine(),
                  "cpus": os.cpu_count(), "load_average": os.getloadavg(), "split": args.split,
                  "detail": args.detail,
                  "sentence_cache_size": next(iter(configs.values())).embedder.sentence_cache_size,
                  "results": results}
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
