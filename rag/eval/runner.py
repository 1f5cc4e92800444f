"""Runs every golden case through an injected search function and scores it.

The search function is the seam to the real system: plain retrieval, `compute_context` or
`ask`, wired by the CLI. It receives the case (query, vaults, folders, filters) and the depth
to retrieve, and returns an `EvalHit`. An `InputError` it raises (unknown vault, bad filter)
is the golden file's fault and is re-raised naming the case; anything else is a runtime
failure, also naming the case.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rag.errors import InputError, RagError
from rag.eval.errors import EvalCaseError, EvalRunError
from rag.eval.golden import ALL_SPLITS, GoldenCase, GoldenSet, select_split
from rag.eval.metrics import DEFAULT_K, score_case, summarize, summarize_splits
from rag.eval.results import CaseResult, EvalHit, EvalReport

SearchFn = Callable[[GoldenCase, int], EvalHit]

log = logging.getLogger(__name__)


def validate_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    return k


def run_eval(
    golden: GoldenSet,
    search_fn: SearchFn,
    k: int = DEFAULT_K,
    *,
    profile: str | None = None,
    mode: str | None = None,
    split: str = ALL_SPLITS,
) -> EvalReport:
    """Runs the cases of `split` (dev, test or all); the report summarises them together and,
    when the cases carry splits, each split on its own."""
    validate_k(k)
    selected = select_split(golden, split)
    results = tuple(_run_case(selected, case, search_fn, k) for case in selected.cases)
    summary = summarize(results, k, profile=profile, mode=mode, split=split)
    splits = summarize_splits(results, k, profile=profile, mode=mode)
    return EvalReport(golden_path=golden.path, results=results, summary=summary, splits=splits)


def _run_case(golden: GoldenSet, case: GoldenCase, search_fn: SearchFn, k: int) -> CaseResult:
    depth = case.k if case.k is not None else k
    hit = _search(golden, case, search_fn, depth)
    return score_case(case, hit, k, depth)


def _search(golden: GoldenSet, case: GoldenCase, search_fn: SearchFn, depth: int) -> EvalHit:
    where = golden.where(case)
    try:
        hit = search_fn(case, depth)
    except InputError as exc:
        raise EvalCaseError(f"{where}: {_one_line(exc)}", exit_code=exc.exit_code) from exc
    except Exception as exc:
        log.debug("search failed for %s", where, exc_info=True)
        code = exc.exit_code if isinstance(exc, RagError) else RagError.exit_code
        raise EvalRunError(f"{where}: search failed: {_one_line(exc) or type(exc).__name__}", exit_code=code) from exc
    if not isinstance(hit, EvalHit):
        raise EvalRunError(f"{where}: the search function returned {type(hit).__name__}, not EvalHit")
    return hit


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
