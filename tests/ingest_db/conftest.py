"""Fixtures of the indexing tests: the CLI (the autocommit `aconn` is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import ragpg_env, run_in_process, use_ragpg_env


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run `ragpg ARGS...` in process against the test database; returns (exit code, stdout, stderr)."""
    use_ragpg_env(monkeypatch, ragpg_env(db_url, tmp_path))
    return lambda *args: run_in_process(capsys, *args)
