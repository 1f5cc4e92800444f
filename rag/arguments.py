"""Checks of the public entry points' arguments, before any work.

A Python caller passing `budget_tokens="4000"` or `vaults="notes"` used to get a raw TypeError or
ValueError from deep inside (or, for a string of vaults, a search of one-letter vault names); a
filter holding `object()`, a set or NaN, or a string holding a lone surrogate ("\\ud800", which
UTF-8 cannot encode) failed in the JSON encoder or the database driver. Each check here raises an
InputError naming the function and the argument, what it must be and what it got, in one line that
is itself valid text (a lone surrogate is shown escaped, never echoed).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from typing import Any

from rag.access import Scope
from rag.errors import InputError
from rag.secrets import mask_secrets

Check = Callable[[str, str, Any], None]  # (function, argument, value) -> None, or raises InputError

_SHOWN_CHARS = 80
# A filter's limits. The SQL compiler allows 8 levels of filter nesting (db/sql/30_filters.sql), about 18
# of JSON; these only keep a hostile value from costing the encoders, the driver or the compiler.
MAX_JSON_DEPTH = 64
MAX_JSON_NODES = 1000
# Far above any model's context window; the HTTP API's bound too (server/models.py).
MAX_BUDGET_TOKENS = 200_000


def _got(value: Any) -> str:
    try:
        shown = repr(value)
    except ValueError:  # an int too long to turn into text
        shown = "(too long to show)"
    return f"{type(value).__name__} {shown}"[:_SHOWN_CHARS]


def _label(key: str) -> str:
    """A filter key as it can be shown in a one-line message."""
    return key if key.isprintable() else ascii(key)


def _unicode_problem(text: str, where: str = "") -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ascii(text[exc.start])[1:-1]
        return f"is not valid Unicode{where}: a lone surrogate ({bad}) at position {exc.start}"
    return None


def text_problem(text: str, where: str = "") -> str | None:
    """What keeps `text` from being stored and shown (a NUL, a lone surrogate), or None."""
    if "\x00" in text:
        return f"holds a NUL character{where}, which Postgres cannot store"
    return _unicode_problem(text, where)


def _unicode(fn: str, name: str, text: str, where: str = "") -> None:
    problem = _unicode_problem(text, where)
    if problem is not None:
        raise InputError(f"{fn}: '{name}' {problem}")


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
    """A list of names or None, the one rule of every entry point (a bare string is refused: its letters are
    a sequence of names too)."""
    if value is None:
        return
    if isinstance(value, str):
        raise InputError(f"{fn}: '{name}' must be a list of names or None (one name: [{value[:40]!r}]), got a string")
    if isinstance(value, bytes) or not isinstance(value, list | tuple | set | frozenset):
        raise InputError(f"{fn}: '{name}' must be a list of names or None, got {_got(value)}")
    for item in value:
        if not isinstance(item, str):
            raise InputError(f"{fn}: every item of '{name}' must be a string, got {_got(item)}")
        _unicode(fn, name, item)


def _leaf_problem(node: Any, where: str) -> str | None:
    if node is None or isinstance(node, bool | dt.date):  # a date is written as ISO text
        return None
    if isinstance(node, str):
        return text_problem(node, f" at {where}"[:_SHOWN_CHARS])
    if isinstance(node, int):
        try:
            repr(node)
        except ValueError:
            return f"holds a number too long to write at {where}"
        return None
    if isinstance(node, float):
        return None if math.isfinite(node) else f"holds {node!r} at {where}, which JSON cannot carry"
    return (f"holds a {type(node).__name__} at {where[:_SHOWN_CHARS]}, which JSON cannot carry (use strings, "
            "numbers, true/false, null, lists and objects)")


def json_problem(value: Mapping[str, Any]) -> str | None:
    """What keeps `value` (a metadata filter) from being JSON this project takes, or None: string keys;
    strings, finite numbers, booleans, None and dates (written as ISO text), lists and dicts of them;
    at most MAX_JSON_DEPTH levels and MAX_JSON_NODES values. The one walk of a filter: the public entry
    points, the HTTP contract and every SQL call (rag.retrieval.filters) run it. Iterative, so no
    nesting raises RecursionError here."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    nodes = 0
    while stack:
        node, path, depth = stack.pop()
        nodes += 1
        if nodes > MAX_JSON_NODES:
            return f"holds more than {MAX_JSON_NODES} values"
        if depth > MAX_JSON_DEPTH:
            return f"is nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(node, Mapping):
            for key, child in node.items():
                if not isinstance(key, str):
                    return f"has a key that is not a string ({_got(key)})"
                if (problem := _leaf_problem(key, "a key")) is not None:
                    return problem
                stack.append((child, f"{path}.{_label(key)}" if path else _label(key), depth + 1))
        elif isinstance(node, list | tuple):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(node))
        elif (problem := _leaf_problem(node, path or "the top")) is not None:
            return problem
    return None


def json_object(fn: str, name: str, value: Any) -> None:
    """None, or a dict `json_problem` finds nothing wrong with."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise InputError(f"{fn}: '{name}' must be a JSON object (dict) or None, got {_got(value)}")
    problem = json_problem(value)
    if problem is not None:
        raise InputError(f"{fn}: '{name}' {problem}")


def check_query_length(text: str, max_chars: int, what: str = "query") -> None:
    """The one limit on the text a search runs on (`retrieval.max_query_chars`) and its message."""
    if len(text) > max_chars:
        raise InputError(f"the {what} is {len(text)} characters long; the limit is {max_chars}")


def query_text(value: str, max_chars: int, what: str = "query") -> str:
    """The text a search runs on, stripped: not blank, and within the length limit. Every entry point
    (compute_context, ask, search, `ragpg embed`) checks its query here, with one message, and gets it
    with secrets masked: the notes hold only masked text, so nothing is lost, and the question is then
    embedded (perhaps remotely), cached, logged and quoted in explanations only in its masked form."""
    text = value.strip()
    if not text:
        raise InputError(f"the {what} is empty")
    check_query_length(value, max_chars, what)
    return mask_secrets(text)


def whole_number(fn: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{fn}: '{name}' must be a whole number, got {_got(value)}")


def token_budget(fn: str, name: str, value: Any) -> None:
    """A token budget: a whole number from 0 (an empty context, not an error) to MAX_BUDGET_TOKENS."""
    whole_number(fn, name, value)
    if value < 0:
        raise InputError(f"{fn}: '{name}' must be 0 or more, got {value}")
    if value > MAX_BUDGET_TOKENS:
        raise InputError(f"{fn}: '{name}' must be at most {MAX_BUDGET_TOKENS}, got a larger number")


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
ASK_CHECKS: dict[str, Check] = {"question": text, "vaults": optional_names, "folders": optional_names,
                                "detail": text, "debug": flag, **_COMMON}
RELATED_CHECKS: dict[str, Check] = {"note": text, "vault": optional_text, **_COMMON}
INDEX_CHECKS: dict[str, Check] = {"vaults": optional_names, "allow_empty": flag, "runtime": optional_runtime}
SEARCH_CHECKS: dict[str, Check] = {"query": text, "vaults": optional_names, "folders": optional_names,
                                   "filters": json_object, **_COMMON}


def check_arguments(fn: str, arguments: Mapping[str, Any], checks: Mapping[str, Check]) -> None:
    for name, value in arguments.items():
        check = checks.get(name)
        if check is not None:
            check(fn, name, value)


def check_context_arguments(arguments: Mapping[str, Any]) -> None:
    check_arguments("compute_context", arguments, CONTEXT_CHECKS)
