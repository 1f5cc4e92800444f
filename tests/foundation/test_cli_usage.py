"""Usage errors (bad option values, missing arguments, unknown commands) are short messages, not tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer.main

from ragpg_cli.main import app, main
from tests.support.cli import REPO


@pytest.mark.parametrize("argv, expected", [
    (["ask", "what is this", "--k", "abc"], "Invalid value for '--k'"),
    (["vault", "add"], "Missing argument"),
    (["nosuch"], "No such command"),
    (["index", "--no-such-option"], "No such option"),
])
def test_usage_error_is_a_message_and_exit_2(argv, expected, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert "Traceback" not in err


# -- arguments that are not UTF-8 (issue 29) ----------------------------------------------------------


def _commands(command, path=()):
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        yield list(path)
        return
    for name, sub in subcommands.items():
        yield from _commands(sub, (*path, name))


EVERY_COMMAND = list(_commands(typer.main.get_command(app)))


@pytest.fixture
def test_database(db_url, tmp_path, monkeypatch):
    """Whatever a command does, it does it to the per-test database and a scratch data dir."""
    for key in [k for k in os.environ if k.startswith("RAGPG_")]:
        monkeypatch.delenv(key)
    for key, value in {"DATABASE_URL": db_url, "RAGPG_EMBEDDING__MODEL": "hash",
                       "RAGPG_CONFIG": str(tmp_path / "none.toml"), "RAGPG_DATA_DIR": str(tmp_path / "data")}.items():
        monkeypatch.setenv(key, value)
    return tmp_path


def test_every_command_is_covered():
    assert ["ask"] in EVERY_COMMAND and ["vault", "add"] in EVERY_COMMAND and len(EVERY_COMMAND) >= 20


@pytest.mark.security
@pytest.mark.parametrize("command", EVERY_COMMAND, ids=" ".join)
def test_a_non_utf8_argument_is_one_line_and_exit_2(command, test_database, capsys):
    """Python hands a byte that is not UTF-8 over as a lone surrogate (\\udcff for 0xff): refused
    before any command runs, in one line naming the argument, whatever the command."""
    argv = [*command, "x\udcffy"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.splitlines() == [f"error: argument {len(argv)} ('x\\xffy') is not valid UTF-8; ragpg reads "
                                "arguments as UTF-8 text"], err
    assert out == ""


@pytest.mark.security
def test_non_utf8_bytes_from_the_shell(test_database):
    """The real process, given raw bytes (`ragpg ask $'\\xff'`): the same one line, not a traceback."""
    for args in ([b"ask", b"\xff"], [b"vault", b"add", b"w", str(test_database).encode() + b"/sec\xff"],
                 [b"--config", b"/tmp/\xff.toml", b"vault", b"list"], [b"search", b"q", b"--vault", b"n\xe9"]):
        done = subprocess.run([sys.executable, "-m", "ragpg_cli.main", *args], cwd=REPO, capture_output=True,
                              env=os.environ.copy(), stdin=subprocess.DEVNULL, timeout=120)
        lines = done.stderr.decode("utf-8").splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "is not valid UTF-8" in lines[0], done.stderr
