"""`log_level` is honoured: it sets how much the `ragpg` command logs to stderr (`--verbose` is at
least INFO); a level that is not one is a one-line configuration error."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from ragpg_cli.main import main
from tests.support.cli import ragpg, subprocess_env, use_ragpg_env


@pytest.fixture
def root_level(monkeypatch: pytest.MonkeyPatch) -> Iterator[logging.Logger]:
    use_ragpg_env(monkeypatch, {"RAGPG_CONFIG": "/nonexistent/ragpg.toml"})
    root = logging.getLogger()
    saved = root.level
    yield root
    root.setLevel(saved)


@pytest.mark.parametrize("setting, verbose, expected", [
    (None, False, logging.WARNING),
    ("error", False, logging.ERROR),
    ("DEBUG", False, logging.DEBUG),
    ("ERROR", True, logging.INFO),  # --verbose shows at least INFO
    ("DEBUG", True, logging.DEBUG),
])
def test_the_setting_decides_the_level(root_level, monkeypatch, capsys, setting, verbose, expected) -> None:
    if setting is not None:
        monkeypatch.setenv("RAGPG_LOG_LEVEL", setting)
    code = main([*(["--verbose"] if verbose else []), "config", "show", "--json"])
    assert code == 0, capsys.readouterr().err
    assert root_level.level == expected


def test_a_bad_level_is_a_one_line_error(root_level, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAGPG_LOG_LEVEL", "loud")
    code = main(["config", "show"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: invalid setting 'log_level': ") and len(err.strip().splitlines()) == 1


def test_info_lines_reach_stderr_only_at_that_level() -> None:
    """The real command: a library logger's INFO line shows with log_level INFO, not by default."""
    probe = ("import logging, sys; from ragpg_cli import main as m; "
             "m.app.command('probe')(lambda: logging.getLogger('rag.probe').info('probe line')); "
             "sys.exit(m.main(['probe']))")
    quiet = _python(probe, {})
    loud = _python(probe, {"RAGPG_LOG_LEVEL": "INFO"})
    assert quiet.returncode == 0 and "probe line" not in quiet.stderr
    assert loud.returncode == 0 and "INFO rag.probe: probe line" in loud.stderr


def _python(code: str, env: dict[str, str]):
    import subprocess
    import sys

    full = subprocess_env({"RAGPG_CONFIG": "/nonexistent/ragpg.toml", **env})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_the_console_script_accepts_the_variable() -> None:
    done = ragpg("config", "show", "--json", env={"RAGPG_LOG_LEVEL": "info", "RAGPG_CONFIG": "/nonexistent/x.toml"})
    assert done.returncode == 0 and '"value": "INFO"' in done.stdout
