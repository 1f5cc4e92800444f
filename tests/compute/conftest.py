"""compute_context end to end: small vaults written as real files, indexed by the real pipeline into
the per-test database (hash embedder), and runtimes with or without the LLM stub and a span capture."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag.config import ChunkingSettings, LLMSettings, Settings
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store.vaults import NewVault, add_vault
from rag.trace import Tracer
from tests.compute import corpus
from tests.support.files import write_files
from tests.support.llm_stub import LLMStub
from tests.support.tracing import capturing_tracer


def llm_settings(stub: LLMStub, **extra: Any) -> LLMSettings:
    return LLMSettings(model="openai/stub", api_base=f"{stub.url}/v1", api_key="sk-test",
                       **{"timeout_s": 5.0, **extra})


@pytest.fixture
def capture(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    """A Langfuse tracer (dummy keys) whose spans land in memory."""
    with capturing_tracer(monkeypatch) as captured:
        yield captured


@dataclass
class Env:
    """Builds vaults on disk and runtimes over the per-test database."""

    settings: Settings
    conn: psycopg.Connection
    root: Path
    runtimes: list[Runtime] = field(default_factory=list)

    def vault(self, name: str, files: dict[str, str], *, chunking: ChunkingSettings | None = None) -> Path:
        path = write_files(self.root / name, files)
        add_vault(self.conn, NewVault(name=name, path=path))
        self.conn.commit()
        settings = self.settings if chunking is None else self.settings.model_copy(update={"chunking": chunking})
        report = index_vaults(settings, [name])
        assert not report.failed, report.to_dict()
        return path

    def runtime(self, *, llm: LLMStub | None = None, tracer: Tracer | None = None, **llm_extra: Any) -> Runtime:
        settings = self.settings
        if llm is not None:
            settings = settings.model_copy(update={"llm": llm_settings(llm, **llm_extra)})
        extra: dict[str, Any] = {"_tracer": tracer} if tracer is not None else {}
        rt = Runtime.from_settings(settings, pool_max_size=2, **extra)
        self.runtimes.append(rt)
        return rt

    def chunk_count(self) -> int:
        return self.conn.execute("select count(*) as n from chunks").fetchone()["n"]


@pytest.fixture
def env(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> Iterator[Env]:
    e = Env(settings.model_copy(update={"profiles": corpus.PROFILES}), conn, tmp_path / "vaults")
    yield e
    for rt in e.runtimes:
        rt.close()
        rt.tracer.shutdown()


@pytest.fixture
def kb(env: Env) -> Env:
    """The `kb` vault: three zorblax maintenance notes and three unrelated stories."""
    env.vault("kb", corpus.KB)
    return env


@pytest.fixture
def scripted(llm_stub: LLMStub) -> Callable[..., LLMStub]:
    """Script the stub per prompt kind: `scripted(hyde="...", rewrite="...", multi="...", reverse="...")`."""

    def script(**replies: str) -> LLMStub:
        def respond(messages: list[dict[str, Any]]) -> str:
            kind = corpus.prompt_kind(messages[-1]["content"])
            return replies.get(kind, "stub reply")

        llm_stub.responder = respond
        return llm_stub

    return script
