"""Fixtures of the indexing tests: an autocommit connection (the indexer commits per batch), the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from rag.store.database import open_connection
from tests.support.cli import ragpg_env, run_in_process, use_ragpg_env


@pytest.fixture
def aconn(db_url: str) -> Iterator[psycopg.Connection]:
    connection = open_connection(db_url, autocommit=True)
    yield connection
    connection.close()


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run `ragpg ARGS...` in process against the test database; returns (exit code, stdout, stderr)."""
    use_ragpg_env(monkeypatch, ragpg_env(db_url, tmp_path))
    return lambda *args: run_in_process(capsys, *args)
