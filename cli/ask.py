"""`ragpg ask` and `ragpg search`: questions and searches over indexed notes vaults.

Human output speaks the reader's language: an answer and the files it comes from, never scores
or retrieval terms. `--json` prints the structured response; `--debug` adds every candidate
considered and the folder selection (to stderr in human mode, inside the JSON with `--json`).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import typer

from ragpg_cli.app import print_json, state
from ragpg_cli.terminal import for_terminal, json_for_terminal

# The notes pipeline (numpy, litellm, ...) loads when `ask`/`search` runs, not at every `ragpg` start.
if TYPE_CHECKING:
    from rag.notes.ask import AskResponse, Reference, SearchItem, SearchResponse
    from rag.notes.results import Detail

log = logging.getLogger(__name__)

VAULT_HELP = "Only this vault (repeatable). Default: every vault."
FOLDER_HELP = "Look in this folder first: `folder` or `vault/folder` (repeatable)."
LOW_CONFIDENCE_NOTE = "Your notes match this question only loosely, so check the sources below."


def _runtime(ctx: typer.Context):
    from rag.runtime import Runtime

    return Runtime.from_settings(state(ctx).settings, pool_max_size=2)


def ask_command(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="Your question, in quotes."),
    vault: list[str] = typer.Option([], "--vault", help=VAULT_HELP),
    folder: list[str] = typer.Option([], "--folder", help=FOLDER_HELP),
    detail: str = typer.Option("normal", "--detail", help="How thorough the answer is: brief, normal or detailed."),
    k: int | None = typer.Option(None, "--k", help="How many note passages to draw on (3-8; default: automatic)."),
    json_out: bool = typer.Option(False, "--json", help="Print the structured response as JSON."),
    debug: bool = typer.Option(False, "--debug", help="Also show every candidate and number considered."),
    explain: bool = typer.Option(False, "--explain", help="Also explain in plain words how the answer was found: "
                                 "folders searched, best passages and where each came from, why it answered."),
) -> None:
    """Answer a question from your notes, with the files it comes from."""
    from rag.notes.ask import ask
    from rag.notes.explain import explain_lines

    rt = _runtime(ctx)
    try:
        response = ask(question, vaults=vault, folders=folder, k=k, detail=cast("Detail", detail),
                       debug=debug or explain, runtime=rt)  # ask refuses a detail it does not know
    finally:
        rt.close()
    explanation = explain_lines(response.debug) if explain else []
    if json_out:
        out = response.to_dict() if debug else {k_: v for k_, v in response.to_dict().items() if k_ != "debug"}
        print_json({**out, "explanation": explanation} if explain else out)
        return
    typer.echo(for_terminal(render_answer(response)))
    if explanation:
        lines = (line if line.startswith(" ") else f"- {line}" for line in explanation)
        typer.echo(for_terminal("\n".join(["", "Why this answer:", *lines])))
    if debug and response.debug is not None:  # the full numbers, to stderr
        sys.stderr.write(json_for_terminal(json.dumps(response.debug.model_dump(mode="json"), indent=2,
                                                      ensure_ascii=False)) + "\n")


def search_command(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for, in quotes."),
    vault: list[str] = typer.Option([], "--vault", help=VAULT_HELP),
    folder: list[str] = typer.Option([], "--folder", help="Only this folder: `folder` or `vault/folder` (repeatable)."),
    k: int = typer.Option(10, "--k", help="How many notes to show (with --passages: how many passages)."),
    passages: bool = typer.Option(False, "--passages",
                                  help="List the best passages one by one instead of the best notes."),
    json_out: bool = typer.Option(False, "--json", help="Print the ranked results as JSON."),
) -> None:
    """Find the notes that match a query, each with its best passages."""
    from rag.notes.ask import search

    rt = _runtime(ctx)
    try:
        response = search(query, vaults=vault, folders=folder, k=k, by="passage" if passages else "note",
                          runtime=rt)
    finally:
        rt.close()
    if json_out:
        print_json(response.to_dict())
        return
    typer.echo(for_terminal(render_search(response)))


# -- rendering ----------------------------------------------------------------------------------

def _location(r: Reference) -> str:
    return f" ({r.location})" if r.location else ""


def distinct(references: Iterable[Reference]) -> list[Reference]:
    """One reference per (vault, source, location), in order."""
    seen: set[tuple[str, str, str | None]] = set()
    out = []
    for r in references:
        if (r.vault, r.source_path, r.lines) not in seen:
            seen.add((r.vault, r.source_path, r.lines))
            out.append(r)
    return out


def source_lines(references: Iterable[Reference], *, numbered: bool = False) -> list[str]:
    """`- file.md — Heading › Section (lines 12-28)` (or `[1] file.md ...`), one per distinct (source,
    location), with the heading as the reader sees it (`--explain` and the web page word it alike); the
    vault is named when several."""
    refs = distinct(references)
    several = len({r.vault for r in refs}) > 1
    lines = []
    for n, r in enumerate(refs, start=1):
        name = f"{r.vault}: {r.source_path}" if several else r.source_path
        heading = f" — {r.heading}" if r.heading else ""
        lines.append(f"{f'[{n}]' if numbered else '-'} {name}{heading}{_location(r)}")
    return lines


def render_answer(response: AskResponse) -> str:
    """The answer and its Sources. Each citation of the answer, quoted or written by an LLM, is shown as the
    number of its source in the list (`[1]`), as the web page shows it."""
    from rag.notes.citations import cite_label, numbered

    parts = ["Answer:"]
    if response.notice:
        parts.append(f"({response.notice})")
    if response.confidence == "low" and not response.abstained:
        parts.append(f"({LOW_CONFIDENCE_NOTE})")
    labels = [cite_label(r.source_path, r.heading_path) for r in distinct(response.references)]
    parts.append(response.answer if response.abstained else numbered(response.answer, labels))
    sources = source_lines(response.references, numbered=not response.abstained)
    if sources:
        parts += ["", "Sources:", *sources]
    return "\n".join(parts)


def render_search(response: SearchResponse) -> str:
    if not response.items:
        return "Nothing in your notes matches this search."
    several = len({i.vault for i in response.items}) > 1
    out = []
    if response.by == "passage":
        for n, item in enumerate(response.items, start=1):
            out.append(f"{n}. {_note_name(item, several)}{_where(item)}")
            out.append(f"   {item.snippet}")
        return "\n".join(out)
    for n, note in enumerate(response.notes, start=1):
        out.append(f"{n}. {_note_name(note.passages[0], several)}")
        for item in note.passages:
            out.append(f"   -{_where(item) or ' (top of the note)'}")
            out.append(f"     {item.snippet}")
    return "\n".join(out)


def _note_name(item: SearchItem, several_vaults: bool) -> str:
    return f"{item.vault}: {item.source_path}" if several_vaults else item.source_path


def _where(item: SearchItem) -> str:
    """` Project Heron › Timeline (lines 3-9)`, ` (p. 3)`: the passage's heading and location (rag.places)."""
    where = f" {item.heading}" if item.heading else ""
    return where + (f" ({item.location})" if item.location else "")
