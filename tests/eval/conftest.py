"""Fixtures of the eval CLI tests: the real `ragpg` in process against a per-test database, hash embedder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ragpg_cli.main import main

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"DATABASE_URL": db_url, "RAGPG_EMBEDDING__MODEL": "hash", "RAGPG_CONFIG": str(tmp_path / "none.toml"),
           "RAGPG_DATA_DIR": str(tmp_path / "data")}
    for key in [k for k in os.environ if k.startswith("RAGPG_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def cli(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> Run:
    """`cli("eval", ...)` -> (exit code, stdout, stderr) of `ragpg ...` run in process."""

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def write_files(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
