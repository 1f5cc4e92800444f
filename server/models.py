"""The HTTP contract: the request models, and the responses that only the server gives.

Requests are strict (`extra="forbid"`, no type coercion: `"k": "10"` is an error, not 10). Every
route takes its text as `query`; a field renamed so (`RENAMED_FIELDS`, POST /v1/ask's `question`) is
refused with a message naming the new one, not taken as an alias.
The retrieval responses are rag's own records, declared once (`rag.context.result.ContextPayload`,
`rag.notes.results`, `rag.notes.browse.VaultOutline`, `rag.retrieval.chunks.ChunkRecord`); the
models here list exactly the fields the API promises and refuse any other (`extra="forbid"`), so
a field an internal `to_dict()` grows fails the tests instead of being dropped or leaked.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from rag.arguments import MAX_BUDGET_TOKENS, json_problem, text_problem
from rag.notes.question import DETAILS
from rag.notes.results import AskResponse, SearchBy
from rag.types import Mode

MAX_LIST_ITEMS = 100
VAULT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PROFILE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


def _check_text(value: str) -> str:
    problem = text_problem(value)  # the library's own rule for text, with its words
    if problem is not None:
        raise ValueError(problem)
    return value


def _check_filter(value: dict[str, Any]) -> dict[str, Any]:
    problem = json_problem(value)  # the library's one walk of a filter, with its limits
    if problem is not None:
        raise ValueError(problem)
    return value


Text = Annotated[str, AfterValidator(_check_text)]
# Not blank and at most retrieval.max_query_chars characters: rag checks that (rag.arguments.query_text) → 400.
Query = Annotated[str, AfterValidator(_check_text)]
VaultName = Annotated[str, Field(pattern=VAULT_NAME_PATTERN, description="A vault name.")]
FolderName = Annotated[str, Field(min_length=1, max_length=1024), AfterValidator(_check_text)]
Filter = Annotated[dict[str, Any], AfterValidator(_check_filter)]


# An old field name → the name it was renamed to (refused, with the new name in the message).
RENAMED_FIELDS = {"question": "query"}


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- requests --------------------------------------------------------------------------------

class ContextRequest(_Request):
    query: Query = Field(description="The user's question or search text.")
    vaults: list[VaultName] | None = Field(None, max_length=MAX_LIST_ITEMS,
                                           description="Vaults to search; omitted = every vault the key may read.")
    filters: Filter | None = Field(None, description="A JSONB metadata filter (see docs/sql-console.md).")
    profile: Annotated[str, Field(pattern=PROFILE_NAME_PATTERN)] = "chat"
    mode: Mode = "auto"
    budget_tokens: int = Field(4000, ge=0, le=MAX_BUDGET_TOKENS)


class AskRequest(_Request):
    query: Query = Field(description="The question.")
    vaults: list[VaultName] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    folders: list[FolderName] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    k: int | None = Field(None, ge=1, le=100, description="Chunks to use; clamped to 3-8.")
    detail: Literal[DETAILS] = "normal"  # type: ignore[valid-type]
    debug: bool = False
    explain: bool = Field(False, description="Also return `explanation`: plain-language lines on how the answer "
                          "was found (as `ragpg ask --explain`).")


class SearchRequest(_Request):
    query: Query
    vaults: list[VaultName] | None = Field(None, max_length=MAX_LIST_ITEMS)
    folders: list[FolderName] | None = Field(None, max_length=MAX_LIST_ITEMS)
    k: int = Field(10, ge=1, le=100, description="How many notes (by note) or passages (by passage).")
    filters: Filter | None = None
    by: SearchBy = Field("note", description="'note': the k best notes, each with its best passages; "
                                            "'passage': the k best passages.")


class IndexRequest(_Request):
    vaults: list[VaultName] | None = Field(
        None, max_length=MAX_LIST_ITEMS, description="Registered vaults to index; omitted = every vault the key may read.")


# -- responses -------------------------------------------------------------------------------

class ErrorDetail(_Response):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(_Response):
    error: ErrorDetail


class AskReply(AskResponse):
    """POST /v1/ask: the library's answer, and the plain-language account when asked for."""

    explanation: list[str] | None = Field(default=None, description="Present when the request set explain=true.")


class VaultInfo(_Response):
    name: str
    documents: int
    chunks: int
    last_indexed_at: datetime | None = None


class VaultsResponse(_Response):
    vaults: list[VaultInfo]


class IndexRunResponse(_Response):
    id: str
    status: Literal["queued", "running", "succeeded", "failed", "interrupted"]  # interrupted: a CLI run's Ctrl-C
    vaults: list[str]
    progress: dict[str, Any]
    error: str | None = None
    created_at: datetime
    finished_at: datetime | None = None


class HealthResponse(_Response):
    status: Literal["ok", "unavailable"]
    database: bool
    schema_revision: str | None = None
    schema_head: str | None = None
    schema_current: bool = False
    read_replica: bool | None = Field(None, description="Whether the read replica answers; absent without one.")
    message: str | None = None
