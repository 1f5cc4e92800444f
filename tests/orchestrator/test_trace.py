"""Tracing: spans captured in-process through Langfuse's own span processor, no network."""

from __future__ import annotations

import json
import logging
import warnings
from types import SimpleNamespace

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag.config import load_settings
from rag.trace import ROOT_SPAN, SELECTION_SPAN, STAGE_SPAN, Tracer, decision_signature
from tests.support.tracing import capturing_tracer

META = "langfuse.observation.metadata."
SECRET = "AKIAIOSFODNN7EXAMPLE"  # the AWS documentation's example key id


def meta(span) -> dict:
    return {k[len(META):]: json.loads(v) for k, v in span.attributes.items() if k.startswith(META)}


@pytest.fixture
def captured(monkeypatch):
    """A tracer with dummy keys whose spans land in an in-memory exporter."""
    with capturing_tracer(monkeypatch) as captured:
        yield captured


def run_request(tracer: Tracer) -> None:
    with tracer.root(request_id="req-1", query=f"where is key {SECRET}?", profile="chat", mode="auto") as root:
        for stage in ("base", "hyde", "rewrite"):
            with tracer.stage(stage) as span:
                span.set(count=3, topSimilarity=0.42 if stage == "base" else None)
        with tracer.selection(budget_tokens=400) as span:
            span.set(insufficient=False, used_tokens=321, blocks=2)
        root.set(autoTriggered=True, winner="hyde", multiQueryRan=False, insufficient=False,
                 decisionSignature=decision_signature(["auto", "correct", "hyde"]), topScore=0.8, chunkCount=5,
                 note=f"saw {SECRET}")


def test_spans_names_nesting_and_attributes(captured):
    tracer, exporter = captured
    run_request(tracer)
    tracer.flush()
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == sorted([ROOT_SPAN, STAGE_SPAN, STAGE_SPAN, STAGE_SPAN, SELECTION_SPAN])
    root = next(s for s in spans if s.name == ROOT_SPAN)
    assert root.parent is None
    for child in (s for s in spans if s is not root):
        assert child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id
    assert [meta(s)["stage"] for s in spans if s.name == STAGE_SPAN] == ["base", "hyde", "rewrite"]
    base = next(meta(s) for s in spans if s.name == STAGE_SPAN and meta(s)["stage"] == "base")
    assert base == {"stage": "base", "count": 3, "topSimilarity": 0.42}
    assert "topSimilarity" not in next(meta(s) for s in spans if meta(s).get("stage") == "hyde")
    assert meta(next(s for s in spans if s.name == SELECTION_SPAN)) == {
        "budget_tokens": 400, "insufficient": False, "used_tokens": 321, "blocks": 2}
    rm = meta(root)
    assert rm["requestId"] == "req-1" and rm["winner"] == "hyde" and rm["autoTriggered"] is True
    assert rm["multiQueryRan"] is False and rm["insufficient"] is False and rm["chunkCount"] == 5
    assert rm["decisionSignature"] == decision_signature(["auto", "correct", "hyde"])


def test_secrets_are_masked_in_everything_sent(captured):
    tracer, exporter = captured
    run_request(tracer)
    tracer.flush()
    sent = json.dumps([dict(s.attributes) for s in exporter.get_finished_spans()])
    assert SECRET not in sent
    assert "where is key" in sent and "REDACTED" in sent


def test_errors_in_the_request_propagate_and_are_recorded(captured):
    tracer, exporter = captured
    with pytest.raises(ValueError, match="boom"):
        with tracer.root(request_id="r", query="q"):
            with tracer.stage("base"):
                raise ValueError("boom")
    tracer.flush()
    spans = exporter.get_finished_spans()
    assert len(spans) == 2 and all(s.status.status_code.name == "ERROR" for s in spans)


def test_without_keys_tracing_is_a_silent_no_op(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    monkeypatch.delenv("LANGFUSE_SECRET_KEY", raising=False)
    monkeypatch.setenv("LANGFUSE_TRACING_ENABLED", "true")
    exporter = InMemorySpanExporter()
    settings = load_settings(tmp_path / "absent.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.DEBUG):
            tracer = Tracer.from_settings(settings, span_exporter=exporter, tracer_provider=TracerProvider())
            for _ in range(3):
                run_request(tracer)
            tracer.flush()
            tracer.shutdown()
    assert not tracer.enabled
    assert exporter.get_finished_spans() == ()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_only_one_key_is_not_enough(monkeypatch):
    monkeypatch.delenv("LANGFUSE_SECRET_KEY", raising=False)
    tracing = SimpleNamespace(langfuse_public_key="pk-lf-x", langfuse_secret_key=None, langfuse_host=None)
    assert not Tracer.from_settings(SimpleNamespace(tracing=tracing)).enabled


class _BrokenClient:
    def start_as_current_observation(self, **_: object) -> None:
        raise RuntimeError("langfuse exploded")

    def flush(self) -> None:
        raise RuntimeError("flush exploded")


def test_a_failing_tracer_never_fails_the_request_and_logs_once(caplog):
    tracer = Tracer(_BrokenClient())
    with caplog.at_level(logging.WARNING, logger="rag.trace"):
        for _ in range(3):
            run_request(tracer)
        tracer.flush()
    assert len(caplog.records) == 1 and "langfuse exploded" in caplog.records[0].getMessage()


def test_decision_signature_is_short_stable_and_order_sensitive():
    sig = decision_signature(["auto", "correct", "hyde", "rewrite", "hyde"])
    assert sig == decision_signature(("auto", "correct", "hyde", "rewrite", "hyde"))
    assert len(sig) == 12 and all(ch in "0123456789abcdef" for ch in sig)
    assert sig != decision_signature(["auto", "correct", "rewrite", "hyde", "hyde"])
    assert decision_signature(["a b"]) != decision_signature(["a", "b"])
    assert decision_signature([]) == decision_signature(())


@pytest.mark.security
def test_an_error_is_recorded_with_its_secrets_masked(captured):
    """An error message may quote the caller's arguments (a folder or vault name holding a token): the span's
    status, its exception event and stack text are masked like every other attribute."""
    tracer, exporter = captured
    token = "ghp_" + "Zy9Xw8Vu7T" * 4
    with pytest.raises(ValueError, match="no folder named"):  # the caller still gets the real error
        with tracer.root(request_id="r", query="q"):
            raise ValueError(f"no folder named '{token}'")
    tracer.flush()
    recorded = [str(s.status.description) for s in exporter.get_finished_spans()]
    recorded += [str(dict(e.attributes or {})) for s in exporter.get_finished_spans() for e in s.events]
    assert recorded and any("no folder named" in r for r in recorded)
    assert not [r for r in recorded if token in r]
