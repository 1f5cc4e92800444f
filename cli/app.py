"""Shared CLI state: the settings object (built once, at the entry point) and output helpers."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from rag.config import Settings, load_settings
from rag.errors import ConfigError
from ragpg_cli.terminal import for_terminal, json_for_terminal


@dataclass
class CliState:
    config_path: Path | None = None
    _settings: Settings | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(self.config_path)
        return self._settings

    def log_level(self, verbose: bool) -> int:
        """The root logger's level: the log_level setting, at least INFO with --verbose. Settings that
        cannot be loaded leave WARNING here; the command that needs them reports why."""
        try:
            level = logging.getLevelNamesMapping()[self.settings.log_level]
        except ConfigError:
            level = logging.WARNING
        return min(level, logging.INFO) if verbose else level


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def print_json(data: Any) -> None:
    sys.stdout.write(json_for_terminal(json.dumps(data, indent=2, default=str, ensure_ascii=False)) + "\n")


def info(message: str) -> None:
    """Human status lines go to stderr so stdout stays clean for data."""
    say(message, err=True)


def say(message: str, *, err: bool = False, nl: bool = True) -> None:
    """A human line, made inert for the terminal: lines name files, vaults and keys, and their names
    (like note text) are untrusted, so escape sequences go and other controls show as `\\x1b`."""
    typer.echo(for_terminal(message), err=err, nl=nl)
