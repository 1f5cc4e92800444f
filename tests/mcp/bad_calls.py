"""Bad tool calls, each with the line it must fail with: the CLI's own line for the same input where a
command takes it (checked against the CLI in test_bad_input.py), the library's otherwise."""

from __future__ import annotations

from typing import Any

from mcp import ClientSession

from tests.mcp.session import data, error_text

# (tool, arguments, the CLI command taking the same input or None, the expected tool error)
BAD_CALLS: list[tuple[str, dict[str, Any], list[str] | None, str]] = [
    ("search_notes", {"query": "tomatoes", "vaults": ["nosuch"]}, ["search", "tomatoes", "--vault", "nosuch"],
     "error: unknown vault 'nosuch' (known: garden, work)"),
    ("search_notes", {"query": ""}, ["search", ""],
     "error: the search query is empty"),
    ("ask_notes", {"question": "   "}, ["ask", "   "],
     "error: the question is empty"),
    ("search_notes", {"query": "tomatoes", "k": 0}, ["search", "tomatoes", "--k", "0"],
     "error: k must be a whole number between 1 and 100, got 0"),
    ("search_notes", {"query": "tomatoes", "k": 101}, ["search", "tomatoes", "--k", "101"],
     "error: k must be a whole number between 1 and 100, got 101"),
    ("ask_notes", {"question": "tomatoes?", "detail": "long"}, ["ask", "tomatoes?", "--detail", "long"],
     "error: detail must be one of: brief, normal, detailed (got 'long')"),
    ("ask_notes", {"question": "tomatoes?", "vaults": ["nosuch"]}, ["ask", "tomatoes?", "--vault", "nosuch"],
     "error: unknown vault 'nosuch' (known: garden, work)"),
    ("get_context", {"query": "tomatoes", "filters": {"tags": {"$regex": "x"}}}, None,
     'error: invalid filter: unknown operator "$regex" for "tags" (known: $eq $ne $in $nin $gt $gte $lt $lte $prefix '
     '$exists $any $all)'),
    ("get_context", {"query": "tomatoes", "budget_tokens": -1}, None, "error: compute_context: 'budget_tokens' must be 0 or more, got -1"),
    ("get_context", {"query": "tomatoes", "vaults": ["nosuch"]}, None,
     "error: unknown vault 'nosuch' (known: garden, work)"),
    ("list_folders", {"vault": "nosuch"}, None, "error: unknown vault 'nosuch' (known: garden, work)"),
    ("read_note", {"vault": "garden", "path": "../work/meeting.md"}, None,
     "error: invalid source_path '../work/meeting.md': path traversal ('..') is not allowed; use the path "
     "relative to the vault root"),
    ("read_note", {"vault": "garden", "path": "tomatoes.md", "start_line": 0}, None,
     "error: start_line must be a whole number from 1 to 2147483647, got 0"),
    # issue 47: numbers past what the database holds get the library's line, not "integer out of range"
    ("read_note", {"vault": "garden", "path": "tomatoes.md", "end_line": 10**30}, None,
     "error: end_line must be a whole number from 1 to 2147483647, got 'a larger number'"),
    ("get_context", {"query": "tomatoes", "budget_tokens": 10**30}, None,
     "error: compute_context: 'budget_tokens' must be at most 200000, got a larger number"),
    ("search_notes", {"query": "tomatoes", "k": 10**30}, ["search", "tomatoes", "--k", str(10**30)],
     f"error: k must be a whole number between 1 and 100, got {10**30}"),
    ("related_notes", {"vault": "garden", "path": "tomatoes.md", "k": 10**30},
     ["related", "tomatoes.md", "--vault", "garden", "--k", str(10**30)],
     f"error: k must be a whole number from 1 to 1000, got {10**30}"),
    # not the schema's type, not in the schema, missing, no such tool: caught before the library
    ("search_notes", {"query": "tomatoes", "k": "ten"}, None, "error: invalid 'k': Input should be a valid integer"),
    ("search_notes", {"query": "tomatoes", "vaults": "garden"}, None,
     "error: invalid 'vaults': Input should be a valid list"),
    ("search_notes", {"query": "tomatoes", "limit": 3}, None,
     "error: unknown argument 'limit' (arguments: query, vaults, folders, k, by)"),
    ("read_note", {"vault": "garden"}, None, "error: 'path' is required"),
    ("related_notes", {"vault": "garden", "path": "tomatoes.md", "k": 0},
     ["related", "tomatoes.md", "--vault", "garden", "--k", "0"],
     "error: k must be a whole number from 1 to 1000, got 0"),
    ("related_notes", {"vault": "nosuch", "path": "tomatoes.md"}, ["related", "tomatoes.md", "--vault", "nosuch"],
     "error: unknown vault 'nosuch' (known: garden, work)"),
    ("related_notes", {"vault": "garden", "path": "nosuch.md"}, ["related", "nosuch.md", "--vault", "garden"],
     "error: no note garden/nosuch.md"),
    ("drop_vault", {"vault": "garden"}, None,
     "error: unknown tool 'drop_vault' (tools: search_notes, ask_notes, get_context, read_note, related_notes, "
     "list_vaults, list_folders)"),
]


async def check_bad_calls_then_a_good_one(session: ClientSession) -> None:
    """Every bad call is a tool error with its line, one after another on one session; then the
    session still answers."""
    for tool, arguments, _, expected in BAD_CALLS:
        assert error_text(await session.call_tool(tool, arguments)) == expected, (tool, arguments)
    found = data(await session.call_tool("search_notes", {"query": "tomatoes watering"}))
    assert found["passages"]
    # a list sent as JSON text (some desktop clients do) is read as the list
    work = data(await session.call_tool("search_notes", {"query": "tomatoes meeting", "vaults": '["work"]'}))
    assert work["passages"] and {p["vault"] for p in work["passages"]} == {"work"}
