"""ragpg scored through its LangChain retriever beside ragpg called directly (issue 50), one run.

The Obsidian help vault is indexed by ragpg (a throwaway embedded data dir, or an indexed
`--data-dir`); every golden case of the split runs three ways and is scored by `rag.eval.run_eval`,
exactly as `ragpg eval` scores (note-level recall@5 and nDCG@10):

  ragpg eval (context)    `ragpg eval --profile chat --mode auto`: compute_context's ranked list;
  ragpg context (used)    compute_context called directly, the chunks in the budgeted context by
                          rank (what the retriever returns: docs/integrations.md);
  langchain retriever     `RagpgRetriever(...).invoke(query)`, the same call through LangChain.

The last two must agree case for case (the script exits 1 otherwise); the first shows what the
budget costs against the whole ranked list. Every system hands the scorer `--k` (10) chunks, under
the eval's context budget.

    python bench/langchain_retriever.py --split dev --json OUT
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LANGFUSE_TRACING_ENABLED", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling peers_common module

from peers_common import ragpg_data_dir, ragpg_runtime, say, table_lines  # noqa: E402

from rag.eval.golden import GoldenCase, load_golden  # noqa: E402
from rag.eval.metrics import DEFAULT_K, RECALL_FIXED_CUTOFF, ndcg_name, recall_name  # noqa: E402
from rag.eval.results import EvalHit  # noqa: E402
from rag.eval.runner import SearchFn, run_eval  # noqa: E402
from rag.eval.search import CONTEXT_BUDGET_TOKENS, _with_folders, make_search_fn  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RECALL5, NDCG10 = recall_name(RECALL_FIXED_CUTOFF), ndcg_name()
PROFILE, MODE = "chat", "auto"
EVAL, DIRECT, THROUGH = "ragpg eval (context)", "ragpg context (used)", "langchain retriever"


def direct_fn(rt: Any, vaults: list[str]) -> SearchFn:
    from rag.compute import compute_context

    def search(case: GoldenCase, depth: int) -> EvalHit:
        result = compute_context(case.query, vaults=list(case.vaults) or vaults, profile=PROFILE, mode=MODE,
                                 filters=_with_folders(case.filters, case.folders),
                                 budget_tokens=CONTEXT_BUDGET_TOKENS, runtime=rt)
        used = sorted(result.used, key=lambda r: r.rank)[:depth]
        return EvalHit.from_pairs(((r.candidate.source_path, r.candidate.ordinal) for r in used),
                                  abstained=result.insufficient)

    return search


def langchain_fn(rt: Any, vaults: list[str]) -> SearchFn:
    from rag.integrations.langchain import RagpgRetriever

    retriever = RagpgRetriever(runtime=rt, profile=PROFILE, mode=MODE, budget_tokens=CONTEXT_BUDGET_TOKENS)

    def search(case: GoldenCase, depth: int) -> EvalHit:
        docs = retriever.invoke(case.query, k=depth, vaults=list(case.vaults) or vaults,
                                filters=_with_folders(case.filters, case.folders))
        found = retriever.last_retrieved
        return EvalHit.from_pairs(((d.metadata["source_path"], d.metadata["ordinal"]) for d in docs),
                                  abstained=found.payload.insufficient if found else None)

    return search


def score(name: str, golden: Any, search: SearchFn, split: str, k: int) -> dict[str, Any]:
    started = time.perf_counter()
    report = run_eval(golden, search, k, split=split)
    seconds = time.perf_counter() - started
    per_case = {r.case.id: list(r.chunk_refs) for r in report.results}
    row = {"summary": {m: round(v, 4) for m, v in report.summary.metrics.items() if m in (RECALL5, NDCG10)},
           "ms_per_query": round(1000 * seconds / len(report.results), 1), "per_case": per_case}
    say(f"{name}: {row['summary']}")
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    golden = load_golden(args.golden)
    load = [("vault", "add", args.vault_name, str(args.vault_dir)), ("index", "--quiet", args.vault_name)]
    with ragpg_data_dir(args.data_dir, load):
        rt = ragpg_runtime()
        try:
            vaults = [args.vault_name]
            systems = {EVAL: score(EVAL, golden, make_search_fn(rt, PROFILE, MODE, vaults), args.split, args.k),
                       DIRECT: score(DIRECT, golden, direct_fn(rt, vaults), args.split, args.k),
                       THROUGH: score(THROUGH, golden, langchain_fn(rt, vaults), args.split, args.k)}
        finally:
            rt.close()
    differ = sorted(c for c, hits in systems[DIRECT]["per_case"].items() if systems[THROUGH]["per_case"].get(c) != hits)
    return {"golden": str(args.golden), "split": args.split, "k": args.k, "systems": systems,
            "cases_differing_direct_vs_langchain": differ}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--golden", type=Path, default=REPO / "eval" / "golden" / "obsidian-help.yaml")
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--vault-dir", type=Path, default=REPO.parent / "shared" / "data" / "obsidian-help")
    parser.add_argument("--vault-name", default="help")
    parser.add_argument("--data-dir", type=Path, default=None, help="an indexed data dir (else a throwaway one)")
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="chunks each system hands the scorer")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = run(args)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    rows = [["system", RECALL5, NDCG10, "ms/query"]] + [
        [name, str(s["summary"].get(RECALL5)), str(s["summary"].get(NDCG10)), str(s["ms_per_query"])]
        for name, s in result["systems"].items()]
    print("\n".join(table_lines(rows)))
    print(f"cases where the LangChain retriever differs from the direct call: {len(result['cases_differing_direct_vs_langchain'])}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 1 if result["cases_differing_direct_vs_langchain"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
