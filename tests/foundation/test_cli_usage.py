"""Usage errors (bad option values, missing arguments, unknown commands) are short messages, not tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer.main

from ragpg_cli.main import app, main
from tests.support.cli import REPO, ragpg_env, use_ragpg_env


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
    use_ragpg_env(monkeypatch, ragpg_env(db_url, tmp_path))
    monkeypatch.chdir(tmp_path)  # a command that writes a file (config init) writes it here
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


# -- paths holding escape sequences (issue 29) -----------------------------------------------------

HOSTILE_DIR = "v\x1b[31mred\x1b]52;c;ZXZpbA==\x07\u202eevil\x9b2J"
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


def _clean(text: str) -> None:
    for raw in RAW:
        assert raw not in text, ascii(text)


@pytest.mark.security
def test_paths_holding_escape_sequences_are_printed_inert(test_database, capsys):
    """A vault path is data from the file system: `vault add`, `vault list`, errors and the index
    summary print it with escape sequences removed and other controls made visible."""
    root = test_database / HOSTILE_DIR
    root.mkdir()
    (root / "note\x1b]0;title\x07.md").write_text("# Note\n\nPlain words.\n", encoding="utf-8")
    (root / "bad\x1b[2J.md").write_bytes(b"\x00binary")

    runs = [["vault", "add", "hostile", str(root)], ["vault", "list"], ["vault", "add", "hostile", str(root)],
            ["index", "--quiet"], ["index", "--quiet", "--json"]]
    outputs = []
    for argv in runs:
        main(argv)
        out, err = capsys.readouterr()
        _clean(out)
        _clean(err)
        outputs.append((out, err))
    assert "redevil<U+202E>" not in outputs[0][0] and "red<U+202E>evil" in outputs[0][0]  # shown, made inert
    assert "red<U+202E>evil" in outputs[1][0]
    assert outputs[2][0].startswith("Vault 'hostile' (folder) is already registered at ") and "red<U+202E>" in outputs[2][0]
    assert "skipped bad.md: binary" in outputs[3][1] and "bad\\u001b[2J.md" in outputs[4][0]  # JSON escapes it
