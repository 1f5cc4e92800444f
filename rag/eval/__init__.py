"""Evaluation: golden files, retrieval and answer metrics, baselines, reports (`ragpg eval`),
and the BEIR runs (`ragpg eval-beir`).

May import any stage of `rag` (it measures them); never the CLI or the server.
"""

from rag.eval.baseline import (
    DEFAULT_TOLERANCE,
    Baseline,
    Comparison,
    Degradation,
    check_against,
    compare,
    load_baseline,
    save_baseline,
)
from rag.eval.cli_support import evaluate_command
from rag.eval.errors import BaselineError, EvalCaseError, EvalExit, EvalRunError, GoldenError
from rag.eval.golden import (
    ALL_SPLITS,
    SPLITS,
    ChunkRef,
    GoldenCase,
    GoldenSet,
    load_golden,
    select_split,
    validate_split,
)
from rag.eval.metrics import DEFAULT_K, NDCG_CUTOFF, expected_fact_hits, forbidden_claim_hits
from rag.eval.report import render_json, render_text, report_json
from rag.eval.results import CaseResult, EvalHit, EvalReport, EvalSummary, RankedHit
from rag.eval.runner import SearchFn, run_eval

__all__ = [
    "ALL_SPLITS",
    "DEFAULT_K",
    "DEFAULT_TOLERANCE",
    "NDCG_CUTOFF",
    "Baseline",
    "BaselineError",
    "CaseResult",
    "ChunkRef",
    "Comparison",
    "Degradation",
    "EvalCaseError",
    "EvalExit",
    "EvalHit",
    "EvalReport",
    "EvalRunError",
    "EvalSummary",
    "GoldenCase",
    "GoldenError",
    "GoldenSet",
    "RankedHit",
    "SPLITS",
    "SearchFn",
    "check_against",
    "compare",
    "evaluate_command",
    "expected_fact_hits",
    "forbidden_claim_hits",
    "load_baseline",
    "load_golden",
    "render_json",
    "render_text",
    "report_json",
    "run_eval",
    "save_baseline",
    "select_split",
    "validate_split",
]
