"""The decision signals on `rag:root` by the stable names docs/langfuse.md charts: weak flags,
route, winner, margin, used tokens, abstained, latency per stage (metadata, captured in-process),
and the same as trace scores `ragpg.*`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rag.compute import compute_context
from rag.notes.ask import ask
from rag.notes.settings import NotesSettings
from rag.runtime import Runtime
from rag.trace import ROOT_SPAN
from rag.trace_signals import LATENCY_STAGES, SIGNALS, score_names, signal_names
from tests.compute import corpus
from tests.notes.kit import ABSTAIN

META = "langfuse.observation.metadata."
DOC = Path(__file__).resolve().parents[2] / "docs" / "langfuse.md"


def root_meta(exporter) -> list[dict[str, Any]]:
    return [{k[len(META):]: json.loads(v) for k, v in s.attributes.items() if k.startswith(META)}
            for s in exporter.get_finished_spans() if s.name == ROOT_SPAN]


@pytest.fixture
def scores(capture, monkeypatch) -> list[dict[str, Any]]:
    """Trace scores the tracer sends, caught where Langfuse's client would queue them for upload."""
    tracer, _ = capture
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(tracer._client, "create_score", lambda **kw: sent.append(kw))
    return sent


def test_a_corrected_request_records_every_signal(kb, scripted, capture, scores) -> None:
    tracer, exporter = capture
    stub = scripted(hyde=corpus.HYDE_GOOD, rewrite=corpus.WEAK_QUERY)
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=kb.runtime(llm=stub, tracer=tracer))
    tracer.flush()
    (m,) = root_meta(exporter)
    d = result.decision
    assert m["weak"] is True and m["weakFlags"] == d.weak_signals and m["weakFlags"]
    assert (m["route"], m["winner"]) == (d.route, d.winner) == ("correct", "hyde")
    assert m["margin"] == pytest.approx(d.margin) and m["margin"] >= 0.10  # the profile's decision_margin
    assert m["usedTokens"] == result.used_tokens > 0
    for stage in ("latencyEmbedMs", "latencyBasePassMs", "latencyRetrievalMs", "latencyAssemblyMs", "latencyTotalMs"):
        assert isinstance(m[stage], float) and m[stage] >= 0, stage
    assert m["latencyTotalMs"] >= m["latencyRetrievalMs"]
    assert {k for k in m if k in set(signal_names())} == set(signal_names()) - {"abstained", "latencyAnswerMs"}
    sent = {s["name"]: s for s in scores}
    assert sent["ragpg.winner"]["value"] == "hyde" and sent["ragpg.winner"]["data_type"] == "CATEGORICAL"
    assert sent["ragpg.weak"]["value"] == 1.0 and sent["ragpg.weak"]["data_type"] == "BOOLEAN"
    assert sent["ragpg.used_tokens"]["value"] == result.used_tokens
    assert sent["ragpg.latency.total_ms"]["value"] == m["latencyTotalMs"]
    assert set(sent) <= set(score_names())
    assert len({s["trace_id"] for s in scores}) == 1


def test_ask_records_abstained_and_a_strong_request_no_margin(kb, capture, scores) -> None:
    tracer, exporter = capture
    # the tests' abstention model (tests/notes/kit.py), not the fitted defaults
    rt = Runtime.from_settings(kb.settings.model_copy(update={"notes": NotesSettings(**ABSTAIN)}), pool_max_size=2,
                               _tracer=tracer)
    kb.runtimes.append(rt)
    compute_context(corpus.STRONG_QUERY, profile="focused", runtime=rt)
    ask("Which zebra crossed the quantum volcano yesterday?", runtime=rt)
    tracer.flush()
    strong, asked = root_meta(exporter)
    assert strong["weak"] is False and strong["winner"] == "base" and "margin" not in strong
    assert asked["abstained"] is True and "latencyTotalMs" in asked and "route" in asked
    assert any(s["name"] == "ragpg.abstained" and s["value"] == 1.0 for s in scores)
    ask(corpus.STRONG_QUERY, runtime=rt)
    tracer.flush()
    answered = root_meta(exporter)[-1]
    assert answered["abstained"] is False and answered["latencyAnswerMs"] >= 0


def test_docs_name_every_signal_and_score() -> None:
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"`([A-Za-z][\w.]*)`", text))
    assert set(signal_names()) <= documented, set(signal_names()) - documented
    assert set(score_names()) <= documented, set(score_names()) - documented
    assert len(SIGNALS) == 7 and len(LATENCY_STAGES) == 6  # adding is fine; renaming breaks dashboards
