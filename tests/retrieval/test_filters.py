"""Metadata filters: one table of cases drives the SQL functions and the Python calls."""

from __future__ import annotations

import json

import psycopg
import pytest
from psycopg import sql

from rag.errors import InputError, NotFoundError
from rag.retrieval import retrieve
from rag.store import calls
from tests.retrieval.corpus import hash_embedding, vector_text
from tests.retrieval.filter_cases import ALL, FILTER_CASES, INVALID_FILTERS

CASE_IDS = [case[0] for case in FILTER_CASES]
INVALID_IDS = [case[0] for case in INVALID_FILTERS]


def sql_rows(db, query, params=()):
    with db.conn.transaction(), db.conn.cursor() as cur:
        cur.execute(query, params)
        return cur.fetchall()


def query_vector(db) -> str:
    return vector_text(hash_embedding("common notes", db.model.dims))


@pytest.mark.parametrize("exact_scan_max_rows", [10000, 0], ids=["exact", "index"])
@pytest.mark.parametrize(("name", "filter_", "expected"), FILTER_CASES, ids=CASE_IDS)
def test_sql_native_match_applies_filter(filter_db, name, filter_, expected, exact_scan_max_rows):
    rows = sql_rows(filter_db, sql.SQL(
        "select chunk_id from {}(%s::vector, -1, 100, %s::jsonb, exact_scan_max_rows => %s)").format(
            sql.Identifier(filter_db.model.match_function)),
        (query_vector(filter_db), json.dumps(filter_), exact_scan_max_rows))
    assert filter_db.names(r["chunk_id"] for r in rows) == expected


@pytest.mark.parametrize(("name", "filter_", "expected"), FILTER_CASES, ids=CASE_IDS)
def test_sql_lexical_match_and_filter_match_agree(filter_db, name, filter_, expected):
    rows = sql_rows(filter_db, "select chunk_id from match_lexical_chunks('common', 100, %s::jsonb)",
                    (json.dumps(filter_),))
    assert filter_db.names(r["chunk_id"] for r in rows) == expected
    rows = sql_rows(filter_db, "select id from chunks where ragpg_filter_match(metadata, %s::jsonb)",
                    (json.dumps(filter_),))
    assert filter_db.names(r["id"] for r in rows) == expected


@pytest.mark.parametrize(("name", "filter_", "expected"), FILTER_CASES, ids=CASE_IDS)
def test_python_calls_apply_filter(filter_db, name, filter_, expected):
    conn, model = filter_db.conn, filter_db.model
    embedding = hash_embedding("common notes", model.dims)
    vector = retrieve.match_vector(conn, model, embedding, match_count=100, similarity_threshold=-1,
                                   filter=filter_)
    assert filter_db.names(r.chunk_id for r in vector) == expected
    lexical = retrieve.match_lexical(conn, "common", match_count=100, filter=filter_)
    assert filter_db.names(r.chunk_id for r in lexical) == expected
    hybrid = retrieve.match_hybrid(conn, model, "common", embedding, match_count=100, similarity_threshold=-1,
                                   filter=filter_)
    assert filter_db.names(r.chunk_id for r in hybrid) == expected


@pytest.mark.parametrize(("name", "filter_", "fragment"), INVALID_FILTERS, ids=INVALID_IDS)
def test_sql_rejects_invalid_filter_with_one_line_22023(filter_db, name, filter_, fragment):
    for query in (
        sql.SQL("select * from ragpg_compile_filter(%s::jsonb)"),
        sql.SQL("select * from {}(%s::vector, 0, 10, %s::jsonb)").format(
            sql.Identifier(filter_db.model.match_function)),
        sql.SQL("select * from match_lexical_chunks('common', 10, %s::jsonb)"),
    ):
        params = (json.dumps(filter_),) if "%s::vector" not in query.as_string(None) else (
            query_vector(filter_db), json.dumps(filter_))
        with pytest.raises(psycopg.errors.InvalidParameterValue) as err:
            sql_rows(filter_db, query, params)
        message = err.value.diag.message_primary
        assert message.startswith("invalid filter: ") and fragment in message and "\n" not in message


@pytest.mark.parametrize(("name", "filter_", "fragment"), INVALID_FILTERS, ids=INVALID_IDS)
def test_python_rejects_invalid_filter_with_input_error(filter_db, name, filter_, fragment):
    conn, model = filter_db.conn, filter_db.model
    calls = [
        lambda: retrieve.match_vector(conn, model, hash_embedding("x", model.dims), filter=filter_),
        lambda: retrieve.match_lexical(conn, "common", filter=filter_),
        lambda: retrieve.compile_filter(conn, filter_),
    ]
    for call in calls:
        with pytest.raises(InputError) as err:
            call()
        assert type(err.value) is InputError
        message = str(err.value)
        assert message.startswith("invalid filter: ") and fragment in message and "\n" not in message
    # the connection stays usable after the failed calls
    assert len(retrieve.match_lexical(conn, "common", match_count=100)) == len(ALL)


def test_compiled_filter_keeps_values_out_of_the_jsonpath(filter_db):
    evil = "'); drop table chunks; --"
    compiled = retrieve.compile_filter(filter_db.conn, {
        "doc_type": "note", evil: {"$eq": evil}, "tags": {"$any": ["a", evil]}, "vault": ["alpha"]})
    assert compiled.containment == {"doc_type": "note"}
    assert compiled.vaults == ["alpha"]
    assert evil not in compiled.vars and evil in json.dumps(compiled.vars)
    assert compiled.predicate is not None and "drop table" in compiled.predicate  # only as a quoted key
    assert compiled.predicate.count('"\'); drop table chunks; --"') == 1
    assert "note" not in compiled.predicate and '"a"' not in compiled.predicate
    empty = retrieve.compile_filter(filter_db.conn, None)
    assert (empty.containment, empty.predicate, empty.vars, empty.vaults) == ({}, None, {}, None)


def test_unknown_vault_is_not_found_in_python_and_in_sql(filter_db):
    conn, model = filter_db.conn, filter_db.model
    with pytest.raises(NotFoundError, match=r"^unknown vault 'gamma' \(known: alpha, beta\)$"):
        retrieve.match_lexical(conn, "common", filter={"vault": "gamma"})
    with pytest.raises(NotFoundError, match="unknown vault 'gamma'"):
        retrieve.match_vector(conn, model, hash_embedding("x", model.dims), filter={"vault": ["alpha", "gamma"]})
    with pytest.raises(NotFoundError, match="unknown vault 'gamma'"):
        retrieve.match_hybrid(conn, model, "common", hash_embedding("x", model.dims), filter={"vault": "gamma"})
    with pytest.raises(NotFoundError, match="unknown vault 'gamma'"):
        retrieve.match_folders(conn, model, hash_embedding("x", model.dims), vaults=["gamma"])
    # At the console: a clear message naming the vault (SQLSTATE 42704), not a silently empty result.
    vector = query_vector(filter_db)
    for query, params in (
        ("select * from match_lexical_chunks('common', 10, %s::jsonb)", ()),
        (sql.SQL("select * from {}(%s::vector, 0, 10, %s::jsonb)").format(
            sql.Identifier(filter_db.model.match_function)), (vector,)),
        (sql.SQL("select * from {}(%s::vector, 0, 10, %s::jsonb, exact_scan_max_rows => 0)").format(
            sql.Identifier(filter_db.model.match_function)), (vector,)),
        (sql.SQL("select * from {}('common', %s::vector, 10, %s::jsonb)").format(
            sql.Identifier(filter_db.model.hybrid_function)), (vector,)),
        (sql.SQL("select * from {}(array['common'], array[%s::vector], 10, %s::jsonb)").format(
            sql.Identifier(filter_db.model.hybrid_multi_function)), (vector,)),
    ):
        for filter_ in ({"vault": "gamma"}, {"vault": {"$in": ["beta", "gamma"]}}):
            with pytest.raises(psycopg.errors.UndefinedObject) as err:
                sql_rows(filter_db, query, (*params, json.dumps(filter_)))
            message = err.value.diag.message_primary
            assert message == "unknown vault 'gamma' (known: alpha, beta)"
            mapped = calls.map_database_error(err.value)
            assert type(mapped) is NotFoundError and str(mapped) == message
    # a known vault still filters, an empty list of vaults matches nothing
    assert filter_db.names(r["chunk_id"] for r in sql_rows(
        filter_db, "select chunk_id from match_lexical_chunks('common', 10, '{\"vault\": \"beta\"}')")) == {
        "b1", "b2", "b3"}
    assert sql_rows(filter_db, "select * from match_lexical_chunks('common', 10, '{\"vault\": []}')") == []


def test_filter_values_from_python_types(filter_db):
    import datetime as dt

    rows = retrieve.match_lexical(filter_db.conn, "common", match_count=100,
                                  filter={"date": {"$gte": dt.date(2024, 1, 1)}})
    assert filter_db.names(r.chunk_id for r in rows) == {"a1", "a3", "b1", "b3"}
    for bad in ([1], "doc_type", 3, {1: "x"}, {"priority": {"$gt": float("nan")}}, {"x": object()}):
        with pytest.raises(InputError, match="^invalid filter: "):
            retrieve.match_lexical(filter_db.conn, "common", filter=bad)
