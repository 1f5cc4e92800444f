"""Fixtures of the eval CLI tests: the real `ragpg` in process against a per-test database, hash embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import ragpg_env, run_in_process, use_ragpg_env

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = ragpg_env(db_url, tmp_path)
    use_ragpg_env(monkeypatch, env)
    return env


@pytest.fixture
def cli(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Run:
    """`cli("eval", ...)` -> (exit code, stdout, stderr) of `ragpg ...` run in process."""

    return lambda *args: run_in_process(capsys, *args)
