"""Arbitrary filters: the result is rows or InputError, never another exception; nothing is lost."""

from __future__ import annotations

import json

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.errors import InputError, NotFoundError
from rag.retrieval import retrieve
from rag.store import calls
from tests.retrieval.corpus import hash_embedding
from tests.retrieval.filter_cases import FILTER_CORPUS

OPERATORS = ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$prefix", "$exists", "$and", "$or",
             "$any", "$all", "$", "$$", "$not", "$regex"]
NASTY = ["'); drop table chunks; --", "\"", "\\", "\\\"", "'", "$.a", "@", "$v0", "strict $", "lax", "*", "**",
         "\u0000", "\ud7ff", "日本語", "😀", "\n", "\t", "\"); drop table chunks; --", ") || true || (", "like_regex",
         "tags", "date", "folder", "vault", "doc_type", "priority", "author", "alpha", "beta"]

keys = st.one_of(st.sampled_from(OPERATORS + NASTY), st.text(max_size=10))
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.sampled_from(NASTY))
values = st.recursive(scalars, lambda children: st.lists(children, max_size=4)
                      | st.dictionaries(keys, children, max_size=4), max_leaves=16)
filters = st.one_of(st.dictionaries(keys, values, max_size=4), values)

CHUNKS = len(FILTER_CORPUS)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _chunk_count(conn) -> int:
    with conn.transaction():
        return conn.execute("select count(*) as n from chunks").fetchone()["n"]


@FUZZ
@given(filter_=filters)
def test_python_calls_return_rows_or_input_error(filter_db, filter_):
    conn, model = filter_db.conn, filter_db.model
    embedding = hash_embedding("common", model.dims)
    for call in (lambda: retrieve.match_vector(conn, model, embedding, filter=filter_),
                 lambda: retrieve.match_vector(conn, model, embedding, filter=filter_, exact_scan_max_rows=0),
                 lambda: retrieve.match_lexical(conn, "common", filter=filter_),
                 lambda: retrieve.match_hybrid(conn, model, "common", embedding, filter=filter_)):
        try:
            rows = call()
        except InputError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert all(r.chunk_id in filter_db.keys.values() for r in rows)
    assert _chunk_count(conn) == CHUNKS


@FUZZ
@given(filter_=filters)
def test_sql_compiler_raises_only_data_exceptions(filter_db, filter_):
    """Straight to SQL (no Python checks): any failure is a class-22 data exception (or 42704 for a vault
    that does not exist), never a jsonpath syntax error (which would mean a key or value leaked into the
    path text) or an internal error."""
    conn = filter_db.conn
    try:
        text = json.dumps(filter_)
    except ValueError:
        return
    try:
        with conn.transaction():
            conn.execute("select * from ragpg_compile_filter(%s::jsonb)", (text,)).fetchall()
            conn.execute("select * from match_lexical_chunks('common', 10, %s::jsonb)", (text,)).fetchall()
    except psycopg.Error as exc:
        if exc.sqlstate == "42704":  # a "vault" naming no vault: NotFoundError, a kind of InputError
            assert str(exc).startswith("unknown vault ")
            assert calls.map_database_error(exc).__class__ is NotFoundError
        else:
            assert exc.sqlstate is not None and exc.sqlstate.startswith("22"), (exc.sqlstate, str(exc))
            assert calls.map_database_error(exc).__class__ is InputError
    assert _chunk_count(conn) == CHUNKS
