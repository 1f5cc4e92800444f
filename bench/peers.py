"""Notes search beside the frameworks people would use instead (issue 46), measured in one run.

The Obsidian help vault is indexed by each peer pipeline with ragpg's own embedder (the `local`
all-MiniLM-L6-v2, wrapped as LlamaIndex's `BaseEmbedding` and LangChain's `Embeddings`) and by
ragpg itself (a throwaway embedded data dir, `ragpg db start` / `vault add` / `index`, or an
indexed `--data-dir`); then every golden case of the split runs through each of them and is scored
by `rag.eval.run_eval`, exactly as `ragpg eval` scores (note-level recall@5 and nDCG@10,
unanswerable cases left out of both), overall and per kind. ragpg runs through the library:
`ragpg search` (`rag.notes.ask.search`, what `ragpg eval --mode search` scores) and `ragpg eval`'s
default path (`ask`, no LLM), so a rerun reflects the current code. Every system hands the scorer
the chunks of its first `--k` (the eval's 10) distinct notes: ragpg its notes, a peer its whole
fused list cut there; each peer's legs retrieve `--leg-k` (20) chunks.

Peers (bench/peers_frameworks.py says how each is built and how a folder is applied):
  llamaindex MarkdownNodeParser fused / vector / bm25, llamaindex SentenceSplitter fused,
  langchain ensemble (MarkdownHeaderTextSplitter + RecursiveCharacterTextSplitter, BM25 + vectors).

    pip install --require-hashes -r requirements/peers.lock     # the frameworks, on the dev venv
    python bench/peers.py --golden eval/golden/obsidian-help.yaml --split dev --json OUT
    python bench/peers.py --beir ../shared/data/beir/scifact --json OUT

`--beir DIR` (bench/peers_beir.py): each corpus document one node, nDCG@10 against the qrels,
beside `ragpg eval-beir`'s modes over the same data.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LANGFUSE_TRACING_ENABLED", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling peers_* modules

from peers_common import (  # noqa: E402
    CACHE_DIR,
    local_embedder,
    model_slug,
    ragpg_data_dir,
    ragpg_runtime,
    say,
    table_lines,
)

from rag.eval.golden import GoldenCase, load_golden  # noqa: E402
from rag.eval.metrics import DEFAULT_K, RECALL_FIXED_CUTOFF, ndcg_name, recall_name, summarize  # noqa: E402
from rag.eval.results import CaseResult, EvalHit  # noqa: E402
from rag.eval.runner import SearchFn, run_eval  # noqa: E402
from rag.eval.search import first_notes  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KINDS = ("single", "multi_hop", "folder_scoped")
ALL = "all"
RECALL5, NDCG10 = recall_name(RECALL_FIXED_CUTOFF), ndcg_name()
RAGPG_SEARCH, RAGPG_ASK = "ragpg search", "ragpg eval (ask, no LLM)"
DEFAULT_LEG_K = 20  # chunks each leg of a peer retrieves, as the measurement did
DEFAULT_VAULT_NAME = "help"


# -- the golden run --------------------------------------------------------------------------------

def peer_search_fn(ranker: Any, pool: int) -> SearchFn:
    """A peer as `ragpg eval`'s search seam: the case's folder (at most one) as its filter. Like ragpg's
    ranking (`first_notes`), the scorer gets the chunks of the first `depth` distinct notes of the peer's
    whole fused list (`pool` chunks: both legs), so one note's several chunks do not crowd out the fifth."""
    def search(case: GoldenCase, depth: int) -> EvalHit:
        if len(case.folders) > 1:
            raise ValueError(f"{case.id}: the peers take one folder")
        folder = case.folders[0] if case.folders else None
        ranked = [(path, None) for path in ranker.rank(case.query, folder, pool)]
        return EvalHit.from_pairs(first_notes(ranked, depth))
    return search


def kind_of(case: GoldenCase) -> str | None:
    return next((k for k in KINDS if k in case.tags), None)


def by_kind(results: Sequence[CaseResult], k: int) -> dict[str, dict[str, Any]]:
    """recall@5 and nDCG@10 over all answerable cases and per kind, as `ragpg eval` averages them."""
    groups: dict[str, list[CaseResult]] = {ALL: list(results)}
    for kind in KINDS:
        groups[kind] = [r for r in results if kind_of(r.case) == kind]
    out: dict[str, dict[str, Any]] = {}
    for name, chosen in groups.items():
        summary = summarize(chosen, k)
        out[name] = {m: round(summary.metrics[m], 4) for m in (RECALL5, NDCG10) if m in summary.metrics}
        out[name]["cases"] = summary.counts.get(RECALL5, 0)
    return out


def per_case(results: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    return {r.case.id: {"kind": kind_of(r.case), RECALL5: r.metrics[RECALL5], NDCG10: round(r.metrics[NDCG10], 4),
                        "top5": list(r.sources[:RECALL_FIXED_CUTOFF])}
            for r in results if RECALL5 in r.metrics}


def differences(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Case ids whose recall@5 is higher under `a` than under `b`, and the other way round."""
    return {"first_higher": sorted(c for c in a if c in b and a[c][RECALL5] > b[c][RECALL5]),
            "second_higher": sorted(c for c in a if c in b and a[c][RECALL5] < b[c][RECALL5])}


def score(name: str, golden: Any, search: SearchFn, split: str, k: int) -> dict[str, Any]:
    started = time.perf_counter()
    report = run_eval(golden, search, k, split=split)
    seconds = time.perf_counter() - started
    row = {"by_kind": by_kind(report.results, k), "per_case": per_case(report.results),
           "ms_per_query": round(1000 * seconds / len(report.results), 1)}
    say(f"{name}: recall@5 {row['by_kind'][ALL].get(RECALL5)}, nDCG@10 {row['by_kind'][ALL].get(NDCG10)}")
    return row


def run_golden(args: argparse.Namespace) -> dict[str, Any]:
    from peers_frameworks import CachedEmbedder, vault_pipelines

    golden = load_golden(args.golden)
    rt_embedder = local_embedder()
    embedder = CachedEmbedder(rt_embedder, None if args.no_cache else CACHE_DIR / f"peers-{model_slug(rt_embedder)}.npz")
    started = time.perf_counter()
    rankers = vault_pipelines(args.vault_dir, embedder, args.leg_k, say)
    build_s = time.perf_counter() - started
    systems: dict[str, dict[str, Any]] = {}
    for name, ranker in rankers.items():
        systems[name] = score(name, golden, peer_search_fn(ranker, 2 * args.leg_k), args.split, args.k)
    load = [("vault", "add", args.vault_name, str(args.vault_dir)), ("index", "--quiet", args.vault_name)]
    from rag.eval.search import make_search_fn

    with ragpg_data_dir(args.data_dir, load):
        rt = ragpg_runtime()
        try:
            for name, mode in ((RAGPG_SEARCH, "search"), (RAGPG_ASK, "ask")):
                systems[name] = score(name, golden, make_search_fn(rt, "notes", mode, [args.vault_name]),
                                      args.split, args.k)
        finally:
            rt.close()
    peers = [n for n in rankers]
    best = max(peers, key=lambda n: systems[n]["by_kind"][ALL][RECALL5])
    return {"golden": str(args.golden), "split": args.split, "k": args.k, "leg_k": args.leg_k,
            "peer_build_s": round(build_s, 1), "chunks_embedded_this_run": embedder.embedded,
            "systems": systems, "best_peer": best,
            "best_peer_vs_ragpg_search": differences(systems[best]["per_case"], systems[RAGPG_SEARCH]["per_case"]),
            "best_peer_vs_ragpg_ask": differences(systems[best]["per_case"], systems[RAGPG_ASK]["per_case"])}


def golden_table(result: Mapping[str, Any]) -> str:
    groups = (ALL, *KINDS)
    counts = next(iter(result["systems"].values()))["by_kind"]
    head = ["pipeline", *(f"r@5 {g} ({counts[g]['cases']})" for g in groups),
            *(f"nDCG {g}" for g in groups), "ms/q"]
    rows = [head]
    for name, row in result["systems"].items():
        cells = [f"{row['by_kind'][g].get(m, float('nan')):.3f}" for m in (RECALL5, NDCG10) for g in groups]
        rows.append([name, *cells, f"{row['ms_per_query']:.0f}"])
    lines = [f"{result['golden']} split {result['split']}: note-level recall@5 and nDCG@10 "
             f"(answerable cases; the chunks of the first {result['k']} notes scored per system, peer legs {result['leg_k']})", ""]
    lines += table_lines(rows)
    for other, key in (("ragpg search", "best_peer_vs_ragpg_search"), ("ragpg ask", "best_peer_vs_ragpg_ask")):
        diff = result[key]
        lines += ["", f"recall@5 higher under {result['best_peer']} than {other}: {', '.join(diff['first_higher']) or '-'}",
                  f"recall@5 higher under {other} than {result['best_peer']}: {', '.join(diff['second_higher']) or '-'}"]
    return "\n".join(lines)


# -- the run ---------------------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpus": os.cpu_count(), "cpu_model": cpu, "mem_gb": round(mem_gb, 1), "python": platform.python_version(),
            "platform": platform.platform(), "load_avg_start": [round(x, 2) for x in os.getloadavg()]}


def ragpg_source() -> dict[str, Any]:
    """Which ragpg code ran: the imported package's folder and, in a git checkout, its commit and
    whether the library's files differ from it (a shared checkout may hold others' edits)."""
    import subprocess

    import rag

    root = Path(rag.__file__).resolve().parents[1]
    out: dict[str, Any] = {"rag_package": str(Path(rag.__file__).parent)}
    try:
        git = ["git", "-C", str(root)]
        out["git_head"] = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                                         check=True).stdout.strip()
        changed = subprocess.run([*git, "status", "--porcelain", "--", "rag", "db", "cli"], capture_output=True,
                                 text=True, check=True).stdout.splitlines()
        out["library_files_changed_since_head"] = len(changed)
    except (OSError, subprocess.CalledProcessError):
        out["git_head"] = None
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--golden", type=Path, default=REPO / "eval" / "golden" / "obsidian-help.yaml")
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--vault-dir", type=Path, default=REPO.parent / "shared" / "data" / "obsidian-help")
    parser.add_argument("--vault-name", default=DEFAULT_VAULT_NAME, help="the vault's name in ragpg")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="an existing RAGPG_DATA_DIR with the vault indexed (default: a throwaway one)")
    parser.add_argument("--beir", type=Path, default=None, help="a BEIR dataset folder instead of the vault")
    parser.add_argument("--beir-split", default="test")
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="chunks each system hands the scorer")
    parser.add_argument("--leg-k", type=int, default=DEFAULT_LEG_K, help="chunks each peer leg retrieves")
    parser.add_argument("--no-cache", action="store_true", help=f"embed everything afresh (cache: {CACHE_DIR})")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    for path in (args.vault_dir, args.beir):
        if path is not None and not path.is_dir():
            parser.error(f"not a folder: {path}")
    if not args.golden.is_file():
        parser.error(f"golden file not found: {args.golden}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import langchain_community  # noqa: F401
        import llama_index.core  # noqa: F401
        from peers_frameworks import framework_versions
    except ImportError as exc:
        print(f"peers.py: {exc.name} is not installed: pip install --require-hashes -r requirements/peers.lock",
              file=sys.stderr)
        return 2
    meta = {"command": "python " + " ".join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])]),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
            "versions": framework_versions(), "ragpg": ragpg_source()}
    started = time.perf_counter()
    render: Callable[[Mapping[str, Any]], str]
    if args.beir is not None:
        from peers_beir import beir_table, run_beir_peers

        result, render = run_beir_peers(args, say), beir_table
    else:
        result, render = run_golden(args), golden_table
    meta["wall_s"] = round(time.perf_counter() - started, 1)
    meta["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    result = {"meta": meta, **result}
    print(render(result))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
