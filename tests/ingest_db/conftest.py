"""Fixtures of the indexing tests: an autocommit connection (the indexer commits per batch), the CLI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from rag.store.database import open_connection
from ragpg_cli.main import main
from tests.ingest_db.helpers import cli_env


@pytest.fixture
def aconn(db_url: str) -> Iterator[psycopg.Connection]:
    connection = open_connection(db_url, autocommit=True)
    yield connection
    connection.close()


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run `ragpg ARGS...` in process against the test database; returns (exit code, stdout, stderr)."""
    for key, value in cli_env(db_url, tmp_path).items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith("RAGPG_") and k not in cli_env(db_url, tmp_path)]:
        monkeypatch.delenv(key)

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
