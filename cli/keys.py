"""`ragpg keys`: API keys for the HTTP server."""

from __future__ import annotations

import typer

from rag.access import CONFIDENTIALITY_LEVELS
from rag.store import keys as key_store
from rag.store.locate import connect
from ragpg_cli.app import print_json, say, state

app = typer.Typer(help="Create, list and revoke API keys for `ragpg serve`.", no_args_is_help=True)
JSON_HELP = "Print machine-readable JSON."


def _as_dict(k: key_store.ApiKey) -> dict[str, object]:
    return {"name": k.name, "prefix": k.key_prefix, "vaults": "*" if k.all_vaults else k.vaults,
            "clearance": k.clearance, "created_at": k.created_at, "revoked_at": k.revoked_at,
            "last_used_at": k.last_used_at, "can_index": k.can_index}


@app.command()
def create(ctx: typer.Context, name: str = typer.Argument(..., help="A name for the key."),
           vault: list[str] = typer.Option([], "--vault", help="A vault the key may read (repeatable)."),
           all_vaults: bool = typer.Option(False, "--all-vaults", help="The key may read every vault."),
           clearance: str = typer.Option("public", "--clearance",
                                         help=f"Highest confidentiality readable: {', '.join(CONFIDENTIALITY_LEVELS)}."),
           can_index: bool = typer.Option(False, "--index", help="The key may also start index runs (POST /v1/index)."),
           json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Create a key. The key itself is printed once and never stored."""
    with connect(state(ctx).settings) as conn:
        row, plaintext = key_store.create_key(conn, name, vaults=vault, clearance=clearance, all_vaults=all_vaults,
                                              can_index=can_index)
    if json_out:
        print_json({**_as_dict(row), "key": plaintext})
    else:
        typer.echo(plaintext)
        say(f"Key '{name}' created; store it now, it cannot be shown again.", err=True)


@app.command("list")
def list_(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """List keys (prefixes only, never the keys)."""
    with connect(state(ctx).settings) as conn:
        rows = key_store.list_keys(conn)
    if json_out:
        print_json([_as_dict(r) for r in rows])
        return
    if not rows:
        say("No API keys.")
    for r in rows:
        status = "revoked" if r.revoked_at else "active"
        vaults = "all vaults" if r.all_vaults else ", ".join(r.vaults)
        say(f"{r.name}\t{r.key_prefix}…\t{status}\t{r.clearance}\t{vaults}" + ("\tindex" if r.can_index else ""))


@app.command()
def revoke(ctx: typer.Context, name: str = typer.Argument(..., help="The key's name.")) -> None:
    """Revoke a key; requests with it are refused from now on."""
    with connect(state(ctx).settings) as conn:
        key_store.revoke_key(conn, name)
    say(f"Key '{name}' revoked.")
