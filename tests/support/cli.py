"""The real `ragpg` CLI in tests: its environment for the per-test database (none of the developer's
own RAGPG_* variables leak in), and a run in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from ragpg_cli.main import main

REPO = Path(__file__).resolve().parents[2]


def ragpg_env(db_url: str, tmp_path: Path, *, config: Path | None = None, **extra: str) -> dict[str, str]:
    """ragpg's variables for the per-test database: the hash embedder, `config` (default: a file that
    does not exist) and a scratch data dir, plus `extra`."""
    return {"DATABASE_URL": db_url, "RAGPG_EMBEDDING__MODEL": "hash",
            "RAGPG_CONFIG": str(config or tmp_path / "none.toml"), "RAGPG_DATA_DIR": str(tmp_path / "data"),
            **extra}


def _is_ragpg_variable(name: str) -> bool:
    return name.startswith("RAGPG_") or name == "DATABASE_URL"


def use_ragpg_env(monkeypatch: pytest.MonkeyPatch, env: Mapping[str, str]) -> None:
    """This process sees exactly `env` of ragpg's variables (RAGPG_*, DATABASE_URL)."""
    for key in [k for k in os.environ if _is_ragpg_variable(k)]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def run_in_process(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """`ragpg <args>` in this process: (exit code, stdout, stderr) of this call alone."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def subprocess_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child, with exactly `env` of ragpg's variables."""
    return {**{k: v for k, v in os.environ.items() if not _is_ragpg_variable(k)}, **(env or {})}


def ragpg(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
          cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpg_cli.main", *args], capture_output=True, text=True,
                          env=subprocess_env(env), timeout=timeout, cwd=cwd or REPO, stdin=subprocess.DEVNULL)


def one_error_line(err: str, *parts: str) -> None:
    """`err` is one line, `error: ...`, holding every one of `parts`."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for part in parts:
        assert part in lines[0], (part, lines[0])
