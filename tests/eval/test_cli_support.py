"""`evaluate_command`: every exit code, stdout/stderr contract, with real search callables."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from rag.errors import DatabaseError
from rag.eval import EvalExit, EvalHit, evaluate_command
from rag.eval.cli_support import SearchFn
from tests.eval.fakes import ScriptedSearch, VaultSearch, write
from tests.support.cli import one_error_line

VAULTS = {
    "help": {
        "Sync/Setup.md": "connect your phone and laptop so notes stay the same",
        "Sync/Plans.md": "storage space and prices of the paid plans",
        "Plugins/Search.md": "find pages containing words with operators",
    },
}
GOLDEN = """\
cases:
  - id: phone-laptop
    query: keep my phone and laptop the same
    vault: help
    must_include_source_paths: [Sync/Setup.md]
  - id: find-words
    folder: Plugins
    query: find pages with words
    must_include_source_paths: [Plugins/Search.md]
  - id: eggs
    query: boil eggs
    expect_abstain: true
"""


def run(tmp_path: Path, search_fn: SearchFn, golden: str = GOLDEN, **options: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    path = write(tmp_path / "g.yaml", golden)
    code = evaluate_command(path, search_fn=search_fn, stdout=out, stderr=err, **options)
    return code, out.getvalue(), err.getvalue()


def test_exit_0_prints_the_report(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, VaultSearch(VAULTS))
    assert code == EvalExit.OK == 0 and err == ""
    assert "PASS  phone-laptop" in out and "PASS  find-words" in out and "PASS  eggs" in out
    assert "cases passed: 3/3" in out


def test_exit_0_json(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, VaultSearch(VAULTS), json_out=True, profile="notes", mode="base")
    data = json.loads(out)
    assert code == 0 and err == "" and data["status"] == "ok"
    assert data["summary"]["metrics"]["recall@10"] == 1.0 and data["summary"]["profile"] == "notes"


def test_save_then_compare_to_own_baseline_is_ok(tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    assert run(tmp_path, VaultSearch(VAULTS), save_baseline_path=baseline, k=5)[0] == 0
    assert json.loads(baseline.read_text())["k"] == 5
    code, out, err = run(tmp_path, VaultSearch(VAULTS), baseline_path=baseline, k=5)
    assert (code, err) == (0, "") and "no degradation" in out


def test_exit_9_when_degraded_vs_baseline(tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    run(tmp_path, VaultSearch(VAULTS), save_baseline_path=baseline)
    worse = ScriptedSearch({"phone-laptop": EvalHit.from_pairs([("Sync/Plans.md", 0)])}, default=EvalHit())
    code, out, err = run(tmp_path, worse, baseline_path=baseline)
    assert code == EvalExit.DEGRADED == 9  # its own code: 3 is "database unreachable", as everywhere
    assert "DEGRADED" in out
    one_error_line(err, "degraded vs baseline", str(baseline), "recall@10 1.000 -> 0.000")


def test_tolerance_can_accept_a_drop(tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    run(tmp_path, VaultSearch(VAULTS), save_baseline_path=baseline)
    # find-words now fails: recall 1 -> 0.5, mrr 1 -> 0.5, ndcg 1 -> 0.5; a 0.6 tolerance accepts that.
    worse = ScriptedSearch({"phone-laptop": EvalHit.from_pairs([("Sync/Setup.md", 0)])}, default=EvalHit())
    assert run(tmp_path, worse, baseline_path=baseline, tolerance=0.6)[0] == 0
    assert run(tmp_path, worse, baseline_path=baseline)[0] == 9


@pytest.mark.parametrize(
    ("golden", "fragments"),
    [
        (GOLDEN.replace("    folder: Plugins\n", "    k: many\n"), ["g.yaml:7: case 'find-words' (#2)", "'k' must be"]),
        (GOLDEN.replace("    query: boil eggs\n", ""), ["g.yaml:10: case 'eggs' (#3)", "missing required key 'query'"]),
        (GOLDEN.replace("id: eggs", "id: phone-laptop"), ["g.yaml:10: case 'phone-laptop' (#3)", "duplicate id"]),
        (GOLDEN.replace("    vault: help\n", "    vault: help\n    vualt: x\n"), ["g.yaml:5:", "unknown key 'vualt'"]),
    ],
)
def test_exit_2_for_malformed_golden(tmp_path: Path, golden: str, fragments: list[str]) -> None:
    search = ScriptedSearch()
    code, out, err = run(tmp_path, search, golden)
    assert code == EvalExit.MALFORMED_INPUT == 2 and out == ""
    assert search.calls == []  # nothing ran against a half-valid file
    one_error_line(err, *fragments)


def test_exit_4_for_unknown_vault_names_the_case(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, VaultSearch(VAULTS), GOLDEN.replace("vault: help", "vault: halp"))
    assert code == 4 and out == ""  # not found, as in every other command
    one_error_line(err, "g.yaml:2: case 'phone-laptop' (#1)", "vault 'halp' does not exist")


def test_exit_2_for_baseline_with_a_different_metric_set(tmp_path: Path) -> None:
    baseline = tmp_path / "b.json"
    run(tmp_path, VaultSearch(VAULTS), save_baseline_path=baseline, k=5)
    code, out, err = run(tmp_path, VaultSearch(VAULTS), baseline_path=baseline, k=10)
    assert code == 2
    assert "cases passed: 3/3" in out  # the run succeeded; its report is still shown
    one_error_line(err, str(baseline), "different metric set", "k=5, this run k=10")


def test_exit_2_for_malformed_baseline_before_running(tmp_path: Path) -> None:
    baseline = write(tmp_path / "b.json", '{"metric_set": [')
    search = ScriptedSearch()
    code, out, err = run(tmp_path, search, baseline_path=baseline)
    assert code == 2 and out == "" and search.calls == []
    one_error_line(err, str(baseline), "invalid JSON")


@pytest.mark.parametrize(("options", "fragment"), [({"k": 0}, "k must be a positive integer"),
                                                     ({"tolerance": -1.0}, "tolerance must be a number >= 0")])
def test_exit_2_for_bad_options(tmp_path: Path, options: dict[str, Any], fragment: str) -> None:
    code, _, err = run(tmp_path, ScriptedSearch(), **options)
    assert code == 2
    one_error_line(err, fragment)


def test_exit_2_for_missing_golden_file(tmp_path: Path) -> None:
    err = io.StringIO()
    code = evaluate_command(tmp_path / "absent.yaml", search_fn=ScriptedSearch(), stdout=io.StringIO(), stderr=err)
    assert code == 2
    one_error_line(err.getvalue(), "absent.yaml not found")


@pytest.mark.parametrize(("failure", "expected"), [(RuntimeError("socket closed"), 1),
                                                   (DatabaseError("database is unreachable"), 3)])
def test_runtime_failures_keep_their_exit_codes(tmp_path: Path, failure: Exception, expected: int) -> None:
    # ragpg's codes hold in eval too: an unexpected failure is 1, an unreachable database 3 (not "degraded")
    code, out, err = run(tmp_path, ScriptedSearch({"find-words": failure}))
    assert code == expected and out == ""
    one_error_line(err, "case 'find-words' (#2)", str(failure))


def test_exit_1_when_baseline_cannot_be_written(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "b.json"
    code, out, err = run(tmp_path, VaultSearch(VAULTS), save_baseline_path=target)
    assert code == 1 and "cases passed: 3/3" in out
    one_error_line(err, f"cannot write baseline {target}")


# -- splits: selection, per-split summaries, baselines tied to a split ----------------------------

SPLIT_GOLDEN = """\
cases:
  - id: phone-laptop
    split: dev
    query: keep my phone and laptop the same
    must_include_source_paths: [Sync/Setup.md]
    expected_facts: [phone and laptop]
  - id: find-words
    split: test
    query: find pages with words
    must_include_source_paths: [Plugins/Search.md]
  - id: prices
    split: test
    query: storage prices of plans
    must_include_source_paths: [Sync/Plans.md]
  - id: eggs
    split: test
    query: boil eggs
    expect_abstain: true
"""


def answering_search() -> ScriptedSearch:
    """dev: found and answered with the fact; test: one found, one missed, the unanswerable one abstains."""
    return ScriptedSearch({
        "phone-laptop": EvalHit.from_pairs([("Sync/Setup.md", 0)], answer="Your phone and laptop stay the same.",
                                           abstained=False),
        "find-words": EvalHit.from_pairs([("Plugins/Search.md", 0)], answer="Use operators.", abstained=False),
        "prices": EvalHit.from_pairs([("Plugins/Search.md", 0)], answer="No idea.", abstained=True),
        "eggs": EvalHit(answer="Could not find this.", abstained=True),
    })


def test_all_splits_report_the_selected_cases_and_each_split(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, answering_search(), SPLIT_GOLDEN, json_out=True)
    data = json.loads(out)
    assert (code, err) == (0, "")
    assert data["summary"]["cases"] == 4 and data["summary"]["split"] == "all"
    assert data["summary"]["metrics"]["recall@10"] == pytest.approx(2 / 3)
    assert set(data["splits"]) == {"dev", "test"}
    dev, test = data["splits"]["dev"], data["splits"]["test"]
    assert (dev["cases"], dev["split"], dev["metrics"]["recall@10"], dev["metrics"]["answer_fact"]) == (1, "dev", 1, 1)
    assert (test["cases"], test["metrics"]["recall@10"]) == (3, 0.5)
    assert test["metrics"]["answered_when_answerable"] == 0.5  # prices abstained wrongly
    assert test["metrics"]["abstain_on_unanswerable"] == 1.0
    assert "answer_fact" not in test["metrics"]  # no test case lists expected facts
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["phone-laptop"]["split"] == "dev" and cases["phone-laptop"]["expected_fact_hits"] == ["phone and laptop"]


def test_all_splits_text_shows_a_column_per_split_and_wrong_abstentions(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, answering_search(), SPLIT_GOLDEN)
    assert code == 0
    table = out.split("By split (value, cases)", 1)[1]
    header = table.splitlines()[1].split()
    assert header == ["metric", "all", "dev", "test"]
    row = next(line for line in table.splitlines() if line.startswith("recall@10"))
    assert row.split() == ["recall@10", "0.667", "(3)", "1.000", "(1)", "0.500", "(2)"]
    fact_row = next(line for line in table.splitlines() if line.startswith("answer_fact"))
    assert fact_row.split()[-1] == "-"  # no test case defines facts
    assert "wrongly abstained (1 - answered_when_answerable): all 0.333, dev 0.000, test 0.500" in out
    assert 'expected fact stated: "phone and laptop"' in out


def test_split_option_runs_only_that_split(tmp_path: Path) -> None:
    search = answering_search()
    code, out, err = run(tmp_path, search, SPLIT_GOLDEN, json_out=True, split="test")
    data = json.loads(out)
    assert (code, err) == (0, "")
    assert [call[0] for call in search.calls] == ["find-words", "prices", "eggs"]
    assert data["summary"]["split"] == "test" and data["summary"]["cases"] == 3
    assert list(data["splits"]) == ["test"] and data["splits"]["test"]["metrics"] == data["summary"]["metrics"]
    code, out, _ = run(tmp_path, answering_search(), SPLIT_GOLDEN, split="dev")
    assert code == 0 and ", split dev" in out.splitlines()[0] and "By split" not in out


def test_baseline_records_its_split_and_another_split_is_exit_2(tmp_path: Path) -> None:
    baseline = tmp_path / "test.json"
    assert run(tmp_path, answering_search(), SPLIT_GOLDEN, split="test", save_baseline_path=baseline)[0] == 0
    saved = json.loads(baseline.read_text())
    assert saved["split"] == "test" and saved["metrics"]["recall@10"] == 0.5  # the test cases only
    code, out, err = run(tmp_path, answering_search(), SPLIT_GOLDEN, split="test", baseline_path=baseline)
    assert (code, err) == (0, "") and "no degradation" in out
    for other in ("dev", "all"):
        search = answering_search()
        code, out, err = run(tmp_path, search, SPLIT_GOLDEN, split=other, baseline_path=baseline)
        assert code == 2 and out == "" and search.calls == []  # refused before any search
        one_error_line(err, str(baseline), "made on split 'test'", f"this run is on split '{other}'",
                              "--split test")


def test_a_baseline_without_a_split_key_covers_all_cases(tmp_path: Path) -> None:
    baseline = tmp_path / "old.json"
    run(tmp_path, answering_search(), SPLIT_GOLDEN, save_baseline_path=baseline)
    raw = json.loads(baseline.read_text())
    assert raw.pop("split") == "all"
    baseline.write_text(json.dumps(raw))  # as written before splits existed
    assert run(tmp_path, answering_search(), SPLIT_GOLDEN, baseline_path=baseline)[0] == 0
    assert run(tmp_path, answering_search(), SPLIT_GOLDEN, baseline_path=baseline, split="dev")[0] == 2


@pytest.mark.parametrize(("golden", "split", "fragment"), [
    (SPLIT_GOLDEN, "train", "--split must be one of dev, test, all, got 'train'"),
    (SPLIT_GOLDEN, "", "--split must be one of dev, test, all, got ''"),
    (GOLDEN, "dev", "--split dev: the cases carry no 'split' key"),
    (SPLIT_GOLDEN.replace("split: dev", "split: test"), "dev", "--split dev: no case has split 'dev'"),
])
def test_bad_split_selection_is_exit_2_before_any_search(tmp_path: Path, golden: str, split: str,
                                                          fragment: str) -> None:
    search = ScriptedSearch()
    code, out, err = run(tmp_path, search, golden, split=split)
    assert code == 2 and out == "" and search.calls == []
    one_error_line(err, fragment)
