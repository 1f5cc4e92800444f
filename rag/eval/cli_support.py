"""`ragpg eval` without the argument parsing: load, run, report, compare, exit code.

The CLI command is a thin wrapper that builds the search function for the chosen profile and
mode and passes it here. Output contract: the report goes to stdout (text, or JSON with
--json); each error is one line on stderr; the return value is the exit code (ragpg's codes, or `EvalExit.DEGRADED`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from rag.errors import RagError
from rag.eval.baseline import (
    DEFAULT_TOLERANCE,
    Comparison,
    check_against,
    check_split,
    load_baseline,
    save_baseline,
    validate_tolerance,
)
from rag.eval.errors import EvalExit
from rag.eval.golden import ALL_SPLITS, load_golden, select_split, validate_split
from rag.eval.metrics import DEFAULT_K
from rag.eval.report import render_text, report_json
from rag.eval.results import EvalReport
from rag.eval.runner import SearchFn, run_eval, validate_k
from rag.eval.unrelated import UnrelatedRun


def evaluate_command(
    golden_path: str | Path,
    *,
    search_fn: SearchFn,
    baseline_path: str | Path | None = None,
    save_baseline_path: str | Path | None = None,
    k: int = DEFAULT_K,
    tolerance: float = DEFAULT_TOLERANCE,
    json_out: bool = False,
    profile: str | None = None,
    mode: str | None = None,
    split: str = ALL_SPLITS,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    preflight: Callable[[], None] | None = None,
    unrelated: tuple[str, SearchFn] | None = None,
) -> int:
    """`split` (dev, test, all) selects the cases that run; the baseline compared with or saved
    covers those cases. `unrelated` (a vault name and a search over the run's vaults and it) runs
    the cases again and reports how the answers differ (`rag.eval.unrelated`). `preflight` runs after the inputs are validated and before the first
    case (e.g. a database check, so an unreachable server is one clear error rather than a
    failure blamed on case 1)."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        validate_k(k)
        validate_tolerance(tolerance)
        validate_split(split)
        golden = load_golden(golden_path)
        select_split(golden, split)  # a file without that split fails here, before any search
        # Read the baseline before the run: a broken one, or one of other cases, should fail in
        # seconds, not after it.
        baseline = load_baseline(baseline_path) if baseline_path is not None else None
        if baseline is not None:
            check_split(baseline, split)
        if preflight is not None:
            preflight()
        report = run_eval(golden, search_fn, k, profile=profile, mode=mode, split=split)
        second = None if unrelated is None else UnrelatedRun(unrelated[0], run_eval(
            golden, unrelated[1], k, profile=profile, mode=mode, split=split))
    except RagError as exc:
        return _fail(exc, err)
    try:
        comparison = check_against(report.summary, baseline, tolerance) if baseline is not None else None
    except RagError as exc:
        _write(out, report, None, json_out)  # the run itself succeeded; show what it measured
        return _fail(exc, err)
    _write(out, report, comparison, json_out, second)
    try:
        if save_baseline_path is not None:
            save_baseline(report.summary, save_baseline_path)
    except RagError as exc:
        return _fail(exc, err)
    return _verdict(comparison, err)


def _write(out: TextIO, report: EvalReport, comparison: Comparison | None, json_out: bool,
           second: UnrelatedRun | None = None) -> None:
    if json_out:
        data = report_json(report, comparison)
        if second is not None:
            data["unrelated_vault"] = second.to_json(report)
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(render_text(report, comparison) + (second.text(report) if second is not None else ""))
    out.flush()


def _verdict(comparison: Comparison | None, err: TextIO) -> int:
    if comparison is None or not comparison.degraded:
        return int(EvalExit.OK)
    worst = ", ".join(f"{d.metric} {d.baseline:.3f} -> {d.current:.3f}" for d in comparison.degradations)
    err.write(f"error: degraded vs baseline {comparison.baseline.path}: {worst}\n")
    return int(EvalExit.DEGRADED)


def _fail(exc: RagError, err: TextIO) -> int:
    err.write(f"error: {' '.join(str(exc).split())}\n")
    return exc.exit_code  # ragpg's codes; "degraded" (9) is none of them
