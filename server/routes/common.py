"""Shared OpenAPI fragments for the routes."""

from __future__ import annotations

from typing import Any

from ragpg_server.models import ErrorResponse

_ERR = {"model": ErrorResponse}

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {**_ERR, "description": "Invalid request (malformed JSON, wrong types, unknown fields, bad values)."},
    401: {**_ERR, "description": "Missing, malformed, invalid or revoked API key."},
    403: {**_ERR, "description": "The key may not read the requested vault (or, for POST /v1/index, start runs)."},
    413: {**_ERR, "description": "Request body over server.max_body_bytes."},
    429: {**_ERR, "description": "Server at capacity; retry after the Retry-After header's seconds."},
    503: {**_ERR, "description": "Database unavailable."},
}


AMBIGUOUS_NAME = "The note's name fits several notes; the message lists them."


def errors(*codes: int, described: dict[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    base = dict(ERROR_RESPONSES)
    wording = {404: "Not found.", 409: "The vault already has a queued index run.", 502: "Upstream provider failed.",
               **(described or {})}
    for code in codes:
        base[code] = {**_ERR, "description": wording.get(code, "Error.")}
    return base
