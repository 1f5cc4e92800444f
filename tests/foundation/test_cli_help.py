"""Every `ragpg` command has help text, and its options read as what they take: a flag shows no
type (it takes no value), an option with a value shows what kind."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer
from typer.testing import CliRunner

from ragpg_cli.main import app


def _commands(group: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, group
    if hasattr(group, "commands"):  # a group (typer ships its own copy of click's classes)
        for name, command in group.commands.items():
            yield from _commands(command, [*path, name])


def test_every_command_has_help_and_flags_show_no_type() -> None:
    root = typer.main.get_command(app)
    runner = CliRunner()
    seen = 0
    for path, command in _commands(root, []):
        assert (command.help or "").strip(), f"ragpg {' '.join(path)} has no help text"
        out = runner.invoke(app, [*path, "--help"], terminal_width=120)
        assert out.exit_code == 0 and "Usage" in out.output, path
        assert "<bool>" not in out.output, f"ragpg {' '.join(path)} --help shows <bool> on a flag"
        seen += 1
    assert seen > 20  # every subcommand was walked
    ask = runner.invoke(app, ["ask", "--help"], terminal_width=120).output
    assert "<int>" in ask and "--json" in ask  # values still show their type


def test_help_paragraphs_are_not_broken_mid_sentence() -> None:
    """typer prints a docstring's line breaks as they are: each paragraph of a command's help is one
    line in the source, so `--help` never breaks a sentence in the middle of the terminal."""
    root = typer.main.get_command(app)
    broken = []
    for path, command in _commands(root, []):
        for paragraph in (command.help or "").split("\n\n"):
            if "\n" in paragraph.strip():
                broken.append(f"ragpg {' '.join(path)}: {paragraph.strip()[:60]!r}")
    assert broken == []
