"""`rag.ask` and `rag.search` given any Python value for any argument: an answer or a clear InputError,
never a TypeError, AttributeError or UnicodeEncodeError from inside (issue 29)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.compute import compute_context
from rag.errors import InputError
from rag.notes.ask import ask, search
from tests.notes.test_ask import Q, two_notes


class Opaque:
    """A value no JSON encoder and no database adapter knows."""


@pytest.fixture
def indexed(notes, runtime, notes_config):
    two_notes(notes)
    return runtime


@pytest.mark.security
@pytest.mark.parametrize("call, message", [
    (lambda rt: ask("\ud800", runtime=rt), "ask: 'question' is not valid Unicode: a lone surrogate (\\ud800)"),
    (lambda rt: ask(Q, vaults=["work\udcff"], runtime=rt), "ask: 'vaults' is not valid Unicode: a lone surrogate"),
    # one rule of vaults and folders on every entry point: a list of names; a bare string is refused
    (lambda rt: ask(Q, vaults="work", runtime=rt), "ask: 'vaults' must be a list of names or None (one name: ['work'])"),
    (lambda rt: search(Q, folders="projects", runtime=rt), "search: 'folders' must be a list of names or None"),
    (lambda rt: compute_context(Q, vaults="work", runtime=rt), "compute_context: 'vaults' must be a list of names"),
    (lambda rt: ask(Q, folders=[3], runtime=rt), "ask: every item of 'folders' must be a string, got int 3"),
    (lambda rt: ask(Q, detail=["brief"], runtime=rt), "ask: 'detail' must be a string, got list ['brief']"),
    (lambda rt: ask(Q, scope="all", runtime=rt), "ask: 'scope' must be a rag.access.Scope or None, got str"),
    (lambda rt: ask(Q, runtime="db"), "ask: 'runtime' must be a rag Runtime or None, got str 'db'"),
    (lambda rt: search("alpha \ud800", runtime=rt), "search: 'query' is not valid Unicode: a lone surrogate"),
    (lambda rt: search(Q, filters=3, runtime=rt), "search: 'filters' must be a JSON object (dict) or None, got int"),
    (lambda rt: search(Q, filters={"a": object()}, runtime=rt), "search: 'filters' holds a object at a, which JSON"),
    (lambda rt: search(Q, filters={"a": "\udcff"}, runtime=rt), "search: 'filters' is not valid Unicode at a: a lone"),
    (lambda rt: search(Q, request_id=b"x", runtime=rt), "search: 'request_id' must be a string or None, got bytes"),
])
def test_bad_values_are_one_line_input_errors(indexed, call, message):
    with pytest.raises(InputError) as info:
        call(indexed)
    text = str(info.value)
    assert text.startswith(message) and "\n" not in text
    text.encode("utf-8")
    assert not ask(Q, runtime=indexed).abstained  # nothing broke


@pytest.mark.security
def test_a_date_in_a_search_filter_is_read_as_its_iso_text(indexed):
    """A date is a JSON value here as in compute_context's filters (ISO text): every SQL call the
    search makes gets it that way, the lexical backend's choice included (it was a TypeError)."""
    import datetime as dt

    found = search(Q, filters={"date": {"$gte": dt.date(2000, 1, 1)}}, runtime=indexed)
    assert found.items == search(Q, filters={"date": {"$gte": "2000-01-01"}}, runtime=indexed).items
    try:
        search(Q, filters={"": dt.date(2000, 1, 1)}, runtime=indexed)
    except InputError as exc:
        assert "\n" not in str(exc)


def _anything() -> st.SearchStrategy[object]:
    text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=12)
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), text, st.binary(max_size=8),
                       st.decimals(), st.dates(), st.builds(Opaque), st.just(Q),
                       st.sampled_from(["work", "projects", "brief", "detailed"]))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner, inner), st.frozensets(st.integers(), max_size=3),
        st.dictionaries(st.one_of(text, st.integers()), inner, max_size=3)), max_leaves=8)


ASK_ARGUMENTS = ("question", "vaults", "folders", "k", "detail", "debug", "runtime", "scope", "request_id")
SEARCH_ARGUMENTS = ("query", "vaults", "folders", "k", "filters", "runtime", "scope", "request_id")


@pytest.mark.security
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.sampled_from(["ask", "search"]), data=st.data())
def test_any_value_of_any_argument_is_an_answer_or_an_input_error(indexed, entry, data):
    names = ASK_ARGUMENTS if entry == "ask" else SEARCH_ARGUMENTS
    name = data.draw(st.sampled_from(names))
    value = data.draw(_anything())
    if name == "runtime" and value is None:
        return  # None is the process-wide default runtime, not this test's database
    first = "question" if entry == "ask" else "query"
    kwargs = {first: Q, "runtime": indexed, name: value}
    try:
        (ask if entry == "ask" else search)(**kwargs)
    except InputError as exc:
        assert "\n" not in str(exc)
        str(exc).encode("utf-8")
