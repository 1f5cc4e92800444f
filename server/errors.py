"""The ONE place mapping ragpg's error hierarchy (and request-parsing failures) to HTTP.

Every error body has the same shape: ``{"error": {"code": "...", "message": "..."}}`` (request
validation errors add ``details``). Status codes:

    InputError → 400          NotFoundError → 404          ConfigError (server side) → 500
    ConflictError → 409       AmbiguousNameError (a note's name fits several) → 409
    Unauthorized → 401        any other AuthError → 403    AdmissionError → 429 + Retry-After
    DatabaseError → 503       EmbeddingError / LLMError → 502
    oversize body → 413       malformed JSON, wrong types, unknown fields → 400

Before the app (pure ASGI, same envelope): a Host the server does not answer to → 421
`misdirected_request`, another site's Origin → 403 `cross_origin_refused` (server/hosts.py); in
uvicorn's protocol, headers or body slower than their deadline → 408 `request_timeout`
(server/protocol.py).

`Unauthorized` (a missing, malformed, invalid or revoked key) is raised only by server/auth.py;
an AuthError raised after authentication (a vault outside the key's scope) is a 403.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rag.errors import (
    AdmissionError,
    AmbiguousNameError,
    AuthError,
    ConfigError,
    ConflictError,
    DatabaseError,
    EmbeddingError,
    InputError,
    LLMError,
    NotFoundError,
    RagError,
)
from ragpg_server.models import PROFILE_NAME_PATTERN, RENAMED_FIELDS, VAULT_NAME_PATTERN

log = logging.getLogger("ragpg.server")

REQUEST_ID_HEADER = "X-Request-ID"
NAME_PATTERNS = frozenset({PROFILE_NAME_PATTERN, VAULT_NAME_PATTERN})


class Unauthorized(AuthError):
    """No usable credentials: missing, malformed, unknown or revoked key → 401."""


class ForbiddenError(AuthError):
    """Valid credentials that do not cover what was asked (vault, clearance) → 403."""


class PayloadTooLarge(InputError):
    """The request body exceeds `server.max_body_bytes` → 413."""


def request_id_of(request: Request) -> str | None:
    state = request.scope.get("state") or {}
    return state.get("request_id")


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if details:
        err["details"] = details
    return {"error": err}


# Most specific first: the first entry the exception is an instance of decides.
_STATUS_BY_ERROR: tuple[tuple[type[BaseException], int, str], ...] = (
    (PayloadTooLarge, 413, "payload_too_large"),
    (Unauthorized, 401, "unauthorized"),
    (AuthError, 403, "forbidden"),
    (AdmissionError, 429, "over_capacity"),
    (AmbiguousNameError, 409, "ambiguous_name"),
    (NotFoundError, 404, "not_found"),
    (ConflictError, 409, "conflict"),
    # A broken server-side setting (e.g. a profile in the config file), not the caller's fault.
    (ConfigError, 500, "server_misconfigured"),
    (InputError, 400, "invalid_input"),
    (DatabaseError, 503, "database_unavailable"),
    (EmbeddingError, 502, "embedding_failed"),
    (LLMError, 502, "llm_failed"),
    (RagError, 500, "internal_error"),
)


def classify(exc: BaseException) -> tuple[int, str, str]:
    """(status, code, message) for an exception; unknown ones are a 500 without internals."""
    for error_type, status, code in _STATUS_BY_ERROR:
        if isinstance(exc, error_type):
            return status, code, str(exc) or type(exc).__name__
    if isinstance(exc, psycopg.OperationalError):
        return 503, "database_unavailable", "database unavailable"
    if isinstance(exc, psycopg.errors.InvalidParameterValue) and str(exc).startswith("invalid filter:"):
        # The SQL filter compiler's documented error (SQLSTATE 22023): the caller's filter is malformed.
        return 400, "invalid_input", str(exc).strip().splitlines()[0]
    return 500, "internal_error", "internal server error"


def error_response(request: Request, exc: BaseException) -> JSONResponse:
    status, code, message = classify(exc)
    rid = request_id_of(request)
    headers: dict[str, str] = {}
    if status in (429, 503):  # both pass: over capacity, or the database is back within a probe interval
        headers["Retry-After"] = str(request.app.state.ragpg.settings.server.retry_after_s)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="ragpg"'
    if status >= 500:
        if code == "internal_error":
            log.error("request %s failed", rid, exc_info=exc)
            message = f"{message} (request id {rid})" if rid else message
        else:
            log.warning("request %s: %s", rid, message)
    if rid:
        headers[REQUEST_ID_HEADER] = rid
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def _field_name(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "path", "query", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def describe_validation_errors(errors: Sequence[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """One clear line naming the first offending field, plus a list of every problem."""
    details: list[dict[str, Any]] = []
    for err in errors:
        loc = err.get("loc", ())
        where = _field_name(loc)
        kind = err.get("type", "")
        if kind == "json_invalid":
            ctx = err.get("ctx") or {}
            msg = f"request body is not valid JSON ({ctx.get('error', 'parse error')})"
            where = "body"
        elif kind == "missing":
            msg = f"'{where}' is required" if where != "body" else "a JSON request body is required"
        elif kind == "extra_forbidden":
            msg = f"unknown field '{where}'"
            if where in RENAMED_FIELDS:
                msg += f": it was renamed '{RENAMED_FIELDS[where]}' (every route takes its text as 'query')"
        elif kind == "model_attributes_type" or (kind == "dict_type" and where == "body"):
            msg = "the request body must be a JSON object (Content-Type: application/json)"
        elif kind == "string_pattern_mismatch" and (err.get("ctx") or {}).get("pattern") in NAME_PATTERNS:
            msg = (f"invalid '{where}': a name is 1-64 letters, digits, '_', '.' or '-', "
                   "starting with a letter or digit")
        else:
            msg = f"invalid '{where}': {err.get('msg', 'invalid value')}"
        details.append({"field": where, "problem": msg, "type": kind})
    # A renamed field explains the rest (the new field is then missing): it is named first.
    details.sort(key=lambda d: not (d["type"] == "extra_forbidden" and d["field"] in RENAMED_FIELDS))
    first = details[0]["problem"] if details else "invalid request"
    extra = f" (and {len(details) - 1} more problem{'s' if len(details) > 2 else ''})" if len(details) > 1 else ""
    return first + extra, details


def install(app: FastAPI) -> None:
    @app.exception_handler(RagError)
    async def _rag_error(request: Request, exc: RagError) -> JSONResponse:
        return error_response(request, exc)

    @app.exception_handler(psycopg.Error)
    async def _db_error(request: Request, exc: psycopg.Error) -> JSONResponse:
        return error_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, details = describe_validation_errors(exc.errors())
        headers = {REQUEST_ID_HEADER: rid} if (rid := request_id_of(request)) else None
        return JSONResponse(error_body("invalid_request", message, details), status_code=400, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.method} {request.url.path}"
        headers = dict(exc.headers or {})
        if rid := request_id_of(request):
            headers[REQUEST_ID_HEADER] = rid
        return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error_response(request, exc)
