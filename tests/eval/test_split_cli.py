"""`ragpg eval --split` through the real command line, with no database: every case here is
refused before the first search, so a server that cannot be reached must never be asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.eval.conftest import Run
from tests.eval.fakes import write
from tests.support.cli import one_error_line, ragpg_env, run_in_process, use_ragpg_env

UNREACHABLE = "postgresql://127.0.0.1:1/nowhere?connect_timeout=1"
GOLDEN = """\
cases:
  - id: a
    split: dev
    query: how do I sync?
    must_include_source_paths: [Sync/Setup.md]
  - id: b
    split: test
    query: boil an egg
    expect_abstain: true
"""


@pytest.fixture
def ragpg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    use_ragpg_env(monkeypatch, ragpg_env(UNREACHABLE, tmp_path))
    return lambda *args: run_in_process(capsys, *args)


def test_bad_split_value_is_one_line_and_exit_2(ragpg: Run, tmp_path: Path) -> None:
    code, out, err = ragpg("eval", write(tmp_path / "g.yaml", GOLDEN), "--split", "training")
    assert (code, out) == (2, "")
    one_error_line(err, "--split must be one of dev, test, all, got 'training'")


def test_baseline_of_another_split_is_exit_2_before_the_database_is_needed(ragpg: Run, tmp_path: Path) -> None:
    baseline = write(tmp_path / "b.json", json.dumps({
        "metric_set": ["recall@10"], "metrics": {"recall@10": 1.0}, "k": 10, "profile": "notes", "mode": "ask",
        "split": "dev", "created": ""}))
    code, out, err = ragpg("eval", write(tmp_path / "g.yaml", GOLDEN), "--split", "test", "--baseline", baseline)
    assert (code, out) == (2, "")
    one_error_line(err, str(baseline), "made on split 'dev'", "this run is on split 'test'")


def test_split_of_a_file_without_splits_is_exit_2(ragpg: Run, tmp_path: Path) -> None:
    golden = write(tmp_path / "g.yaml", GOLDEN.replace("    split: dev\n", "").replace("    split: test\n", ""))
    code, out, err = ragpg("eval", golden, "--split", "dev")
    assert (code, out) == (2, "")
    one_error_line(err, "--split dev: the cases carry no 'split' key")
    assert "--split" in ragpg("eval", "--help")[1]
