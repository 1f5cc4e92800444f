"""`ragpg eval` end to end: a small vault indexed by the real pipeline, the real CLI in process.

Covers every exit code (0 ok, 1 runtime failure, 2 malformed input, 3 degraded), the baseline
round trip, the tolerance setting, and malformed golden files reported by line and case.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from rag.config import EvalSettings
from rag.eval import DEFAULT_TOLERANCE
from rag.store import models
from tests.eval.conftest import Run
from tests.eval.fakes import write
from tests.support.cli import one_error_line
from tests.support.files import write_files

FILES = {
    "Garden/Tomatoes.md": "# Tomatoes\n\nPlant tomato seedlings outdoors after the last frost, usually in May.\n"
                          "Water tomato plants deeply twice a week.\n",
    "Garden/Roses.md": "# Roses\n\nPrune roses in early spring, just above an outward-facing bud.\n",
    "Kitchen/Bread.md": "# Bread\n\nKnead the bread dough for ten minutes, let it rise for an hour, then bake "
                        "the bread at 220 degrees.\n",
    "Kitchen/Soup.md": "# Soup\n\nSimmer the soup with onions and carrots for forty minutes.\n",
}
GOLDEN = """\
cases:
  - id: tomato-planting
    query: When do tomato seedlings go outdoors after the frost?
    must_include_source_paths: [Garden/Tomatoes.md]
  - id: bread-baking
    query: How long do I knead bread dough and at what heat do I bake the bread?
    must_include_source_paths: [Kitchen/Bread.md]
    acceptable_source_paths: [Kitchen/Soup.md]
    forbidden_claims: [bread needs no kneading]
    folder: Kitchen
  - id: world-cup
    query: Who won the football world cup in 1998?
    expect_abstain: true
"""


@pytest.fixture
def vault(cli: Run, tmp_path: Path) -> Path:
    root = write_files(tmp_path / "notes", FILES)
    assert cli("vault", "add", "notes", root)[0] == 0
    code, _, err = cli("index", "--quiet")
    assert code == 0, err
    return root


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return write(tmp_path / "golden.yaml", GOLDEN)


def inflated(baseline: Path, target: Path, metric: str, by: float) -> Path:
    raw = json.loads(baseline.read_text())
    raw["metrics"][metric] += by
    target.write_text(json.dumps(raw))
    return target


# -- exit 0 ----------------------------------------------------------------------------------------

def test_exit_0_with_per_case_report_and_summary(cli: Run, vault: Path, golden: Path) -> None:
    code, out, err = cli("eval", golden)
    assert code == 0, err
    assert err == ""
    assert out.startswith(f"ragpg eval: {golden}: 3 cases, k=10, profile notes, mode ask")
    for case_id in ("tomato-planting", "bread-baking", "world-cup"):
        assert case_id in out
    assert "must       Garden/Tomatoes.md  rank 1" in out
    for metric in ("recall@10", "recall@5", "mrr@10", "ndcg@10", "abstention_accuracy", "forbidden_claim_free"):
        assert metric in out.split("Summary", 1)[1]
    assert "forbidden claims stated: 0" in out


def test_json_report_and_the_compute_context_path(cli: Run, vault: Path, golden: Path) -> None:
    code, out, err = cli("eval", golden, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "ok" and data["baseline"] is None
    assert data["summary"]["profile"] == "notes" and data["summary"]["mode"] == "ask"
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["tomato-planting"]["ranks"] == {"Garden/Tomatoes.md": 1}
    assert cases["bread-baking"]["answer"]  # the ask path scores the answer text

    # Any profile with a compute_context mode: the folder becomes a filter, no answer is scored.
    code, out, err = cli("eval", golden, "--json", "--profile", "chat", "--mode", "base")
    assert code == 0, err
    data = json.loads(out)
    assert data["summary"]["mode"] == "base" and "forbidden_claim_free" not in data["summary"]["metrics"]
    cases = {c["id"]: c for c in data["cases"]}
    assert cases["bread-baking"]["retrieved_source_paths"][0] == "Kitchen/Bread.md"
    assert all(p.startswith("Kitchen/") for p in cases["bread-baking"]["retrieved_source_paths"])
    assert cases["tomato-planting"]["ranks"]["Garden/Tomatoes.md"] == 1

    code, out, err = cli("eval", golden, "--json", "--mode", "search", "--vault", "notes")
    assert code == 0, err
    assert json.loads(out)["summary"]["metrics"]["recall@5"] == 1.0


# -- baselines: round trip, exit 3, tolerance ----------------------------------------------------------

def test_save_baseline_round_trip_then_degraded_exit_9(cli: Run, vault: Path, golden: Path, tmp_path: Path) -> None:
    saved = tmp_path / "baseline.json"
    code, out, err = cli("eval", golden, "--save-baseline", saved)
    assert code == 0, err
    raw = json.loads(saved.read_text())
    assert raw["profile"] == "notes" and raw["mode"] == "ask" and raw["k"] == 10
    assert "recall@5" in raw["metric_set"] and raw["metrics"]["abstention_accuracy"] == pytest.approx(
        json.loads(cli("eval", golden, "--json")[1])["summary"]["metrics"]["abstention_accuracy"])

    code, out, err = cli("eval", golden, "--baseline", saved, "--tolerance", "0")
    assert code == 0, err
    assert f"vs baseline {saved} (tolerance 0.0): no degradation" in out

    higher = inflated(saved, tmp_path / "higher.json", "mrr@10", 0.05)
    code, out, err = cli("eval", golden, "--baseline", higher)
    assert code == 9
    one_error_line(err, "degraded vs baseline", str(higher), "mrr@10")
    assert "DEGRADED" in out  # the report still shows what was measured

    # The tolerance is a setting (eval.tolerance) with a default, and --tolerance overrides it.
    assert EvalSettings().tolerance == DEFAULT_TOLERANCE == 0.02
    assert cli("eval", golden, "--baseline", higher, "--tolerance", "0.06")[0] == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGPG_EVAL__TOLERANCE", "0.06")
        assert cli("eval", golden, "--baseline", higher)[0] == 0
        mp.setenv("RAGPG_EVAL__TOLERANCE", "-1")
        code, _, err = cli("eval", golden)
        assert code == 2
        one_error_line(err, "eval.tolerance")


def test_baseline_from_a_different_metric_set_is_exit_2_naming_the_problem(
        cli: Run, vault: Path, golden: Path, tmp_path: Path) -> None:
    at_5 = tmp_path / "k5.json"
    assert cli("eval", golden, "--k", "5", "--save-baseline", at_5)[0] == 0
    code, out, err = cli("eval", golden, "--baseline", at_5)
    assert code == 2
    one_error_line(err, str(at_5), "different metric set", "k=5, this run k=10", "only in baseline: mrr@5",
                   "only in this run: mrr@10, recall@10", "--save-baseline")
    assert "Summary" in out

    broken = write(tmp_path / "broken.json", '{"metric_set": ["recall@10"]')
    code, out, err = cli("eval", golden, "--baseline", broken)
    assert (code, out) == (2, "")  # refused before any search runs
    one_error_line(err, f"baseline {broken}:1: invalid JSON")


# -- exit 2: malformed golden files, unknown vault, bad options ---------------------------------------

@pytest.mark.parametrize(("text", "parts"), [
    ("cases:\n  - id: a\n    query: q\n    k: ten\n", [":4: case 'a' (#1)", "'k' must be a positive integer"]),
    ("cases:\n  - id: a\n    query: q\n  - id: b\n    must_include_source_paths: [x.md]\n",
     [":4: case 'b' (#2)", "missing required key 'query'"]),
    ("cases:\n  - id: a\n    query: q\n  - id: a\n    query: r\n",
     [":4: case 'a' (#2)", "duplicate id, first used by case #1 (line 2)"]),
    ("cases:\n  - id: a\n    query: q\n    expect_abstain: maybe\n", [":4: case 'a' (#1)", "true or false"]),
    ("cases: [\n", ["invalid YAML"]),
])
def test_malformed_golden_is_exit_2_naming_line_and_case(cli: Run, tmp_path: Path, text: str,
                                                          parts: list[str]) -> None:
    path = write(tmp_path / "bad.yaml", text)
    code, out, err = cli("eval", path)
    assert (code, out) == (2, "")
    one_error_line(err, str(path), *parts)


def test_unknown_vault_is_exit_4_naming_the_case(cli: Run, vault: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "g.yaml", "cases:\n  - id: a\n    query: tomatoes\n    must_include_source_paths: [x.md]\n"
                                      "  - id: elsewhere\n    query: roses\n    vault: nope\n"
                                      "    must_include_source_paths: [y.md]\n")
    code, out, err = cli("eval", path)
    assert (code, out) == (4, "")  # not found, as in every command
    one_error_line(err, f"{path}:5: case 'elsewhere' (#2)", "unknown vault 'nope'")
    code, _, err = cli("eval", path, "--vault", "missing")  # --vault applies to cases that name none
    assert code == 4
    one_error_line(err, "case 'a' (#1)", "unknown vault 'missing'")


def test_bad_profile_mode_and_k_are_exit_2_or_4(cli: Run, golden: Path) -> None:
    code, _, err = cli("eval", golden, "--profile", "nope")
    assert code == 4  # not found, as in every command
    one_error_line(err, "unknown profile 'nope'")
    code, _, err = cli("eval", golden, "--profile", "chat", "--mode", "ask")
    assert code == 2
    one_error_line(err, "mode 'ask'", "--profile notes")
    code, _, err = cli("eval", golden, "--mode", "sideways")
    assert code == 2
    one_error_line(err, "unknown mode 'sideways'")
    code, _, err = cli("eval", golden, "--k", "0")
    assert code == 2
    one_error_line(err, "k must be a positive integer")


# -- exit 3 and 1 ------------------------------------------------------------------------------------

def test_unreachable_database_is_exit_3_in_one_line(cli: Run, golden: Path, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://127.0.0.1:1/nowhere?connect_timeout=2")
    code, out, err = cli("eval", golden)
    assert (code, out) == (3, "")  # as for every command: 3 is the database, never "degraded" (9)
    one_error_line(err, "cannot connect to the database")
    # Input problems still come first: a broken golden file is exit 2 even with the database down.
    assert cli("eval", write(tmp_path / "bad.yaml", "cases: []\n"))[0] == 2


def test_search_failure_mid_run_is_exit_3_naming_the_case(cli: Run, vault: Path, golden: Path,
                                                          conn: psycopg.Connection) -> None:
    # A real database failure during the run: the model's hybrid match functions (what the notes
    # profile searches with, whole and by facet) are gone.
    model = models.list_models(conn)[0]
    for name in (model.hybrid_function, model.hybrid_multi_function):
        conn.execute(sql.SQL("drop function {}").format(sql.Identifier(name)))
    conn.commit()
    code, out, err = cli("eval", golden)
    assert (code, out) == (3, "")  # the database lacks what ragpg needs: its code, not "degraded"
    one_error_line(err, f"{golden}:2: case 'tomato-planting' (#1): search failed:")


PAPERS = {f"paper{i}.md": f"# Trial {i}\n\nTomato extract given to {i * 10} patients before baking bread; the world cup "
          f"of {1990 + i} followed the frost.\n" for i in range(30)}


def test_unrelated_vault_reports_the_same_decisions(cli: Run, vault: Path, golden: Path, tmp_path: Path) -> None:
    assert cli("vault", "add", "papers", write_files(tmp_path / "papers", PAPERS))[0] == 0
    assert cli("index", "--quiet", "papers")[0] == 0
    code, out, err = cli("eval", golden, "--vault", "notes", "--unrelated-vault", "papers", "--json")
    assert code == 0, err
    data = json.loads(out)
    second = data["unrelated_vault"]
    assert second["vault"] == "papers" and second["changed_decisions"] == []
    for metric in ("abstain_on_unanswerable", "answered_when_answerable"):
        assert second["metrics"][metric] == data["summary"]["metrics"][metric]
    code, out, err = cli("eval", golden, "--vault", "notes", "--unrelated-vault", "papers")
    assert code == 0 and "With vault 'papers' also searched:" in out and "abstention changed on 0 case(s)" in out
    code, out, err = cli("eval", golden, "--unrelated-vault", "papers")  # which vaults are the cases about?
    assert code == 2 and out == "" and "--unrelated-vault needs --vault" in err
