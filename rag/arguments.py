"""Checks of the public entry points' arguments, before any work.

A Python caller passing `budget_tokens="4000"` or `vaults="notes"` used to get a raw TypeError or
ValueError from deep inside (or, for a string of vaults, a search of one-letter vault names); a
filter holding `object()`, a set or NaN, or a string holding a lone surrogate ("\\ud800", which
UTF-8 cannot encode) failed in the JSON encoder or the database driver. Each check here raises an
InputError naming the function and the argument, what it must be and what it got, in one line that
is itself valid text (a lone surrogate is shown escaped, never echoed).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from rag.access import Scope
from rag.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])
Check = Callable[[str, str, Any], None]  # (function, argument, value) -> None, or raises InputError

_SHOWN_CHARS = 80


def _got(value: Any) -> str:
    try:
        shown = repr(value)
    except ValueError:  # an int too long to turn into text
        shown = "(too long to show)"
    return f"{type(value).__name__} {shown}"[:_SHOWN_CHARS]


def _label(key: str) -> str:
    """A filter key as it can be shown in a one-line message."""
    return key if key.isprintable() else ascii(key)


def _unicode(fn: str, name: str, text: str, where: str = "") -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ascii(text[exc.start])[1:-1]
        raise InputError(f"{fn}: '{name}' is not valid Unicode{where}: a lone surrogate ({bad}) at position "
                         f"{exc.start}") from None


def text(fn: str, name: str, value: Any) -> None:
    if not isinstance(value, str):
        raise InputError(f"{fn}: '{name}' must be a string, got {_got(value)}")
    _unicode(fn, name, value)


def optional_text(fn: str, name: str, value: Any) -> None:
    if value is not None:
        if not isinstance(value, str):
            raise InputError(f"{fn}: '{name}' must be a string or None, got {_got(value)}")
        _unicode(fn, name, value)


def optional_names(fn: str, name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        raise InputError(f"{fn}: '{name}' must be a list of names or None, got {_got(value)}")
    for item in value:
        if not isinstance(item, str):
            raise InputError(f"{fn}: every item of '{name}' must be a string, got {_got(item)}")
        _unicode(fn, name, item)


def name_or_names(fn: str, name: str, value: Any) -> None:
    """One name or a list of them (the notes entry points accept `vaults="work"`)."""
    optional_names(fn, name, [value] if isinstance(value, str) else value)


def json_object(fn: str, name: str, value: Any) -> None:
    """None, or a dict JSON can carry: string keys; strings, finite numbers, booleans, None, lists and
    dicts of them. Walked without recursion, so no nesting depth raises RecursionError here."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise InputError(f"{fn}: '{name}' must be a JSON object (dict) or None, got {_got(value)}")
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        where = path or "the top"
        if node is None or isinstance(node, bool | str):
            if isinstance(node, str):
                _unicode(fn, name, node, f" at {where}"[:_SHOWN_CHARS])
        elif isinstance(node, int):
            try:
                repr(node)
            except ValueError:
                raise InputError(f"{fn}: '{name}' holds a number too long to write at {where}") from None
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise InputError(f"{fn}: '{name}' holds {node!r} at {where}, which JSON cannot carry")
        elif isinstance(node, Mapping):
            for key, child in node.items():
                if not isinstance(key, str):
                    raise InputError(f"{fn}: '{name}' has a key that is not a string ({_got(key)})")
                _unicode(fn, name, key, " at a key")
                stack.append((child, f"{path}.{_label(key)}" if path else _label(key)))
        elif isinstance(node, list | tuple):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node))
        else:
            raise InputError(f"{fn}: '{name}' holds a {type(node).__name__} at {where[:_SHOWN_CHARS]}, which JSON "
                             "cannot carry (use strings, numbers, true/false, null, lists and objects)")
    try:
        json.dumps(value)
    except RecursionError:
        raise InputError(f"{fn}: '{name}' is nested too deeply to encode as JSON") from None


def check_query_length(text: str, max_chars: int, what: str = "query") -> None:
    """The one limit on the text a search runs on (`retrieval.max_query_chars`) and its message."""
    if len(text) > max_chars:
        raise InputError(f"the {what} is {len(text)} characters long; the limit is {max_chars}")


def query_text(value: str, max_chars: int, what: str = "query") -> str:
    """The text a search runs on, stripped: not blank, and within the length limit. Every entry point
    (compute_context, ask, search, `ragpg embed`) checks its query here, with one message."""
    text = value.strip()
    if not text:
        raise InputError(f"the {what} is empty")
    check_query_length(value, max_chars, what)
    return text


def whole_number(fn: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{fn}: '{name}' must be a whole number, got {_got(value)}")


def token_budget(fn: str, name: str, value: Any) -> None:
    """A token budget: a whole number, 0 or more (0 gives an empty context, not an error)."""
    whole_number(fn, name, value)
    if value < 0:
        raise InputError(f"{fn}: '{name}' must be 0 or more, got {value}")


def flag(fn: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise InputError(f"{fn}: '{name}' must be True or False, got {_got(value)}")


def optional_runtime(fn: str, name: str, value: Any) -> None:
    if value is None:
        return
    from rag.runtime import Runtime  # loaded already when a caller built one

    if not isinstance(value, Runtime):
        raise InputError(f"{fn}: '{name}' must be a rag Runtime or None, got {_got(value)}")


def optional_scope(fn: str, name: str, value: Any) -> None:
    if value is not None and not isinstance(value, Scope):
        raise InputError(f"{fn}: '{name}' must be a rag.access.Scope or None, got {_got(value)}")


_COMMON: dict[str, Check] = {"runtime": optional_runtime, "scope": optional_scope, "request_id": optional_text}
CONTEXT_CHECKS: dict[str, Check] = {
    "query": text, "profile": text, "mode": text, "vaults": optional_names, "filters": json_object,
    "budget_tokens": token_budget, **_COMMON,
}
# `ask` and `search` check k and detail themselves (their messages name the allowed range and values).
ASK_CHECKS: dict[str, Check] = {"question": text, "vaults": name_or_names, "folders": name_or_names,
                                "detail": text, "debug": flag, **_COMMON}
SEARCH_CHECKS: dict[str, Check] = {"query": text, "vaults": name_or_names, "folders": name_or_names,
                                   "filters": json_object, **_COMMON}


def check_arguments(fn: str, arguments: Mapping[str, Any], checks: Mapping[str, Check]) -> None:
    for name, value in arguments.items():
        check = checks.get(name)
        if check is not None:
            check(fn, name, value)


def check_context_arguments(arguments: Mapping[str, Any]) -> None:
    check_arguments("compute_context", arguments, CONTEXT_CHECKS)


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
