"""The JSON form of an `ask` record (`AskResponse.debug`), as `--debug --json` and /v1/ask print it."""

from __future__ import annotations

from typing import Any

from rag.notes.results import AskResponse


def trace_json(response: AskResponse) -> dict[str, Any]:
    assert response.debug is not None, "ask was not asked for its record (debug=True)"
    return response.debug.model_dump(mode="json")
