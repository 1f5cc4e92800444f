"""`ragpg config show` (the settings in force, where each came from and what it does, secrets masked)
and `ragpg config init` (a commented config file with every default and its description)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import typer

from ragpg_cli.app import info, print_json, state
from ragpg_cli.terminal import for_terminal

DESCRIPTION_WIDTH = 96
app = typer.Typer(help="See the settings in force, or write a config file to start from.", no_args_is_help=True)


def _path(ctx: typer.Context) -> Path:
    from rag.config import default_config_path

    return state(ctx).config_path or default_config_path()


@app.command("show")
def show(ctx: typer.Context,
         json_out: bool = typer.Option(False, "--json", help="Print the settings as JSON."),
         changed: bool = typer.Option(False, "--changed", help="Only settings that are not at their default.")) -> None:
    """Every setting's value in force, where it came from (default, config file, environment) and what it does; secrets masked."""
    import json

    from rag.config_report import config_report

    report = config_report(_path(ctx))
    rows = [s for s in report.settings if not changed or s.source != "default"]
    if json_out:
        print_json({**report.to_dict(), "settings": [s.to_dict() for s in rows]})
        return
    exists = "" if report.config_file_exists else " (not present: defaults and environment only)"
    typer.echo(for_terminal(f"config file: {report.config_file}{exists}"))
    width = max((len(s.name) for s in rows), default=0)
    for s in rows:
        value = json.dumps(s.value, default=str, ensure_ascii=False) if not isinstance(s.value, str) else s.value
        typer.echo(for_terminal(f"{s.name:<{width}}  {value}  [{s.source}]"))
        for line in textwrap.wrap(s.description, DESCRIPTION_WIDTH, break_on_hyphens=False):
            typer.echo(for_terminal(f"    {line}"))  # a profile's row names it


@app.command("init")
def init(ctx: typer.Context,
         path: Path | None = typer.Argument(None, help="Where to write it (default: --config, RAGPG_CONFIG or the "
                                            "user config dir)."),
         force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
         json_out: bool = typer.Option(False, "--json", help="Print the path written as JSON.")) -> None:
    """Write a config file with every setting at its default, commented out below what it does (never overwrites without --force)."""
    from ragpg_cli.config_init import write_config_file

    written = write_config_file(path or _path(ctx), force=force)
    if json_out:
        print_json({"config_file": str(written)})
    else:
        info(f"wrote {written}; edit it, then check with `ragpg config show`")
