"""Bad input to compute_context: a clear one-line error (or a well-defined empty result), and no
data lost."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.pq import TransactionStatus

from rag.compute import acompute_context, compute_context
from rag.errors import InputError, NotFoundError
from tests.compute import corpus


@pytest.mark.parametrize("query, kwargs, error, message", [
    ("", {}, InputError, "the query is empty"),
    ("   \n\t ", {}, InputError, "the query is empty"),
    ("x" * 100 * 1024, {}, InputError, "the query is 102400 characters long; the limit is 20000"),
    ("zorblax", {"profile": "nope"}, NotFoundError, "unknown profile 'nope' (known: cautious, chat, "),
    ("zorblax", {"mode": "fast"}, InputError, "unknown mode 'fast' (use one of: auto, base, hyde, "),
    ("zorblax", {"budget_tokens": -1}, InputError, "compute_context: 'budget_tokens' must be 0 or more, got -1"),
    ("zorblax", {"vaults": ["kb", "missing"]}, NotFoundError, "unknown vault 'missing' (known: kb)"),
    # a name no vault can have is shown JSON-quoted: one line, bounded, control characters escaped
    ("zorblax", {"vaults": ["kb", "a\nb"]}, NotFoundError, 'unknown vault "a\\nb" (known: kb)'),
    ("zorblax", {"filters": {"vault": "a\r\u2028b"}}, NotFoundError, 'unknown vault "a\\r\\u2028b" (known: kb)'),
    ("zorblax", {"vaults": ["x" * 100]}, NotFoundError, f'unknown vault "{"x" * 57}..." (known: kb)'),
])
def test_clear_errors_and_no_data_lost(kb, query, kwargs, error, message):
    before = kb.chunk_count()
    rt = kb.runtime()
    with pytest.raises(error) as info:
        compute_context(query, runtime=rt, **kwargs)
    text = str(info.value)
    assert text.startswith(message) and "\n" not in text
    assert kb.chunk_count() == before == 6
    # the runtime is still good for the next request
    assert compute_context(corpus.STRONG_QUERY, mode="base", runtime=rt).ranked


def test_budget_smaller_than_any_chunk_is_an_empty_result(kb):
    result = compute_context(corpus.STRONG_QUERY, budget_tokens=3, runtime=kb.runtime())
    assert result.insufficient is True and result.decision.insufficient is True
    assert (result.context, result.citations, result.used_tokens) == ("", [], 0)
    assert result.ranked  # retrieval found things; none fit
    assert all(i.notes == ["dropped: over budget"] for i in result.evidence_full.items)


def test_nothing_indexed_yet_is_a_clear_error(env):
    env.conn.execute("insert into vaults (name, root_path) values ('empty', '/nowhere')")
    env.conn.commit()
    with pytest.raises(NotFoundError, match=r"^nothing is indexed with the embedding model hash/"):
        compute_context("zorblax", runtime=env.runtime())


def test_a_query_nothing_matches_is_well_defined(kb):
    result = compute_context("qwxzj vbnmpl", profile="templates_lookup", runtime=kb.runtime())
    assert (result.ranked, result.context, result.insufficient) == ([], "", True)
    assert result.decision.weak_signals == ["few_matches"]


def test_async_variant_raises_the_same_errors(kb):
    with pytest.raises(InputError, match="^the query is empty$"):
        asyncio.run(acompute_context(" ", runtime=kb.runtime()))


def test_requests_hand_the_pool_its_connections_back_transactional(kb):
    # compute_context reads on an autocommit connection; the pool must get it back as it lent it,
    # after a good request and after a failed one
    rt = kb.runtime()
    compute_context(corpus.STRONG_QUERY, mode="base", runtime=rt)
    with pytest.raises(NotFoundError):
        compute_context("zorblax", vaults=["missing"], runtime=rt)
    with rt.connection() as first, rt.connection() as second:  # every connection of the pool (max 2)
        assert (first.autocommit, second.autocommit) == (False, False)
        first.execute("select 1")
        assert first.info.transaction_status == TransactionStatus.INTRANS


@pytest.mark.parametrize("kwargs, message", [
    ({"budget_tokens": "lots"}, "compute_context: 'budget_tokens' must be a whole number, got str 'lots'"),
    ({"budget_tokens": None}, "compute_context: 'budget_tokens' must be a whole number, got NoneType None"),
    ({"budget_tokens": 1.5}, "compute_context: 'budget_tokens' must be a whole number, got float 1.5"),
    ({"vaults": "kb"}, "compute_context: 'vaults' must be a list of names or None (one name: ['kb']), got a string"),
    ({"vaults": [1]}, "compute_context: every item of 'vaults' must be a string, got int 1"),
    ({"filters": [1]}, "compute_context: 'filters' must be a JSON object (dict) or None, got list [1]"),
    ({"profile": 3}, "compute_context: 'profile' must be a string, got int 3"),
    ({"mode": None}, "compute_context: 'mode' must be a string, got NoneType None"),
])
def test_wrong_argument_types_name_the_argument(kb, kwargs, message):
    """Item 17: `from rag import compute_context` checks types first; nothing runs, nothing is lost."""
    import rag

    before = kb.chunk_count()
    rt = kb.runtime()
    for fn in (rag.compute_context, lambda q, **kw: asyncio.run(rag.acompute_context(q, **kw))):
        with pytest.raises(InputError) as info:
            fn("zorblax", runtime=rt, **kwargs)
        assert str(info.value) == message
    with pytest.raises(InputError, match="'query' must be a string, got bytes"):
        rag.compute_context(b"zorblax", runtime=rt)
    assert kb.chunk_count() == before
    assert rag.compute_context(corpus.STRONG_QUERY, mode="base", runtime=rt).ranked


# -- any value of any argument (issue 29) ------------------------------------------------------------

class Opaque:
    """A value no JSON encoder and no database adapter knows."""


@pytest.mark.security
@pytest.mark.parametrize("kwargs, message", [
    ({"filters": {"a": object()}}, "compute_context: 'filters' holds a object at a, which JSON cannot carry"),
    ({"filters": {"a": {1, 2}}}, "compute_context: 'filters' holds a set at a, which JSON cannot carry"),
    ({"filters": {"a": [b"x"]}}, "compute_context: 'filters' holds a bytes at a[0], which JSON cannot carry"),
    ({"filters": {"a": {"$gt": Opaque()}}}, "compute_context: 'filters' holds a Opaque at a.$gt, which JSON "),
    ({"filters": {"a": float("nan")}}, "compute_context: 'filters' holds nan at a, which JSON cannot carry"),
    ({"filters": {"a": float("-inf")}}, "compute_context: 'filters' holds -inf at a, which JSON cannot carry"),
    ({"filters": {1: "x"}}, "compute_context: 'filters' has a key that is not a string (int 1)"),
    ({"filters": {"a": "\ud800"}}, "compute_context: 'filters' is not valid Unicode at a: a lone surrogate"),
    ({"filters": {"\udcff": "x"}}, "compute_context: 'filters' is not valid Unicode at a key: a lone surrogate"),
    ({"vaults": ["kb\ud800"]}, "compute_context: 'vaults' is not valid Unicode: a lone surrogate (\\ud800)"),
    ({"profile": "chat\udcff"}, "compute_context: 'profile' is not valid Unicode: a lone surrogate (\\udcff)"),
    ({"runtime": 3}, "compute_context: 'runtime' must be a rag Runtime or None, got int 3"),
    ({"scope": "all"}, "compute_context: 'scope' must be a rag.access.Scope or None, got str 'all'"),
    ({"request_id": 7}, "compute_context: 'request_id' must be a string or None, got int 7"),
])
def test_values_json_and_postgres_cannot_carry_are_input_errors(kb, kwargs, message):
    rt = kb.runtime()
    kwargs = {"runtime": rt, **kwargs}
    for fn in (compute_context, lambda q, **kw: asyncio.run(acompute_context(q, **kw))):
        with pytest.raises(InputError) as info:
            fn(corpus.STRONG_QUERY, **kwargs)
        text = str(info.value)
        assert text.startswith(message) and "\n" not in text
        text.encode("utf-8")  # the message itself prints anywhere: no lone surrogate in it


@pytest.mark.security
def test_a_number_too_long_to_write_is_an_input_error(kb):
    huge = 10**5000  # Python refuses to turn it into text (JSON), so hypothesis cannot print it either
    with pytest.raises(InputError, match=r"^compute_context: 'filters' holds a number too long to write at a"):
        compute_context(STRONG, filters={"a": {"$gt": huge}}, runtime=kb.runtime())


@pytest.mark.security
def test_a_filter_nested_beyond_any_stack_is_an_input_error(kb):
    deep: dict = {"a": 1}
    for _ in range(5000):
        deep = {"$and": [deep]}
    with pytest.raises(InputError, match=r"^compute_context: 'filters' is nested deeper than 64 levels$"):
        compute_context(STRONG, filters=deep, runtime=kb.runtime())


@pytest.mark.security
@pytest.mark.parametrize("query", ["\ud800", "zorblax \udcff maintenance", "\udfff"])
def test_a_query_holding_a_lone_surrogate_is_an_input_error(kb, query):
    rt = kb.runtime()
    for fn in (compute_context, lambda q, **kw: asyncio.run(acompute_context(q, **kw))):
        with pytest.raises(InputError, match=r"^compute_context: 'query' is not valid Unicode: a lone surrogate"):
            fn(query, runtime=rt)


def _anything() -> st.SearchStrategy[object]:
    text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=12)
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), text, st.binary(max_size=8), st.decimals(), st.dates(), st.complex_numbers(),
                       st.builds(Opaque), st.just(STRONG), st.sampled_from(["kb", "chat", "base", "auto"]))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.frozensets(st.integers(), max_size=3),
        st.dictionaries(st.one_of(text, st.integers(), st.none()), inner, max_size=4)), max_leaves=12)


STRONG = corpus.STRONG_QUERY
CONTEXT_ARGUMENTS = ("query", "vaults", "filters", "profile", "mode", "budget_tokens", "runtime", "scope",
                     "request_id")


@pytest.mark.security
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(CONTEXT_ARGUMENTS), value=_anything())
def test_any_value_of_any_argument_is_a_result_or_an_input_error(kb, name, value):
    """Every public argument of compute_context, any Python value: a result or an InputError, nothing else."""
    if name == "runtime" and value is None:
        return  # None is the process-wide default runtime, not this test's database
    rt = kb.runtime() if not kb.runtimes else kb.runtimes[0]
    try:
        compute_context(**{"query": STRONG, "runtime": rt, name: value})
    except InputError as exc:
        assert "\n" not in str(exc)
        str(exc).encode("utf-8")


def test_the_public_face_checks_the_arguments_once(kb, monkeypatch):
    """`from rag import compute_context` is the function itself: its own checks run, once."""
    import rag
    from rag import arguments

    checked: list[str] = []
    real = arguments.check_arguments
    monkeypatch.setattr(arguments, "check_arguments", lambda fn, *rest: (checked.append(fn), real(fn, *rest))[1])
    rt = kb.runtime()
    assert rag.compute_context is compute_context
    rag.compute_context(corpus.STRONG_QUERY, mode="base", runtime=rt)
    asyncio.run(rag.acompute_context(corpus.STRONG_QUERY, mode="base", runtime=rt))
    assert checked == ["compute_context", "compute_context"]
