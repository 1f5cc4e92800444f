"""A real Langfuse tracer (dummy keys) whose spans land in memory: span tests send nothing anywhere."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag.trace import Tracer

UNREACHABLE = "http://127.0.0.1:9"  # the Langfuse host: nothing is ever sent there


@contextmanager
def capturing_tracer(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    """(tracer, exporter), the tracer shut down on leaving."""
    monkeypatch.setenv("LANGFUSE_TRACING_ENABLED", "true")  # tests/conftest.py turns it off globally
    exporter = InMemorySpanExporter()
    # Langfuse keeps one client per public key, so every capture gets a fresh key.
    tracing = SimpleNamespace(langfuse_public_key=f"pk-lf-{uuid.uuid4().hex}", langfuse_secret_key="sk-lf-test",
                              langfuse_host=UNREACHABLE)
    tracer = Tracer.from_settings(SimpleNamespace(tracing=tracing), span_exporter=exporter,
                                  tracer_provider=TracerProvider())
    assert tracer.enabled
    try:
        yield tracer, exporter
    finally:
        tracer.shutdown()
