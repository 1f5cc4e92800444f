"""Langfuse tracing (SDK v5, OpenTelemetry based), optional and never in the way.

Spans: `rag:root` (one per request), `rag_retrieval_stage` (one per retrieval pass, metadata
`stage` = base | hyde | rewrite | multi | reverse) and `context:selection` (budgeting). Values
given to `set(...)` become Langfuse observation metadata (OTel attributes
`langfuse.observation.metadata.<key>`, JSON-encoded), e.g. `autoTriggered`, `winner`,
`multiQueryRan`, `insufficient`, `decisionSignature`, top scores and counts.

Without keys (settings `tracing.langfuse_public_key/secret_key`, or the standard
`LANGFUSE_PUBLIC_KEY/SECRET_KEY` variables) the tracer is a no-op: langfuse is not even
imported. With keys, spans go through Langfuse's batch processor on a background thread, so
a slow or unreachable Langfuse never blocks a request; any tracing failure is logged once and
the request goes on. String values are secret-masked before they are recorded.

Tests (and hosts with their own OpenTelemetry setup) pass `span_exporter=` and/or
`tracer_provider=` to `Tracer.from_settings`; both are handed to `langfuse.Langfuse`.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from rag.secrets import mask_secrets

log = logging.getLogger(__name__)

ROOT_SPAN = "rag:root"
STAGE_SPAN = "rag_retrieval_stage"
SELECTION_SPAN = "context:selection"
SIGNATURE_CHARS = 12
SIGNATURE_SEPARATOR = "\x1f"  # cannot occur in step names, so ("a b",) and ("a", "b") differ
MAX_TEXT_ATTR_CHARS = 2000  # long strings (queries) are cut: traces are for operators, not archives
ENV_PUBLIC_KEY = "LANGFUSE_PUBLIC_KEY"
ENV_SECRET_KEY = "LANGFUSE_SECRET_KEY"


def decision_signature(path: Sequence[str]) -> str:
    """A short stable hash of the decision path (e.g. auto → correct → hyde → rewrite → hyde)."""
    joined = SIGNATURE_SEPARATOR.join(str(step) for step in path)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:SIGNATURE_CHARS]


def _mask(text: str) -> str:
    return mask_secrets(text)


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return _mask(value)[:MAX_TEXT_ATTR_CHARS]
    if isinstance(value, Mapping):
        return {str(k): _clean_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_clean_value(v) for v in value]
    return value


def clean_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Drop None (Langfuse skips it anyway), mask and cut strings."""
    return {k: _clean_value(v) for k, v in attrs.items() if v is not None}


class Span:
    """What `root`, `stage` and `selection` yield: `set(**attrs)` records metadata."""

    def set(self, **attrs: Any) -> None:  # the no-op span
        return None

    def score(self, name: str, value: Any, data_type: str) -> None:
        """A score on the span's trace (Langfuse charts scores; rag.trace_signals names them)."""
        return None


NOOP_SPAN = Span()


class _LiveSpan(Span):
    def __init__(self, observation: Any, tracer: Tracer) -> None:
        self._observation = observation
        self._tracer = tracer

    def set(self, **attrs: Any) -> None:
        try:
            self._observation.update(metadata=clean_attributes(attrs))
        except Exception as exc:  # tracing must never fail a request
            self._tracer.failed(exc)

    def score(self, name: str, value: Any, data_type: str) -> None:
        try:
            self._observation.score_trace(name=name, value=value, data_type=data_type)
        except Exception as exc:
            self._tracer.failed(exc)


class TracedError(Exception):
    """What a span records of an error: its type and masked message."""


class Tracer:
    """Build with `Tracer.from_settings(settings)`; `Tracer()` is the no-op tracer."""

    def __init__(self, client: Any = None) -> None:
        self._client = client
        self._failure_logged = False

    @classmethod
    def from_settings(cls, settings: Any, *, span_exporter: Any = None, tracer_provider: Any = None,
                      **langfuse_kwargs: Any) -> Tracer:
        cfg = getattr(settings, "tracing", None)
        public_key = getattr(cfg, "langfuse_public_key", None) or os.environ.get(ENV_PUBLIC_KEY)
        secret_key = getattr(cfg, "langfuse_secret_key", None) or os.environ.get(ENV_SECRET_KEY)
        if not (public_key and secret_key):
            return cls()
        from rag.extras import missing_modules

        if missing_modules("langfuse"):
            log.warning("Langfuse keys are set but tracing is off: pip install 'ragpg[langfuse]'")
            return cls()
        try:
            from langfuse import Langfuse

            client = Langfuse(public_key=public_key, secret_key=secret_key,
                              base_url=getattr(cfg, "langfuse_host", None), span_exporter=span_exporter,
                              tracer_provider=tracer_provider, **langfuse_kwargs)
        except Exception as exc:
            log.warning("Langfuse tracing is off: %s", exc)
            return cls()
        return cls(client)

    @property
    def enabled(self) -> bool:
        return self._client is not None

    def failed(self, exc: BaseException) -> None:
        if not self._failure_logged:
            self._failure_logged = True
            log.warning("tracing error (further ones are not logged): %s", exc)

    @contextmanager
    def _span(self, name: str, attrs: Mapping[str, Any], input: Any = None) -> Iterator[Span]:
        if self._client is None:
            yield NOOP_SPAN
            return
        try:
            manager: AbstractContextManager[Any] = self._client.start_as_current_observation(
                as_type="span", name=name, input=input, metadata=clean_attributes(attrs))
            observation = manager.__enter__()
        except Exception as exc:
            self.failed(exc)
            yield NOOP_SPAN
            return
        try:
            yield _LiveSpan(observation, self)
        except BaseException as exc:
            self._exit(manager, exc)  # records the error on the span, then the error goes on
            raise
        self._exit(manager, None)

    def _exit(self, manager: AbstractContextManager[Any], exc: BaseException | None) -> None:
        try:
            if exc is None:
                manager.__exit__(None, None, None)
            else:
                # The span records a stand-in: an error message may quote the caller's arguments (a folder
                # or vault name holding a token), so it is masked like every attribute, and no stack is kept.
                stand_in = TracedError(mask_secrets(f"{type(exc).__name__}: {exc}"))
                manager.__exit__(TracedError, stand_in, None)
        except BaseException as error:
            if error is not exc and isinstance(error, Exception):
                self.failed(error)

    def root(self, *, request_id: str, query: str, **attrs: Any) -> AbstractContextManager[Span]:
        # The query goes in as the observation input (masked), not duplicated in metadata.
        return self._span(ROOT_SPAN, {"requestId": request_id, **attrs},
                          input=_clean_value(query) if self.enabled else None)

    def stage(self, stage: str, **attrs: Any) -> AbstractContextManager[Span]:
        return self._span(STAGE_SPAN, {"stage": stage, **attrs})

    def selection(self, **attrs: Any) -> AbstractContextManager[Span]:
        return self._span(SELECTION_SPAN, attrs)

    def flush(self) -> None:
        if self._client is not None:
            try:
                self._client.flush()
            except Exception as exc:
                self.failed(exc)

    def shutdown(self) -> None:
        if self._client is not None:
            try:
                self._client.shutdown()
            except Exception as exc:
                self.failed(exc)
