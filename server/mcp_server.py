"""The MCP server: the tools of `mcp_tools` and the notes as resources, on the SDK's low-level `Server`.

Explicit handlers (rather than the SDK's decorator server) keep three things in this module's hands:
every call gets the caller's scope from its `Gate` (a fixed one on stdio, the request's API key on
/mcp), a failure is a tool result with `isError` whose text is the line the CLI prints for the same
error (`error: ...`), and the resource listing is the notes the caller may read, page by page.
A failed call never ends the session: the next call is served as if nothing happened.

Resources: every note the caller may read is a resource `ragpg://vault/path` (resources/list pages
through them; a template says the form), read from the index like read_note.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, get_args, get_origin

import anyio
import anyio.to_thread
import mcp_types as types
import psycopg
import yaml
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

import rag
from rag.access import Scope
from rag.config import Settings
from rag.errors import AuthError, InputError, NotFoundError, RagError
from rag.retrieval import documents
from rag.runtime import Runtime
from rag.store.database import Connection
from ragpg_server import mcp_results as out
from ragpg_server.mcp_tools import DESCRIPTIONS_FILE, TOOLS, Caller, ToolSpec, descriptions

log = logging.getLogger("ragpg.mcp")

T = TypeVar("T")
SERVER_NAME = "ragpg"
NOTE_MIME_TYPE = "text/markdown"
READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                  open_world_hint=False)


class Gate(Protocol):
    """How a call reaches the library: under whose scope, in which worker thread, after which admission."""

    async def run(self, ctx: ServerRequestContext[Any, Any], work: Callable[[Caller], T], *,
                  uses_llm: bool = False) -> T: ...


class LocalGate:
    """`ragpg mcp` on stdio: the scope chosen at start, calls one at a time in a worker thread (an
    assistant's calls are sequential; the runtime's pool stays small). With `recheck` (a key was
    given) the scope is worked out again before every call, so a key revoked meanwhile stops working
    at once, as on /mcp."""

    def __init__(self, runtime: Runtime, scope: Scope,
                 recheck: Callable[[Connection], Scope] | None = None) -> None:
        self.runtime = runtime
        self.scope = scope
        self.recheck = recheck
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, ctx: ServerRequestContext[Any, Any], work: Callable[[Caller], T], *,
                  uses_llm: bool = False) -> T:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(lambda: work(self._caller()), limiter=self._limiter)

    def _caller(self) -> Caller:
        scope = self.scope
        if self.recheck is not None:
            with self.runtime.connection() as conn:
                scope = self.recheck(conn)
        return Caller(scope, self.runtime, uuid.uuid4().hex)


def error_line(exc: BaseException) -> str:
    """The line `ragpg` prints for this error (ragpg_cli.main): every door says the same."""
    if isinstance(exc, RagError):
        return f"error: {exc}"
    if isinstance(exc, psycopg.Error):
        first = str(exc).strip().splitlines()
        return f"error: database error: {first[0] if first else type(exc).__name__}"
    return "error: internal error (the server's log has the details)"


def _tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _wants_json(annotation: Any) -> bool:
    return any(get_origin(a) in (list, dict) for a in (annotation, *get_args(annotation)))


def parse_arguments(model: type[BaseModel], arguments: Mapping[str, Any]) -> BaseModel:
    """The arguments as `model`. A list or object sent as JSON text (some desktop clients do) is read
    as JSON; anything else must have the schema's type already."""
    given = dict(arguments)
    for name, value in given.items():
        field = model.model_fields.get(name)
        if field is not None and isinstance(value, str) and value.lstrip()[:1] in ("[", "{") \
                and _wants_json(field.annotation):
            try:
                given[name] = json.loads(value)
            except ValueError:
                pass  # left as text: the type check below names the argument
    return model.model_validate(given)


def describe_invalid(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line naming the first argument that does not fit the tool's input schema."""
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err.get("loc", ())) or "arguments"
    kind = err.get("type", "")
    if kind == "missing":
        return f"error: '{where}' is required"
    if kind == "extra_forbidden":
        return f"error: unknown argument '{where}' (arguments: {', '.join(model.model_fields) or 'none'})"
    return f"error: invalid '{where}': {err.get('msg', 'invalid value')}"


def _protocol_error(exc: BaseException) -> MCPError:
    """A resource request's failure as a JSON-RPC error (resources have no isError result)."""
    if isinstance(exc, MCPError):
        return exc
    if isinstance(exc, NotFoundError | InputError | AuthError):  # the caller's to fix: a wrong or hidden URI
        return MCPError(code=types.INVALID_PARAMS, message=str(exc))
    if not isinstance(exc, RagError | psycopg.Error):
        log.error("resource request failed", exc_info=exc)
    return MCPError(code=types.INTERNAL_ERROR, message=error_line(exc).removeprefix("error: "))


def _cursor(after: documents.NoteEntry) -> str:
    return base64.urlsafe_b64encode(json.dumps([after.vault, after.source_path]).encode()).decode()


def _after(cursor: str | None) -> tuple[str, str] | None:
    if cursor is None:
        return None
    try:
        vault, path = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if isinstance(vault, str) and isinstance(path, str):
            return vault, path
    except (ValueError, TypeError, binascii.Error):
        pass
    raise MCPError(code=types.INVALID_PARAMS, message="invalid cursor: pass the nextCursor of the previous page")


class NotesServer:
    """The handlers, over one gate."""

    def __init__(self, settings: Settings, gate: Gate) -> None:
        self.settings = settings
        self.gate = gate
        self.instructions, tool_text = descriptions(settings)
        self.truncated_notice = str(yaml.safe_load(DESCRIPTIONS_FILE.read_text(encoding="utf-8"))["truncated_resource"])
        self.specs = {spec.name: spec for spec in TOOLS}
        self.tools = [types.Tool(name=spec.name, title=spec.title, description=tool_text[spec.name],
                                 input_schema=spec.arguments.model_json_schema(),
                                 output_schema=spec.result.model_json_schema(), annotations=READ_ONLY)
                      for spec in TOOLS]

    async def list_tools(self, ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(self, ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = self.specs.get(params.name)
        if spec is None:
            return _tool_error(f"error: unknown tool '{params.name}' (tools: {', '.join(self.specs)})")
        try:
            args = parse_arguments(spec.arguments, params.arguments or {})
        except ValidationError as exc:
            return _tool_error(describe_invalid(exc, spec.arguments))
        try:
            result = await self.gate.run(ctx, lambda caller: _traced(spec, caller, args), uses_llm=spec.uses_llm)
        except Exception as exc:  # noqa: BLE001 - every failure is a tool error; the session goes on
            if not isinstance(exc, RagError | psycopg.Error):
                log.error("tool %s failed", spec.name, exc_info=exc)
            return _tool_error(error_line(exc))
        data = result.model_dump(mode="json")
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
                                    structured_content=data)

    async def list_resources(self, ctx: ServerRequestContext[Any, Any],
                             params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        after = _after(params.cursor if params else None)
        page = self.settings.mcp.resources_page_size

        def work(c: Caller) -> list[documents.NoteEntry]:
            with c.runtime.connection(scope=c.scope, read=True) as conn:
                return documents.list_notes(conn, scope=c.scope, after=after, limit=page + 1)

        try:
            entries = await self.gate.run(ctx, work)
        except Exception as exc:  # noqa: BLE001
            raise _protocol_error(exc) from None
        listed = [out.listed_note(e) for e in entries[:page]]
        return types.ListResourcesResult(
            resources=[types.Resource(uri=n.uri, name=n.path, title=n.title or n.path, mime_type=NOTE_MIME_TYPE,
                                      description=f"Note {n.path} in vault {n.vault}") for n in listed],
            next_cursor=_cursor(entries[page - 1]) if len(entries) > page else None)

    async def list_resource_templates(self, ctx: ServerRequestContext[Any, Any],
                                      params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=out.URI_TEMPLATE, name="note", title="A note", mime_type=NOTE_MIME_TYPE,
            description="A note of a vault by its path (as the tools return it), read from the index.")])

    async def read_resource(self, ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        max_chars = self.settings.mcp.read_max_chars

        def work(c: Caller) -> out.NoteText:
            vault, path = out.parse_note_uri(params.uri)
            with c.runtime.connection(scope=c.scope, read=True) as conn:
                return out.note_text(documents.read_passages(conn, vault, path, scope=c.scope), max_chars)

        try:
            note = await self.gate.run(ctx, work)
        except Exception as exc:  # noqa: BLE001
            raise _protocol_error(exc) from None
        text = note.text
        if note.truncated:
            text += "\n" + self.truncated_notice.format(line=note.next_start_line, vault=note.vault, path=note.path)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=text,
                                                                             mime_type=NOTE_MIME_TYPE)])


def _traced(spec: ToolSpec, caller: Caller, args: BaseModel) -> BaseModel:
    """The retrieval entry points open the call's `rag:root` span; the other tools get one here."""
    if spec.traced_by_library:
        return spec.work(caller, args)
    with caller.runtime.tracer.root(request_id=caller.request_id, query=f"mcp {spec.name}", mode=spec.name):
        return spec.work(caller, args)


def build_server(settings: Settings, gate: Gate) -> Server[Any]:
    notes = NotesServer(settings, gate)
    return Server(SERVER_NAME, version=rag.__version__, title="ragpg: your notes", instructions=notes.instructions,
                  on_list_tools=notes.list_tools, on_call_tool=notes.call_tool, on_list_resources=notes.list_resources,
                  on_list_resource_templates=notes.list_resource_templates, on_read_resource=notes.read_resource)
