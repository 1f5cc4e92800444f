"""Fixtures for the notes workflow: a runtime (hash embedder, with or without the LLM stub) and a
`NotesDB` that writes small vaults straight into the per-test database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from rag.config import LLMSettings, Settings
from rag.runtime import Runtime
from tests.notes.kit import NotesDB
from tests.support.llm_stub import LLMStub

FOLDER_PROMPT_MARK = "Which folders most likely contain the answer?"


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    rt = Runtime.from_settings(settings, pool_max_size=2)
    yield rt
    rt.close()


def llm_settings(stub: LLMStub, **extra: object) -> LLMSettings:
    return LLMSettings(model="openai/stub", api_base=f"{stub.url}/v1", api_key="sk-test", timeout_s=5, **extra)


@pytest.fixture
def llm_runtime(settings: Settings, llm_stub: LLMStub) -> Iterator[Runtime]:
    rt = Runtime.from_settings(settings.model_copy(update={"llm": llm_settings(llm_stub)}), pool_max_size=2)
    yield rt
    rt.close()


@pytest.fixture
def notes(conn: psycopg.Connection, runtime: Runtime) -> NotesDB:
    return NotesDB(conn, runtime.embedder)


def script(stub: LLMStub, *, folders: str | Callable[[str], str] | None = None,
           answer: str | Callable[[str], str] = "stub answer") -> None:
    """Make the stub answer folder-ranking prompts with `folders` and everything else with `answer`."""

    def respond(messages: list[dict]) -> str:
        text = messages[-1]["content"]
        if FOLDER_PROMPT_MARK in text:
            value = folders if folders is not None else "[]"
        else:
            value = answer
        return value(text) if callable(value) else value

    stub.responder = respond


def write_vault(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
