"""Type checks for the public entry points' arguments, before any work.

A Python caller passing `budget_tokens="4000"` or `vaults="notes"` used to get a raw TypeError or
ValueError from deep inside (or, for a string of vaults, a search of one-letter vault names). Each
check here raises an InputError naming the argument, what it must be and what it got.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from rag.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])


def _got(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def _text(name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise InputError(f"compute_context: '{name}' must be a string, got {_got(value)}")


def _optional_names(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        raise InputError(f"compute_context: '{name}' must be a list of names or None, got {_got(value)}")
    for item in value:
        if not isinstance(item, str):
            raise InputError(f"compute_context: every item of '{name}' must be a string, got {_got(item)}")


def _optional_mapping(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, Mapping):
        raise InputError(f"compute_context: '{name}' must be a JSON object (dict) or None, got {_got(value)}")


def _whole_number(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"compute_context: '{name}' must be a whole number, got {_got(value)}")


_CHECKS: dict[str, Callable[[str, Any], None]] = {
    "query": _text, "profile": _text, "mode": _text, "vaults": _optional_names, "filters": _optional_mapping,
    "budget_tokens": _whole_number,
}


def check_context_arguments(arguments: Mapping[str, Any]) -> None:
    for name, value in arguments.items():
        check = _CHECKS.get(name)
        if check is not None:
            check(name, value)


def checked(fn: F) -> F:
    """`fn` (compute_context or acompute_context) with its arguments checked first."""
    import inspect

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def acall(query: Any, **kwargs: Any) -> Any:
            check_context_arguments({"query": query, **kwargs})
            return await fn(query, **kwargs)
        return cast(F, acall)  # wraps keeps the signature

    @functools.wraps(fn)
    def call(query: Any, **kwargs: Any) -> Any:
        check_context_arguments({"query": query, **kwargs})
        return fn(query, **kwargs)
    return cast(F, call)  # wraps keeps the signature
