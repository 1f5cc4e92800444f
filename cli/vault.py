"""`ragpg vault`: register, list and remove vaults (folders of notes, or BEIR datasets)."""

from __future__ import annotations

from pathlib import Path

import typer

from rag.store.locate import connect
from rag.store.vaults import NewVault, VaultSummary, list_vaults, register_vault, remove_vault
from ragpg_cli.app import info, print_json, say, state
from ragpg_cli.terminal import for_terminal

app = typer.Typer(help="Register, list and remove vaults: folders of notes, or BEIR datasets.",
                  no_args_is_help=True)

JSON_HELP = "Print machine-readable JSON."


@app.command("add")
def add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Vault name: letters, digits, '_', '.', '-'."),
    path: Path = typer.Argument(..., help="Folder holding the notes (.md, .markdown, .txt)."),
    denylist: list[str] = typer.Option([], "--denylist", help="Glob of paths to leave out (repeatable), "
                                       "e.g. 'private/**' or '*.draft.md'."),
    text_search_config: str = typer.Option("english", "--text-search-config",
                                           help="PostgreSQL text search configuration for BM25."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Register a folder of notes as a vault (index it with `ragpg index NAME`). Adding the same vault again changes nothing."""
    new = NewVault(name=name, path=path, denylist=denylist, text_search_config=text_search_config)
    _add(ctx, new, json_out)


@app.command("add-beir")
def add_beir(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Vault name: letters, digits, '_', '.', '-'."),
    directory: Path = typer.Argument(..., help="BEIR dataset folder holding corpus.jsonl."),
    text_search_config: str = typer.Option("english", "--text-search-config",
                                           help="PostgreSQL text search configuration for BM25."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Register a BEIR dataset (corpus.jsonl: one document per entry); load it with `ragpg index NAME`."""
    new = NewVault(name=name, path=directory, kind="beir", text_search_config=text_search_config)
    _add(ctx, new, json_out)


def _add(ctx: typer.Context, new: NewVault, json_out: bool) -> None:
    with connect(state(ctx).settings, autocommit=True) as conn:
        added = register_vault(conn, new)
    vault = added.vault
    if json_out:
        print_json({"name": vault.name, "path": vault.root_path, "kind": vault.kind,
                    "text_search_config": vault.text_search_config, "denylist": vault.denylist,
                    "created": added.created})
    elif added.created:
        say(f"Added vault '{vault.name}' ({vault.kind}) at {vault.root_path}.")
        info(f"Index it with: ragpg index {vault.name}")
    else:
        say(f"Vault '{vault.name}' ({vault.kind}) is already registered at {vault.root_path}; nothing changed.")


@app.command("list")
def list_(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """List vaults with their document and chunk counts and when they were last indexed."""
    with connect(state(ctx).settings, autocommit=True) as conn:
        vaults = list_vaults(conn)
    if json_out:
        print_json([v.to_dict() for v in vaults])
        return
    if not vaults:
        say("No vaults yet. Add one with: ragpg vault add NAME PATH")
        return
    for line in _table(vaults):
        say(line)


def _table(vaults: list[VaultSummary]) -> list[str]:
    rows = [("NAME", "PATH", "DOCUMENTS", "CHUNKS", "LAST INDEXED")]
    for v in vaults:
        when = v.last_indexed_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if v.last_indexed_at else "never"
        # made inert before the widths are measured, so the columns line up as printed
        rows.append((v.name, for_terminal(v.root_path), str(v.documents), str(v.chunks), when))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


@app.command("remove")
def remove(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The vault to remove."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Remove a vault and everything indexed from it (the files on disk are not touched)."""
    with connect(state(ctx).settings, autocommit=True) as conn:
        gone = remove_vault(conn, name)
    if json_out:
        print_json({"removed": gone.name, "documents": gone.documents, "chunks": gone.chunks})
    else:
        say(f"Removed vault '{gone.name}' ({gone.documents} documents, {gone.chunks} chunks).")
