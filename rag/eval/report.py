"""Human and JSON forms of an evaluation report.

The text form lists every case (what was expected, where it ranked, what is missing, the
abstention outcome, expected facts found or missing, forbidden claims stated) and then a
summary table over the selected cases, plus one column per split when the cases carry splits;
no colour, so it reads the same in a terminal, a CI log or a file.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from rag.eval.baseline import Comparison
from rag.eval.golden import ALL_SPLITS
from rag.eval.metrics import ANSWERED_WHEN_ANSWERABLE, must_include_paths
from rag.eval.results import CaseResult, EvalReport, EvalSummary

RENDER_WIDTH = 110
VALUE_FORMAT = "{:.3f}"
PASS, FAIL = "PASS", "FAIL"
NOT_FOUND = "-"
STATUS_OK, STATUS_DEGRADED = "ok", "degraded"


def _fmt(value: float) -> str:
    return VALUE_FORMAT.format(value)


def _rank(rank: int | None, k: int) -> str:
    if rank is None:
        return "not found"
    return f"rank {rank}" if rank <= k else f"rank {rank} (beyond k={k})"


def case_lines(result: CaseResult) -> list[str]:
    case = result.case
    where = f"#{case.index}" + (f", line {case.line}" if case.line is not None else "")
    scores = "  ".join(f"{name} {_fmt(value)}" for name, value in sorted(result.metrics.items()))
    lines = [f"{PASS if result.passed else FAIL}  {case.id} ({where})  {scores}", f"      query: {case.query}"]
    must = set(must_include_paths(case))
    for path, rank in result.expected_ranks.items():
        kind = "must" if path in must else "acceptable"
        lines.append(f"      {kind:<10} {path}  {_rank(rank, result.k)}")
    lines += [f"      missing: {path} (not in the top {result.k})" for path in result.missing_sources]
    lines += [f"      missing chunk: {ref}" for ref in result.missing_chunk_refs]
    if case.expect_abstain or not result.abstention_correct:
        expected = "abstain" if case.expect_abstain else "answer"
        got = "abstained" if result.abstained else "answered"
        lines.append(f"      abstention: expected to {expected}, {got}")
    if result.expected_fact_hits:
        lines.append(f"      expected fact stated: \"{result.expected_fact_hits[0]}\"")
    elif result.fact_missing:
        facts = ", ".join(f'"{fact}"' for fact in case.expected_facts)
        lines.append(f"      expected fact missing: none of {facts}")
    lines += [f"      forbidden claim stated: \"{claim}\"" for claim in result.forbidden_claim_hits]
    return lines


def summary_table(report: EvalReport, comparison: Comparison | None) -> Table:
    summary = report.summary
    table = Table(title="Summary", title_justify="left", box=None, pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("cases", justify="right")
    if comparison is not None:
        table.add_column("baseline", justify="right")
        table.add_column("delta", justify="right")
        table.add_column("")
    degraded = {d.metric for d in comparison.degradations} if comparison else set()
    for name in summary.metric_set:
        row = [name, _fmt(summary.metrics[name]), str(summary.counts[name])]
        if comparison is not None:
            before = comparison.baseline.metrics[name]
            row += [_fmt(before), f"{summary.metrics[name] - before:+.3f}", "DEGRADED" if name in degraded else ""]
        table.add_row(*row)
    return table


def split_table(report: EvalReport) -> Table | None:
    """Each metric over all selected cases and per split, so dev and test read side by side."""
    if not report.splits or report.summary.split != ALL_SPLITS:
        return None  # one split selected: the summary table already is that split
    columns = {ALL_SPLITS: report.summary, **report.splits}
    table = Table(title="By split (value, cases)", title_justify="left", box=None, pad_edge=False)
    table.add_column("metric")
    for name in columns:
        table.add_column(name, justify="right")
    for metric in report.summary.metric_set:
        table.add_row(metric, *(_value_and_count(summary, metric) for summary in columns.values()))
    return table


def _value_and_count(summary: EvalSummary, metric: str) -> str:
    if metric not in summary.metrics:
        return NOT_FOUND  # no case of this split defines what the metric needs
    return f"{_fmt(summary.metrics[metric])} ({summary.counts[metric]})"


def _wrongly_abstained(report: EvalReport) -> str | None:
    # The target is phrased as "wrongly abstained"; the metric stays higher-is-better.
    summaries = {report.summary.split: report.summary, **report.splits}
    parts = [f"{name} {_fmt(1 - s.metrics[ANSWERED_WHEN_ANSWERABLE])}"
             for name, s in summaries.items() if ANSWERED_WHEN_ANSWERABLE in s.metrics]
    return f"wrongly abstained (1 - {ANSWERED_WHEN_ANSWERABLE}): {', '.join(parts)}" if parts else None


def _header(report: EvalReport) -> str:
    s = report.summary
    labelled = (("profile", s.profile), ("mode", s.mode), ("split", None if s.split == ALL_SPLITS else s.split))
    settings = ", ".join(f"{label} {value}" for label, value in labelled if value)
    return f"ragpg eval: {report.golden_path}: {s.cases} cases, k={s.k}" + (f", {settings}" if settings else "")


def _footer(report: EvalReport, comparison: Comparison | None) -> list[str]:
    s = report.summary
    lines = [f"cases passed: {s.passed}/{s.cases}", f"forbidden claims stated: {s.forbidden_claim_hits}"]
    wrongly = _wrongly_abstained(report)
    if wrongly:
        lines.append(wrongly)
    if comparison is None:
        return lines
    lines += [f"note: {note}" for note in comparison.notes]
    verdict = "DEGRADED" if comparison.degraded else "no degradation"
    lines.append(f"vs baseline {comparison.baseline.path} (tolerance {comparison.tolerance}): {verdict}")
    lines += [
        f"  {d.metric}: {_fmt(d.baseline)} -> {_fmt(d.current)} ({d.delta:+.3f})" for d in comparison.degradations
    ]
    return lines


def render_text(report: EvalReport, comparison: Comparison | None = None) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=RENDER_WIDTH, color_system=None, highlight=False, soft_wrap=True)
    console.print(_header(report), markup=False)
    console.print()
    for result in report.results:
        console.print("\n".join(case_lines(result)), markup=False)
    console.print("")
    console.print(summary_table(report, comparison))
    by_split = split_table(report)
    if by_split is not None:
        console.print("")
        console.print(by_split)
    console.print("\n".join(_footer(report, comparison)), markup=False)
    # Rich pads table cells to the column width; trailing blanks only add noise to diffs and logs.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _case_json(result: CaseResult) -> dict[str, Any]:
    case = result.case
    return {
        "id": case.id,
        "index": case.index,
        "line": case.line,
        "query": case.query,
        "split": case.split,
        "tags": list(case.tags),
        "passed": result.passed,
        "expected": {
            "must_include_source_paths": list(must_include_paths(case)),
            "acceptable_source_paths": list(case.acceptable_source_paths),
            "must_include_chunk_refs": [str(ref) for ref in case.must_include_chunk_refs],
            "expected_facts": list(case.expected_facts),
            "expect_abstain": case.expect_abstain,
        },
        "ranks": dict(result.expected_ranks),
        "missing_source_paths": list(result.missing_sources),
        "missing_chunk_refs": list(result.missing_chunk_refs),
        "retrieved_source_paths": list(result.sources[: result.depth]),
        "metrics": dict(result.metrics),
        "abstained": result.abstained,
        "abstention_correct": result.abstention_correct,
        "forbidden_claim_hits": list(result.forbidden_claim_hits),
        "expected_fact_hits": list(result.expected_fact_hits),
        "answer": result.answer,
    }


def _comparison_json(comparison: Comparison | None) -> Mapping[str, Any] | None:
    if comparison is None:
        return None
    return {
        "path": str(comparison.baseline.path),
        "split": comparison.baseline.split,
        "tolerance": comparison.tolerance,
        "notes": list(comparison.notes),
        "degradations": [
            {"metric": d.metric, "baseline": d.baseline, "current": d.current, "delta": d.delta}
            for d in comparison.degradations
        ],
    }


def _summary_json(s: EvalSummary) -> dict[str, Any]:
    return {
        "metrics": dict(s.metrics),
        "counts": dict(s.counts),
        "k": s.k,
        "profile": s.profile,
        "mode": s.mode,
        "split": s.split,
        "cases": s.cases,
        "passed": s.passed,
        "forbidden_claim_hits": s.forbidden_claim_hits,
    }


def report_json(report: EvalReport, comparison: Comparison | None = None) -> dict[str, Any]:
    return {
        "golden": str(report.golden_path),
        "status": STATUS_DEGRADED if comparison is not None and comparison.degraded else STATUS_OK,
        "summary": _summary_json(report.summary),
        "splits": {name: _summary_json(summary) for name, summary in report.splits.items()},
        "baseline": _comparison_json(comparison),
        "cases": [_case_json(result) for result in report.results],
    }


def render_json(report: EvalReport, comparison: Comparison | None = None) -> str:
    return json.dumps(report_json(report, comparison), indent=2, ensure_ascii=False) + "\n"
