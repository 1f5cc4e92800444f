"""`ragpg related`: the notes linked with one, either way, and the notes closest to it in meaning."""

from __future__ import annotations

from dataclasses import asdict

import typer

from ragpg_cli.app import print_json, say, state


def related_command(
    ctx: typer.Context,
    note: str = typer.Argument(..., help="The note: its path in the vault (\"Plugins/Random note.md\"), that path "
                              "without .md, its file name (\"Random note\") or an alias."),
    vault: str | None = typer.Option(None, "--vault", help="The note's vault. Default: the one vault holding it."),
    k: int | None = typer.Option(None, "--k", help="How many notes to list (1-1000; default notes.related_k)."),
    json_out: bool = typer.Option(False, "--json", help="Print the related notes as JSON."),
) -> None:
    """List the notes related to one: linked to or from it first, then the closest in meaning."""
    from rag.notes.related import related
    from rag.runtime import Runtime

    rt = Runtime.from_settings(state(ctx).settings, pool_max_size=1)
    try:
        found = related(note, vault=vault, k=k, runtime=rt)
    finally:
        rt.close()
    if json_out:
        print_json(asdict(found))
        return
    if not found.related:
        say(f"No note is linked with {note} or close to it in meaning.")
    for r in found.related:
        say(f"{r.source_path}  ({'; '.join(r.reasons)})")
