"""`ragpg embed "text"`: cache a question's embedding so psql's search_hybrid('text') runs its
vector leg (the SQL console has no embedding model of its own)."""

from __future__ import annotations

import typer

from ragpg_cli.app import info, print_json, state


def embed_command(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="The question or search text, exactly as you will type it in psql."),
    json_out: bool = typer.Option(False, "--json", help="Print the model and the embedding as JSON."),
    role: str | None = typer.Option(None, "--role", help="Cache it for this `ragpg db console` role (only it and "
                                    "the owner can read it); default: for the owner."),
) -> None:
    """Embed a question with the configured model and cache it for search_hybrid() in psql."""
    from rag.retrieval.stage import embed_and_cache
    from rag.runtime import Runtime

    rt = Runtime.from_settings(state(ctx).settings, pool_max_size=1)
    try:
        model, embedding = embed_and_cache(rt, text, role=role)
    finally:
        rt.close()
    if json_out:
        print_json({"text": text.strip(), "model": f"{model.provider}/{model.model}", "sql_name": model.sql_name,
                    "dims": int(len(embedding)), "embedding": [round(float(x), 7) for x in embedding]})
        return
    quoted = text.strip().replace("'", "''")
    info(f"cached the embedding of this text for {model.provider}/{model.model} ({len(embedding)} dims); "
         f"in psql: select * from search_hybrid('{quoted}');")
