"""Baselines: round trip, the tolerance rule, and every malformed or incomparable baseline."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rag.errors import InputError
from rag.eval import DEFAULT_TOLERANCE, BaselineError, EvalSummary, compare, load_baseline, save_baseline
from rag.eval.baseline import check_against
from tests.eval.fakes import write


def summary(k: int = 10, profile: str | None = "notes", mode: str | None = "auto", **metrics: float) -> EvalSummary:
    values = metrics or {"recall": 0.8, "mrr": 0.6}
    named = {f"{name}@{k}": value for name, value in values.items()}
    return EvalSummary(metrics=named, counts=dict.fromkeys(named, 4), k=k, cases=4, passed=3,
                       profile=profile, mode=mode)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = save_baseline(summary(), tmp_path / "b.json")
    raw = json.loads(path.read_text())
    assert raw["metric_set"] == ["mrr@10", "recall@10"]
    assert raw["metrics"] == {"mrr@10": 0.6, "recall@10": 0.8}
    assert (raw["k"], raw["profile"], raw["mode"]) == (10, "notes", "auto")
    assert raw["created"]
    loaded = load_baseline(path)
    assert loaded.metric_set == ("mrr@10", "recall@10") and loaded.metrics == {"mrr@10": 0.6, "recall@10": 0.8}
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, no leftovers


def test_tolerance_boundary(tmp_path: Path) -> None:
    assert DEFAULT_TOLERANCE == 0.02
    base = load_baseline(save_baseline(summary(recall=0.5, mrr=0.5), tmp_path / "b.json"))
    # A drop of exactly the tolerance (0.50 -> 0.48) is not a degradation; 0.50 -> 0.47 is.
    assert compare(summary(recall=0.48, mrr=0.9), base, 0.02) == []
    [drop] = compare(summary(recall=0.47, mrr=0.5), base, 0.02)
    assert (drop.metric, drop.baseline, drop.current) == ("recall@10", 0.5, 0.47)
    assert drop.delta == pytest.approx(-0.03)
    assert compare(summary(recall=0.47, mrr=0.5), base, 0.05) == []  # a wider tolerance accepts it
    assert compare(summary(recall=0.4999, mrr=0.5), base, 0.0) != []  # zero tolerance: any drop


def test_different_metric_set_names_the_file_and_the_difference(tmp_path: Path) -> None:
    path = save_baseline(summary(k=5), tmp_path / "b.json")
    with pytest.raises(BaselineError) as info:
        compare(summary(k=10), load_baseline(path))
    message = str(info.value)
    assert str(path) in message and "different metric set" in message and "k=5, this run k=10" in message
    assert "only in baseline: mrr@5, recall@5" in message


def test_split_is_saved_and_must_match(tmp_path: Path) -> None:
    path = save_baseline(replace(summary(), split="test"), tmp_path / "b.json")
    assert json.loads(path.read_text())["split"] == "test"
    base = load_baseline(path)
    assert base.split == "test" and compare(replace(summary(), split="test"), base) == []
    with pytest.raises(BaselineError, match="made on split 'test', this run is on split 'all'"):
        compare(summary(), base)  # same metric set, other cases: still not comparable


def test_profile_or_mode_difference_is_a_note_not_an_error(tmp_path: Path) -> None:
    base = load_baseline(save_baseline(summary(profile="chat"), tmp_path / "b.json"))
    comparison = check_against(summary(profile="notes"), base)
    assert comparison.notes == ("baseline profile is chat, this run's is notes",)
    assert not comparison.degraded


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "b.json:1: invalid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"metrics": {}}', "missing key(s) created, k, metric_set, mode, profile"),
        ('{"metric_set": ["a"], "metrics": {"a": 1}, "k": 10, "profile": null, "mode": null, "created": "", "x": 1}',
         "unknown key(s) x"),
        ('{"metric_set": "a", "metrics": {"a": 1}, "k": 10, "profile": null, "mode": null, "created": ""}',
         "'metric_set' must be a list"),
        ('{"metric_set": ["a"], "metrics": {"a": "high"}, "k": 10, "profile": null, "mode": null, "created": ""}',
         "'metrics' must map metric names to numbers"),
        ('{"metric_set": ["a", "b"], "metrics": {"a": 1}, "k": 10, "profile": null, "mode": null, "created": ""}',
         "'metrics' and 'metric_set' name different metrics"),
        ('{"metric_set": ["a"], "metrics": {"a": 1}, "k": 0, "profile": null, "mode": null, "created": ""}',
         "'k' must be a positive integer"),
        ('{"metric_set": ["a"], "metrics": {"a": 1}, "k": 3, "profile": 7, "mode": null, "created": ""}',
         "'profile' must be a string or null"),
        ('{"metric_set": ["a"], "metrics": {"a": 1}, "k": 3, "profile": null, "mode": null, "created": "",'
         ' "split": "train"}', "'split' must be one of dev, test, all"),
    ],
)
def test_malformed_baselines_name_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path / "b.json", text)
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    assert isinstance(info.value, InputError)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_missing_baseline_file(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="not found"):
        load_baseline(tmp_path / "nope.json")


def test_unreadable_files_get_the_same_words_in_every_eval_input(tmp_path: Path) -> None:
    """Golden files, baselines and BEIR files are read under one rule (rag.eval.errors.reading)."""
    from rag.eval import GoldenError, load_golden
    from rag.eval.beir import BeirDataError, load_beir_queries

    folder = tmp_path / "folder.json"
    folder.mkdir()
    latin = tmp_path / "latin.json"
    latin.write_bytes("{\"caf\xe9\": 1}".encode("latin-1"))
    for load, error, kind in ((load_baseline, BaselineError, "baseline "), (load_golden, GoldenError, "golden file ")):
        for path, says in ((folder, "is a directory, not a file"), (latin, "is not UTF-8 text")):
            with pytest.raises(error) as info:
                load(path)
            assert str(info.value) == f"{kind}{path} {says}"
    beir = tmp_path / "beir"
    (beir / "queries.jsonl").mkdir(parents=True)
    (beir / "qrels").mkdir()
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    with pytest.raises(BeirDataError) as beir_info:
        load_beir_queries(beir, "test")
    assert str(beir_info.value) == f"{beir / 'queries.jsonl'} is a directory, not a file"


@pytest.mark.parametrize("tolerance", [-0.1, float("nan"), float("inf")])
def test_invalid_tolerance(tmp_path: Path, tolerance: float) -> None:
    base = load_baseline(save_baseline(summary(), tmp_path / "b.json"))
    with pytest.raises(InputError, match="tolerance must be a number >= 0"):
        compare(summary(), base, tolerance)
