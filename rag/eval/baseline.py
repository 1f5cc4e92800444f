"""Baselines: a saved summary that later runs must not fall below (by more than a tolerance).

A baseline file is JSON::

    {"metric_set": ["abstention_accuracy", "mrr@10", "ndcg@10", "recall@10"],
     "metrics": {"recall@10": 0.82, ...}, "k": 10, "profile": "notes", "mode": "auto",
     "split": "test", "created": "2026-01-01T12:00:00+00:00"}

Only a baseline over the same metric set is comparable (the set already encodes k, and
whether answers, chunk refs or forbidden claims were scored), and only on the same cases:
`split` (dev, test, or all; a file without it predates splits and means all) must match the
run's `--split`. Anything else is an error, never a silent partial comparison.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag.errors import InputError
from rag.eval.errors import BaselineError, EvalRunError, reading
from rag.eval.golden import ALL_SPLITS, SPLITS
from rag.eval.results import EvalSummary

DEFAULT_TOLERANCE = 0.02
# Metric means are sums of floats; a drop of exactly the tolerance must not flip on rounding.
FLOAT_SLACK = 1e-9
BASELINE_KEYS = frozenset({"metric_set", "metrics", "k", "profile", "mode", "created"})
OPTIONAL_BASELINE_KEYS = frozenset({"split"})


@dataclass(frozen=True)
class Baseline:
    path: Path
    metric_set: tuple[str, ...]
    metrics: Mapping[str, float]
    k: int
    profile: str | None
    mode: str | None
    created: str
    split: str = ALL_SPLITS


@dataclass(frozen=True)
class Degradation:
    metric: str
    baseline: float
    current: float
    delta: float  # current - baseline, negative


def validate_tolerance(tolerance: float) -> float:
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not (
        math.isfinite(tolerance) and tolerance >= 0
    ):
        raise InputError(f"tolerance must be a number >= 0, got {tolerance!r}")
    return float(tolerance)


def baseline_payload(summary: EvalSummary, created: datetime | None = None) -> dict[str, Any]:
    stamp = (created or datetime.now(UTC)).isoformat(timespec="seconds")
    return {
        "metric_set": list(summary.metric_set),
        "metrics": {name: summary.metrics[name] for name in summary.metric_set},
        "k": summary.k,
        "profile": summary.profile,
        "mode": summary.mode,
        "split": summary.split,
        "created": stamp,
    }


def save_baseline(summary: EvalSummary, path: str | Path) -> Path:
    """Writes the baseline atomically, so an interrupted save never leaves half a file."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        tmp.write_text(json.dumps(baseline_payload(summary), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise EvalRunError(f"cannot write baseline {target}: {exc.strerror or exc}") from None
    return target


def load_baseline(path: str | Path) -> Baseline:
    source = Path(path)
    data = _read_json(source)
    if not isinstance(data, dict):
        raise BaselineError(f"baseline {source}: must be a JSON object")
    missing = sorted(BASELINE_KEYS - data.keys())
    if missing:
        raise BaselineError(f"baseline {source}: missing key(s) {', '.join(missing)}")
    unknown = sorted(data.keys() - BASELINE_KEYS - OPTIONAL_BASELINE_KEYS)
    if unknown:
        raise BaselineError(f"baseline {source}: unknown key(s) {', '.join(unknown)}")
    return Baseline(
        path=source,
        metric_set=_metric_set(data["metric_set"], source),
        metrics=_metrics(data["metrics"], data["metric_set"], source),
        k=_k(data["k"], source),
        profile=_optional_text(data["profile"], "profile", source),
        mode=_optional_text(data["mode"], "mode", source),
        created=_optional_text(data["created"], "created", source) or "",
        split=_split(data.get("split", ALL_SPLITS), source),
    )


def _read_json(path: Path) -> Any:
    with reading(path, "baseline ", BaselineError):
        text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"baseline {path}:{exc.lineno}: invalid JSON: {exc.msg}") from None


def _metric_set(value: Any, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BaselineError(f"baseline {path}: 'metric_set' must be a list of metric names")
    return tuple(sorted(value))


def _metrics(value: Any, metric_set: list[str], path: Path) -> dict[str, float]:
    if not isinstance(value, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value.values()
    ):
        raise BaselineError(f"baseline {path}: 'metrics' must map metric names to numbers")
    if sorted(value) != sorted(metric_set):
        raise BaselineError(f"baseline {path}: 'metrics' and 'metric_set' name different metrics")
    return {name: float(v) for name, v in value.items()}


def _k(value: Any, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BaselineError(f"baseline {path}: 'k' must be a positive integer")
    return value


def _split(value: Any, path: Path) -> str:
    if value not in (*SPLITS, ALL_SPLITS):
        raise BaselineError(f"baseline {path}: 'split' must be one of {', '.join((*SPLITS, ALL_SPLITS))}")
    return str(value)


def _optional_text(value: Any, key: str, path: Path) -> str | None:
    if value is not None and not isinstance(value, str):
        raise BaselineError(f"baseline {path}: '{key}' must be a string or null")
    return value


def compare(summary: EvalSummary, baseline: Baseline, tolerance: float = DEFAULT_TOLERANCE) -> list[Degradation]:
    """The metrics where current < baseline - tolerance; an incomparable baseline is an error."""
    validate_tolerance(tolerance)
    check_split(baseline, summary.split)
    if summary.metric_set != baseline.metric_set:
        raise BaselineError(_metric_set_mismatch(summary, baseline))
    degraded = []
    for name in summary.metric_set:
        before, now = baseline.metrics[name], summary.metrics[name]
        if now < before - tolerance - FLOAT_SLACK:
            degraded.append(Degradation(metric=name, baseline=before, current=now, delta=now - before))
    return degraded


def check_split(baseline: Baseline, split: str) -> None:
    """A baseline measured on other cases says nothing about these; refuse rather than compare."""
    if baseline.split != split:
        raise BaselineError(f"baseline {baseline.path} was made on split '{baseline.split}', this run is "
                            f"on split '{split}'; run with --split {baseline.split} or save a new baseline")


def _metric_set_mismatch(summary: EvalSummary, baseline: Baseline) -> str:
    only_base = sorted(set(baseline.metric_set) - set(summary.metric_set))
    only_now = sorted(set(summary.metric_set) - set(baseline.metric_set))
    parts = [f"baseline {baseline.path} was made with a different metric set"]
    if baseline.k != summary.k:
        parts.append(f"k={baseline.k}, this run k={summary.k}")
    if only_base:
        parts.append(f"only in baseline: {', '.join(only_base)}")
    if only_now:
        parts.append(f"only in this run: {', '.join(only_now)}")
    return "; ".join(parts) + "; save a new baseline with --save-baseline"


@dataclass(frozen=True)
class Comparison:
    """The outcome of checking a run against a baseline, for the report."""

    baseline: Baseline
    tolerance: float
    degradations: tuple[Degradation, ...]
    notes: tuple[str, ...] = ()

    @property
    def degraded(self) -> bool:
        return bool(self.degradations)


def check_against(summary: EvalSummary, baseline: Baseline, tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    degradations = tuple(compare(summary, baseline, tolerance))
    return Comparison(baseline, float(tolerance), degradations, _setting_notes(summary, baseline))


def _setting_notes(summary: EvalSummary, baseline: Baseline) -> tuple[str, ...]:
    # Comparing across profiles or modes can be the point (is "notes" better than "chat"?),
    # so a difference is reported, not refused.
    notes = []
    for label, before, now in (("profile", baseline.profile, summary.profile), ("mode", baseline.mode, summary.mode)):
        if before != now:
            notes.append(f"baseline {label} is {before or 'unset'}, this run's is {now or 'unset'}")
    return tuple(notes)
