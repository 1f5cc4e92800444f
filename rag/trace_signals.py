"""The decision signals of a request, by stable names, for Langfuse dashboards (docs/langfuse.md).

Each request's `rag:root` span carries them as metadata (`langfuse.observation.metadata.<key>`),
and the numeric, boolean and categorical ones also as trace scores named `ragpg.<name>`, which
Langfuse dashboards chart. Renaming any of these breaks users' dashboards: add, never rename.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag.types import Decision

# metadata key -> (score name or None for metadata only, score data type)
SIGNALS: dict[str, tuple[str | None, str | None]] = {
    "weak": ("ragpg.weak", "BOOLEAN"),  # the base pass looked weak (rag.retrieval.autorag.is_weak_retrieval)
    "weakFlags": (None, None),  # which checks found it weak: low_top_similarity, few_matches, ...
    "route": ("ragpg.route", "CATEGORICAL"),  # base | correct | hyde | rewrite | multi | reverse
    "winner": ("ragpg.winner", "CATEGORICAL"),  # the result set used: base or a correction
    "margin": ("ragpg.margin", "NUMERIC"),  # best correction's set score minus base's (when judged)
    "usedTokens": ("ragpg.used_tokens", "NUMERIC"),  # context tokens used (compute_context)
    "abstained": ("ragpg.abstained", "BOOLEAN"),  # ask: no answer given
}
# Stage latencies: rag's timing key -> metadata key (score `ragpg.latency.<stage>_ms`).
LATENCY_STAGES: dict[str, str] = {
    "embed_ms": "latencyEmbedMs", "base_pass_ms": "latencyBasePassMs", "retrieval_ms": "latencyRetrievalMs",
    "assembly_ms": "latencyAssemblyMs", "answer_ms": "latencyAnswerMs", "total_ms": "latencyTotalMs",
}


def latency_score_name(timing_key: str) -> str:
    return f"ragpg.latency.{timing_key}"


def signal_names() -> list[str]:
    """Every metadata key this module may record (the stable list docs/langfuse.md documents)."""
    return [*SIGNALS, *LATENCY_STAGES.values()]


def score_names() -> list[str]:
    return [s for s, _ in SIGNALS.values() if s] + [latency_score_name(k) for k in LATENCY_STAGES]


def decision_signals(decision: Decision | None, *, timings_ms: Mapping[str, float] | None = None,
                     used_tokens: int | None = None, abstained: bool | None = None) -> dict[str, Any]:
    """The signals of one request from its decision record (None when it retrieved nothing) and timings."""
    out: dict[str, Any] = {} if decision is None else {
        "weak": decision.weak, "weakFlags": list(decision.weak_signals), "route": decision.route,
        "winner": decision.winner, "margin": decision.margin}
    out |= {"usedTokens": used_tokens, "abstained": abstained}
    for key, name in LATENCY_STAGES.items():
        if timings_ms and timings_ms.get(key) is not None:
            out[name] = round(float(timings_ms[key]), 3)
    return {k: v for k, v in out.items() if v is not None}


def scores(signals: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """(score name, value, data type) for the signals that are also scores."""
    out: list[tuple[str, Any, str]] = []
    for key, value in signals.items():
        if key in SIGNALS and SIGNALS[key][0] is not None:
            name, kind = SIGNALS[key]
            out.append((name, (1.0 if value else 0.0) if kind == "BOOLEAN" else value, kind))  # type: ignore[arg-type]
    by_metadata = {v: k for k, v in LATENCY_STAGES.items()}
    out += [(latency_score_name(by_metadata[k]), float(v), "NUMERIC") for k, v in signals.items() if k in by_metadata]
    return out


def record_signals(span: Any, signals: Mapping[str, Any]) -> None:
    """Put the signals on a `rag:root` span: all as metadata, the chartable ones also as scores."""
    span.set(**signals)
    for name, value, kind in scores(signals):
        span.score(name, value, kind)
