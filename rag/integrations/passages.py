"""What the framework retrievers hand their framework, built once for both: `compute_context` in
process (a `Runtime`) or `POST /v1/context` over HTTP (an API key), then the first `k` passages.

Which passages: the chunks whose text is in the budgeted context (`used`: ranked, deduplicated and
cut by `budget_tokens`), best rank first, the first `k`. A passage the budget left out is not
returned, so every passage has the citation marker of the block that quotes it; fewer than `k` come
back when fewer fit. Over HTTP the context response names its chunks without their text, so each
passage's text is fetched by its reference (`GET /v1/chunks/...`, under the same key's scope).

Nothing here imports a framework. Errors are ragpg's (rag.errors) with ragpg's one-line message;
over HTTP the server's error envelope is turned back into the same classes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rag.access import Scope
from rag.context.result import ContextChunk, ContextPayload
from rag.errors import (
    AdmissionError,
    AuthError,
    ConflictError,
    DatabaseError,
    EmbeddingError,
    InputError,
    NotFoundError,
    RagError,
)
from rag.obsidian import render_text
from rag.types import Mode

if TYPE_CHECKING:
    import httpx

    from rag.runtime import Runtime

# How long the HTTP client waits for the server (connect, read): a context call may route through
# the LLM (HyDE, rewrite), bounded on the server by llm.deadline_s (20 s by default) plus retrieval.
HTTP_TIMEOUT_S = 60.0

# HTTP status -> the ragpg error the server mapped to it (ragpg_server.errors, the inverse)
_ERROR_BY_STATUS: Mapping[int, type[RagError]] = {
    400: InputError, 401: AuthError, 403: AuthError, 404: NotFoundError, 409: ConflictError,
    413: InputError, 422: InputError, 429: AdmissionError, 502: EmbeddingError, 503: DatabaseError,
}


@dataclass(frozen=True)
class ContextQuery:
    """The arguments of one `compute_context` call, but the query."""

    vaults: Sequence[str] | None = None
    filters: Mapping[str, Any] | None = None
    profile: str = "chat"
    mode: Mode = "auto"
    budget_tokens: int = 4000

    def body(self, query: str) -> dict[str, Any]:
        """The JSON body of POST /v1/context (the server fills what is left out)."""
        out: dict[str, Any] = {"query": query, "profile": self.profile, "mode": self.mode,
                               "budget_tokens": self.budget_tokens}
        if self.vaults is not None:
            out["vaults"] = list(self.vaults)
        if self.filters is not None:
            out["filters"] = dict(self.filters)
        return out


@dataclass(frozen=True)
class Passage:
    """One passage of the context: its text as the reader sees it, where it is, how it scored."""

    text: str
    chunk: ContextChunk
    title: str | None
    citation_marker: str | None

    def metadata(self) -> dict[str, Any]:
        c = self.chunk
        return {"ref": c.ref, "vault": c.vault, "source_path": c.source_path, "title": self.title,
                "heading_path": c.heading_path, "ordinal": c.ordinal, "start_line": c.start_line,
                "end_line": c.end_line, "rank": c.rank, "citation_marker": self.citation_marker,
                "score": c.scores.final, "scores": _scores(c)}


@dataclass(frozen=True)
class Retrieved:
    """One call's result: the whole context payload (context, citations, decision) and the passages."""

    payload: ContextPayload
    passages: list[Passage] = field(default_factory=list)


def _scores(c: ContextChunk) -> dict[str, Any]:
    data = asdict(c.scores)
    data["weights_applied"] = dict(c.scores.weights_applied)
    return data


def _first_used(payload: ContextPayload, k: int) -> list[ContextChunk]:
    """The first k used chunks by rank (k=0: none, for callers that want only the context)."""
    if k < 0:
        raise InputError(f"k must be at least 0, got {k}")
    return sorted(payload.used, key=lambda c: c.rank)[:k]


def _citation_of(payload: ContextPayload, ref: str) -> tuple[str | None, str | None]:
    """(marker, title) of the context block quoting `ref`."""
    for cit in payload.citations:
        if ref in cit.chunk_refs:
            return cit.marker, cit.title
    return None, None


def _passage(payload: ContextPayload, chunk: ContextChunk, text: str, title: str | None) -> Passage:
    marker, block_title = _citation_of(payload, chunk.ref)
    return Passage(text=text, chunk=chunk, title=block_title or title, citation_marker=marker)


def retrieve_local(query: str, ask: ContextQuery, k: int, *, runtime: Runtime | None = None,
                   scope: Scope | None = None) -> Retrieved:
    """compute_context in this process (the runtime's database, the scope's vaults and clearance)."""
    from rag.compute import compute_context

    result = compute_context(query, vaults=ask.vaults, filters=ask.filters, profile=ask.profile, mode=ask.mode,
                             budget_tokens=ask.budget_tokens, runtime=runtime, scope=scope)
    payload = result.payload()
    texts = {r.candidate.ref: render_text(r.candidate.content) for r in result.used}
    return Retrieved(payload, [_passage(payload, c, texts[c.ref], None) for c in _first_used(payload, k)])


async def aretrieve_local(query: str, ask: ContextQuery, k: int, *, runtime: Runtime | None = None,
                          scope: Scope | None = None) -> Retrieved:
    """retrieve_local in a worker thread, never blocking the event loop."""
    import functools

    import anyio

    return await anyio.to_thread.run_sync(functools.partial(retrieve_local, query, ask, k, runtime=runtime,
                                                            scope=scope))


# -- over HTTP --------------------------------------------------------------------------------------

def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _chunk_path(c: ContextChunk) -> str:
    return f"/v1/chunks/{quote(c.vault, safe='')}/{quote(c.source_path, safe='/')}/{c.ordinal}"


def raise_for_error(response: httpx.Response) -> None:
    """A ragpg error with the server's one-line message when the response is not a success."""
    if response.is_success:
        return
    try:
        message = str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {response.status_code} from {response.request.url}"
    raise _ERROR_BY_STATUS.get(response.status_code, RagError)(message)


def _payload(response: httpx.Response) -> ContextPayload:
    raise_for_error(response)
    return ContextPayload.model_validate(response.json())


def _fetched(payload: ContextPayload, chunk: ContextChunk, response: httpx.Response) -> Passage:
    raise_for_error(response)
    record = response.json()
    return _passage(payload, chunk, str(record["text"]), record.get("title"))


def retrieve_http(query: str, ask: ContextQuery, k: int, *, client: httpx.Client,
                  api_key: str | None = None) -> Retrieved:
    """POST /v1/context on `client`'s base URL, then each passage's text by its reference."""
    headers = _headers(api_key)
    payload = _payload(client.post("/v1/context", json=ask.body(query), headers=headers))
    chunks = _first_used(payload, k)
    return Retrieved(payload, [_fetched(payload, c, client.get(_chunk_path(c), headers=headers)) for c in chunks])


async def aretrieve_http(query: str, ask: ContextQuery, k: int, *, client: httpx.AsyncClient,
                         api_key: str | None = None) -> Retrieved:
    """retrieve_http on an async client; the passages' texts are fetched at once."""
    headers = _headers(api_key)
    payload = _payload(await client.post("/v1/context", json=ask.body(query), headers=headers))
    chunks = _first_used(payload, k)
    responses = await asyncio.gather(*(client.get(_chunk_path(c), headers=headers) for c in chunks))
    return Retrieved(payload, [_fetched(payload, c, r) for c, r in zip(chunks, responses, strict=True)])
