"""The runner (depth, error wrapping) and the text and JSON reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.errors import NotFoundError
from rag.eval import EvalCaseError, EvalHit, EvalRunError, load_golden, render_json, render_text, run_eval
from rag.eval.baseline import check_against, load_baseline, save_baseline
from tests.eval.fakes import ScriptedSearch, write

GOLDEN = """\
cases:
  - id: found
    query: where is a
    must_include_source_paths: [a.md]
    acceptable_source_paths: [b.md]
  - id: shallow
    query: where is c
    k: 3
    must_include_source_paths: [c.md]
  - id: nonsense
    query: boil an egg
    expect_abstain: true
"""


def golden(tmp_path: Path):
    return load_golden(write(tmp_path / "g.yaml", GOLDEN))


def search() -> ScriptedSearch:
    return ScriptedSearch({
        "found": EvalHit.from_pairs([("b.md", 0), ("a.md", 2)]),
        "shallow": EvalHit.from_pairs([("x.md", 0)]),
        "nonsense": EvalHit(abstained=True),
    })


def test_run_passes_case_depth_and_scores_every_case(tmp_path: Path) -> None:
    fn = search()
    report = run_eval(golden(tmp_path), fn, 5, profile="notes", mode="base")
    assert fn.calls == [("found", 5), ("shallow", 3), ("nonsense", 5)]  # a case's k overrides the run's
    found, shallow, nonsense = report.results
    assert found.passed and not shallow.passed and nonsense.passed
    assert shallow.missing_sources == ("c.md",)
    assert report.summary.metrics["recall@5"] == 0.5  # (1 + 0) / 2
    assert (report.summary.passed, report.summary.profile, report.summary.mode) == (2, "notes", "base")


def test_input_error_from_search_names_the_case_and_line(tmp_path: Path) -> None:
    fn = ScriptedSearch({"shallow": NotFoundError("vault 'nope' does not exist")})
    with pytest.raises(EvalCaseError) as info:
        run_eval(golden(tmp_path), fn, 10)
    assert str(info.value) == f"{tmp_path / 'g.yaml'}:6: case 'shallow' (#2): vault 'nope' does not exist"


def test_runtime_error_from_search_names_the_case(tmp_path: Path) -> None:
    fn = ScriptedSearch({"found": RuntimeError("connection reset\nby peer")})
    with pytest.raises(EvalRunError, match=r"g.yaml:2: case 'found' \(#1\): search failed: connection reset by peer"):
        run_eval(golden(tmp_path), fn, 10)


def test_search_returning_the_wrong_type_is_a_runtime_error(tmp_path: Path) -> None:
    with pytest.raises(EvalRunError, match="returned list, not EvalHit"):
        run_eval(golden(tmp_path), lambda case, depth: [], 10)  # type: ignore[arg-type, return-value]


def test_text_report_lists_cases_and_summary(tmp_path: Path) -> None:
    report = run_eval(golden(tmp_path), search(), 10)
    text = render_text(report)
    assert "PASS  found (#1, line 2)" in text
    assert "must       a.md  rank 2" in text and "acceptable b.md  rank 1" in text
    assert "FAIL  shallow (#2, line 6)" in text and "missing: c.md (not in the top 10)" in text
    assert "abstention: expected to abstain, abstained" in text
    assert "recall@10" in text and "cases passed: 2/3" in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_reports_with_a_baseline(tmp_path: Path) -> None:
    report = run_eval(golden(tmp_path), search(), 10)
    base_path = save_baseline(report.summary, tmp_path / "b.json")
    raw = json.loads(base_path.read_text())
    raw["metrics"]["recall@10"] = 0.9
    base_path.write_text(json.dumps(raw))
    comparison = check_against(report.summary, load_baseline(base_path))
    text = render_text(report, comparison)
    assert "DEGRADED" in text and "recall@10: 0.900 -> 0.500 (-0.400)" in text
    data = json.loads(render_json(report, comparison))
    assert data["status"] == "degraded"
    assert data["baseline"]["degradations"] == [
        {"metric": "recall@10", "baseline": 0.9, "current": 0.5, "delta": pytest.approx(-0.4)}]
    first = data["cases"][0]
    assert first["id"] == "found" and first["ranks"] == {"a.md": 2, "b.md": 1}
    assert first["expected"]["must_include_source_paths"] == ["a.md"]
    assert data["summary"]["metrics"]["recall@10"] == 0.5
