"""Fixtures for the notes workflow: a runtime (hash embedder, with or without the LLM stub), a
`NotesDB` that writes small vaults straight into the per-test database, notes settings for a test,
and a CLI environment that indexes real files on disk."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from rag.config import LLMSettings, NotesSettings, Settings
from rag.runtime import Runtime
from tests.notes.kit import ABSTAIN, NotesDB
from tests.support.cli import ragpg_env, run_in_process, use_ragpg_env
from tests.support.llm_stub import LLMStub

FOLDER_PROMPT_MARK = "Which folders most likely contain the answer?"

# The module, even once `rag/__init__.py` re-exports the `ask` function under the same name.
ask_module = importlib.import_module("rag.notes.ask")


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


def use_settings(monkeypatch: pytest.MonkeyPatch, **changes: Any) -> NotesSettings:
    """Notes settings for `ask` and `search` in this test: the test abstention model (kit.ABSTAIN,
    not the fitted defaults) plus `changes`."""
    custom = NotesSettings(**{**ABSTAIN, **changes})
    monkeypatch.setattr(ask_module, "notes_settings", lambda _settings: custom)
    return custom


@pytest.fixture
def notes_config(monkeypatch: pytest.MonkeyPatch) -> NotesSettings:
    """The test abstention model with every other notes setting at its default."""
    return use_settings(monkeypatch)


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


def answer_prompts(stub: LLMStub) -> list[str]:
    """The user messages of the answering requests the stub received (system prompt + user prompt)."""
    return [r["messages"][-1]["content"] for r in stub.requests
            if len(r["messages"]) == 2 and r["messages"][0]["role"] == "system"]



# -- the CLI on real files --------------------------------------------------------------------------

def abstain_toml() -> str:
    """The `[notes]` table pinning the test abstention model (kit.ABSTAIN) in a config file."""
    weights = ", ".join(f"{k} = {v}" for k, v in ABSTAIN["abstain_weights"].items())
    return (f"[notes]\nabstain_bias = {ABSTAIN['abstain_bias']}\nabstain_threshold = {ABSTAIN['abstain_threshold']}\n"
            f"abstain_low_confidence = {ABSTAIN['abstain_low_confidence']}\nabstain_weights = {{ {weights} }}\n")


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment of `ragpg` for the per-test database: hash embedder, no LLM, a config file
    holding only the test abstention model."""
    config = tmp_path / "ragpg.toml"
    config.write_text(abstain_toml(), encoding="utf-8")
    env = ragpg_env(db_url, tmp_path, config=config)
    use_ragpg_env(monkeypatch, env)
    return env


def index_vault(capsys: pytest.CaptureFixture[str], name: str, root: Path) -> None:
    """`ragpg vault add <name> <root>` and `ragpg index` (the real indexing pipeline)."""
    code, _, err = run_in_process(capsys, "vault", "add", name, str(root))
    assert code == 0, err
    code, _, err = run_in_process(capsys, "index", "--quiet")
    assert code == 0, err
