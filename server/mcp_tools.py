"""The MCP tools: their arguments (the `inputSchema`), their descriptions and the work each does.

Every tool calls ONE public entry point of the library with the caller's scope, which the library
applies inside the SQL: `rag.search`, `rag.ask`, `rag.compute_context`, the vault listing and folder
outline the HTTP routes use, and a note's stored passages (`rag.retrieval.documents`, scoped like
GET /v1/chunks). Arguments left out are left to the library's defaults, and the library checks
every value (an empty query, k out of range, an unknown vault, a bad filter): its message is the
tool error, word for word what the CLI prints. Results go through `mcp_results`, the one adapter.

Descriptions live in mcp_descriptions.yaml (text a model reads stays out of .py files).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

import rag
from rag.access import Scope, levels_up_to
from rag.config import Settings
from rag.notes.browse import vault_outline
from rag.notes.question import DETAILS
from rag.notes.settings import notes_settings
from rag.retrieval import documents, related
from rag.runtime import Runtime
from rag.store import vaults as vault_store
from rag.types import MODES
from ragpg_server import mcp_results as out

DESCRIPTIONS_FILE = Path(__file__).resolve().parent / "mcp_descriptions.yaml"

VAULTS_HELP = "Only these vaults (names from list_vaults). Default: every vault this connection may read."
FOLDERS_HELP = "Only these folders and their subfolders: 'folder' or 'vault/folder'."


@dataclass(frozen=True)
class Caller:
    """Who a tool call runs for: the scope the library enforces, the runtime, the request id."""

    scope: Scope
    runtime: Runtime
    request_id: str


# -- arguments ------------------------------------------------------------------------------------
# Types only: the values are the library's to check, so every door gives the same message. `enum`
# is advertised in the schema for fixed choices without being enforced here for the same reason.

class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SearchNotesArgs(_Args):
    query: str = Field(description="What to look for: keywords or a question.")
    vaults: list[str] | None = Field(None, description=VAULTS_HELP)
    folders: list[str] | None = Field(None, description=FOLDERS_HELP)
    k: int | None = Field(None, description="How many notes (or passages, by passage) to return (default 10).")
    by: Literal["note", "passage"] | None = Field(
        None, description="'note' (default): the best notes, each with its best passages; 'passage': the best "
                          "passages one by one.")


class AskNotesArgs(_Args):
    question: str = Field(description="The question, in the user's words.")
    vaults: list[str] | None = Field(None, description=VAULTS_HELP)
    folders: list[str] | None = Field(None, description=FOLDERS_HELP)
    detail: str | None = Field(None, description="How thorough the answer is (default normal).",
                               json_schema_extra={"enum": list(DETAILS)})


class GetContextArgs(_Args):
    query: str = Field(description="What the context is for: the user's question or a search query.")
    vaults: list[str] | None = Field(None, description=VAULTS_HELP)
    filters: dict[str, Any] | None = Field(None, description="Metadata filter, e.g. {\"folder\": {\"$prefix\": "
                                           "\"projects/\"}}; see the tool's description.")
    profile: str | None = Field(None, description="Retrieval profile (default chat).")
    mode: str | None = Field(None, description="Retrieval mode (default auto).",
                             json_schema_extra={"enum": list(MODES)})
    budget_tokens: int | None = Field(None, description="Most tokens the context may hold (default 4000).")


_NOTE_PATH = ("The note: its path in its vault as the other tools return it, or that path without .md, its "
              "file name or an alias.")


class ReadNoteArgs(_Args):
    vault: str = Field(description="The note's vault.")
    path: str = Field(description=_NOTE_PATH)
    start_line: int | None = Field(None, description="First line to read (1-based). Default: the start.")
    end_line: int | None = Field(None, description="Last line to read (inclusive). Default: the end.")


class RelatedNotesArgs(_Args):
    vault: str = Field(description="The note's vault.")
    path: str = Field(description=_NOTE_PATH)
    k: int | None = Field(None, description="How many notes to list, 1 to 1000 (default notes.related_k).")


class ListVaultsArgs(_Args):
    pass


class ListFoldersArgs(_Args):
    vault: str = Field(description="The vault (a name from list_vaults).")


# -- the work -------------------------------------------------------------------------------------

def _given(args: BaseModel, *names: str) -> dict[str, Any]:
    """The named arguments the caller gave (None = left to the library's default)."""
    return {name: value for name in names if (value := getattr(args, name)) is not None}


def search_notes(c: Caller, args: SearchNotesArgs) -> out.SearchNotesResult:
    response = rag.search(args.query, **_given(args, "vaults", "folders", "k", "by"), runtime=c.runtime, scope=c.scope,
                          request_id=c.request_id)
    return out.search_result(response)


def ask_notes(c: Caller, args: AskNotesArgs) -> out.AskNotesResult:
    response = rag.ask(args.question, **_given(args, "vaults", "folders", "detail"), runtime=c.runtime,
                       scope=c.scope, request_id=c.request_id)
    return out.ask_result(response)


def get_context(c: Caller, args: GetContextArgs) -> out.GetContextResult:
    result = rag.compute_context(args.query, **_given(args, "vaults", "filters", "profile", "mode", "budget_tokens"),
                                 runtime=c.runtime, scope=c.scope, request_id=c.request_id)
    return out.context_result(result)


def read_note(c: Caller, args: ReadNoteArgs) -> out.NoteText:
    with c.runtime.connection(scope=c.scope, read=True) as conn:
        note = documents.read_passages(conn, args.vault, args.path, scope=c.scope, start_line=args.start_line,
                                       end_line=args.end_line)
    return out.note_text(note, c.runtime.settings.mcp.read_max_chars)


def related_notes(c: Caller, args: RelatedNotesArgs) -> out.RelatedNoteList:
    k = c.runtime.settings.notes.related_k if args.k is None else args.k
    with c.runtime.connection(scope=c.scope, read=True) as conn:
        return out.related_list(related.related_notes(conn, args.vault, args.path, k=k, scope=c.scope))


def list_vaults(c: Caller, args: ListVaultsArgs) -> out.VaultList:
    with c.runtime.connection(scope=c.scope, read=True) as conn:
        summaries = vault_store.list_vaults(conn, readable_levels=levels_up_to(c.scope.clearance))
    return out.vault_list([s for s in summaries if c.scope.allows_vault(s.name)])


def list_folders(c: Caller, args: ListFoldersArgs) -> out.FolderList:
    c.scope.check_vaults([args.vault])  # a vault outside the scope is refused, as on GET /v1/vaults/{v}/folders
    with c.runtime.connection(scope=c.scope, read=True) as conn:
        return out.folder_list(vault_outline(conn, args.vault, c.scope))


# -- the tools ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    arguments: type[_Args]
    result: type[BaseModel]
    work: Callable[[Caller, Any], BaseModel]
    # The retrieval entry points open their own `rag:root` span; the others get one around the call.
    traced_by_library: bool = False
    # May wait on the LLM (when one is configured): runs in the server's LLM lane (server.llm_concurrency).
    uses_llm: bool = False


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("search_notes", "Search notes", SearchNotesArgs, out.SearchNotesResult, search_notes, True),
    ToolSpec("ask_notes", "Ask the notes", AskNotesArgs, out.AskNotesResult, ask_notes, True, uses_llm=True),
    ToolSpec("get_context", "Cited context for a query", GetContextArgs, out.GetContextResult, get_context, True,
             uses_llm=True),
    ToolSpec("read_note", "Read a note", ReadNoteArgs, out.NoteText, read_note),
    ToolSpec("related_notes", "Notes related to a note", RelatedNotesArgs, out.RelatedNoteList, related_notes),
    ToolSpec("list_vaults", "List vaults", ListVaultsArgs, out.VaultList, list_vaults),
    ToolSpec("list_folders", "List a vault's folders", ListFoldersArgs, out.FolderList, list_folders),
)


def descriptions(settings: Settings) -> tuple[str, dict[str, str]]:
    """(the server's instructions, each tool's description), with the settings' numbers filled in."""
    raw = yaml.safe_load(DESCRIPTIONS_FILE.read_text(encoding="utf-8"))
    values = {"k_max": notes_settings(settings).search_k_max, "read_max_chars": settings.mcp.read_max_chars,
              "related_k": settings.notes.related_k}
    tools = {name: " ".join(str(text).format(**values).split()) for name, text in raw["tools"].items()}
    missing = {t.name for t in TOOLS} - set(tools)
    if missing:
        raise RuntimeError(f"{DESCRIPTIONS_FILE.name} describes no tool {sorted(missing)[0]}")
    return " ".join(str(raw["instructions"]).split()), tools
