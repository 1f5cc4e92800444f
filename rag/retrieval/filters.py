"""Python-side checks of metadata filters before they reach the SQL compiler (db/sql/30_filters.sql).

The SQL function ``ragpg_compile_filter`` is the one authority on filter semantics; this module
only does what is cheap and needs no database: the filter must be a JSON object that
``rag.arguments.json_problem`` accepts (the one walk of a filter; dates become ISO strings), and
the names under a top-level ``vault`` key are collected so callers can report unknown vaults by name.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from rag.arguments import json_problem
from rag.errors import InputError


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.date):  # and datetime
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def filter_json(filter: Mapping[str, Any] | None) -> str:
    """The filter as JSON text for a ``jsonb`` parameter; ``None`` is the empty filter."""
    if filter is None:
        return "{}"
    if not isinstance(filter, Mapping):
        raise InputError(f"invalid filter: expected a JSON object, got {type(filter).__name__}")
    problem = json_problem(filter)
    if problem is not None:
        raise InputError(f"invalid filter: {problem}")
    try:
        return json.dumps(filter, allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InputError(f"invalid filter: {exc}") from None


def vault_names(filter: Mapping[str, Any] | None) -> list[str]:
    """Names under a top-level ``vault`` key (``"a"``, ``["a", "b"]``, ``{"$eq": "a"}``, ``{"$in": [...]}``).

    Shapes that are not vault names are left for the SQL compiler to reject.
    """
    if not filter or not isinstance(filter, Mapping) or "vault" not in filter:
        return []
    value = filter["vault"]
    if isinstance(value, Mapping) and len(value) == 1:
        value = value.get("$eq", value.get("$in"))
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return []
