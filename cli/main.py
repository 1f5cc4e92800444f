"""The `ragpg` command: one place maps the error hierarchy to exit codes (the table in
cli/exit_codes.py) and stderr lines."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
import psycopg
import typer
import typer.exceptions
from typer._click import exceptions as typer_click

from rag.errors import DatabaseError, RagError
from ragpg_cli import ask as ask_cli
from ragpg_cli import config_cmd, db, embed_cmd, keys, mcp_cmd, serve
from ragpg_cli import eval as eval_cli
from ragpg_cli import index as index_cli
from ragpg_cli import related as related_cli
from ragpg_cli import vault as vault_cli
from ragpg_cli.app import CliState
from ragpg_cli.exit_codes import INTERRUPTED, help_epilog
from ragpg_cli.help_format import install as install_help_format
from ragpg_cli.terminal import for_terminal

install_help_format()
app = typer.Typer(
    name="ragpg",
    help="Postgres-native retrieval for RAG: index markdown vaults, search and ask with cited sources.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    epilog=help_epilog(),
)
app.add_typer(db.app, name="db")
app.add_typer(config_cmd.app, name="config")
app.command("ask")(ask_cli.ask_command)
app.command("search")(ask_cli.search_command)
app.command("related")(related_cli.related_command)
app.command("embed")(embed_cmd.embed_command)
app.add_typer(keys.app, name="keys")
app.add_typer(vault_cli.app, name="vault")
app.command("index")(index_cli.index)
app.command("reindex")(index_cli.reindex)
app.command("watch")(index_cli.watch)
app.command("serve")(serve.serve)
app.command("mcp")(mcp_cmd.mcp_command)
app.command("eval")(eval_cli.eval_command)
app.command("eval-beir")(eval_cli.eval_beir_command)


def _print_version(value: bool) -> None:
    if value:
        from ragpg_cli.version import version_line

        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback()
def root(
    ctx: typer.Context,
    config: Path | None = typer.Option(None, "--config", envvar="RAGPG_CONFIG",
                                       help="Config file (TOML). Default: the user config dir."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log diagnostics to stderr."),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the ragpg version and exit."),
) -> None:
    """Postgres-native retrieval for RAG."""
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    ctx.obj = CliState(config_path=config)
    logging.getLogger().setLevel(ctx.obj.log_level(verbose))


def _not_utf8(argv: list[str]) -> str | None:
    """The error line for the first argument that is not UTF-8, or None.

    Python hands such a byte over as a lone surrogate (0xff as U+DCFF); it cannot be stored,
    compared with a name or printed, so every command refuses it before it runs."""
    for position, arg in enumerate(argv, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return (f"error: argument {position} ('{for_terminal(shown)}') is not valid UTF-8; ragpg reads "
                    "arguments as UTF-8 text")
    return None


def main(argv: list[str] | None = None) -> int:
    if (refusal := _not_utf8(sys.argv[1:] if argv is None else argv)) is not None:
        typer.echo(refusal, err=True)
        return 2
    try:
        # Outside standalone mode click returns a typer.Exit's code instead of raising it.
        result = app(args=argv, prog_name="ragpg", standalone_mode=False)
    except RagError as exc:
        typer.echo(for_terminal(f"error: {exc}"), err=True)  # messages name paths and vaults
        return exc.exit_code
    except psycopg.Error as exc:
        # A database error no layer anticipated: still one line, never a traceback.
        first = str(exc).strip().splitlines()
        typer.echo(for_terminal(f"error: database error: {first[0] if first else type(exc).__name__}"), err=True)
        return DatabaseError.exit_code
    except (click.exceptions.Exit, typer.exceptions.Exit) as exc:
        return exc.exit_code
    # typer ≥ 0.29 raises usage errors from its vendored click, not from click itself.
    except (click.ClickException, typer_click.ClickException) as exc:
        exc.show()
        return exc.exit_code
    except (click.exceptions.Abort, typer.exceptions.Abort):
        typer.echo("aborted", err=True)
        return INTERRUPTED
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return INTERRUPTED
    return result if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
