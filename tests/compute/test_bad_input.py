"""Bad input to compute_context: a clear one-line error (or a well-defined empty result), and no
data lost."""

from __future__ import annotations

import asyncio

import pytest
from psycopg.pq import TransactionStatus

from rag.compute import acompute_context, compute_context
from rag.errors import InputError, NotFoundError
from tests.compute import corpus


@pytest.mark.parametrize("query, kwargs, error, message", [
    ("", {}, InputError, "query is empty"),
    ("   \n\t ", {}, InputError, "query is empty"),
    ("x" * 100 * 1024, {}, InputError, "query is 102400 characters; the limit is 20000"),
    ("zorblax", {"profile": "nope"}, NotFoundError, "unknown profile 'nope' (known: cautious, chat, "),
    ("zorblax", {"mode": "fast"}, InputError, "unknown mode 'fast' (use one of: auto, base, hyde, "),
    ("zorblax", {"budget_tokens": -1}, InputError, "budget_tokens must be ≥ 0, got -1"),
    ("zorblax", {"vaults": ["kb", "missing"]}, NotFoundError, "vault 'missing' not found"),
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
    assert result.insufficient is True and result.decision["insufficient"] is True
    assert (result.context, result.citations, result.used_tokens) == ("", [], 0)
    assert result.ranked  # retrieval found things; none fit
    assert all(i["notes"] == ["dropped: over budget"] for i in result.evidence_full["items"])


def test_nothing_indexed_yet_is_a_clear_error(env):
    env.conn.execute("insert into vaults (name, root_path) values ('empty', '/nowhere')")
    env.conn.commit()
    with pytest.raises(NotFoundError, match=r"^nothing is indexed with the embedding model hash/"):
        compute_context("zorblax", runtime=env.runtime())


def test_a_query_nothing_matches_is_well_defined(kb):
    result = compute_context("qwxzj vbnmpl", profile="templates_lookup", runtime=kb.runtime())
    assert (result.ranked, result.context, result.insufficient) == ([], "", True)
    assert result.decision["weak_signals"] == ["few_matches"]


def test_async_variant_raises_the_same_errors(kb):
    with pytest.raises(InputError, match="^query is empty$"):
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
    ({"vaults": "kb"}, "compute_context: 'vaults' must be a list of names or None, got str 'kb'"),
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
