"""The SQL console's text search and views (db/sql/90_console_search.sql) on notes indexed by the
real CLI: the query-embedding cache written by search/ask and `ragpg embed`, search_hybrid's legs,
the views, CLI index runs recorded, and row-level security on all of it for console roles."""

from __future__ import annotations

import json

import psycopg
import pytest

from rag.access import Scope
from rag.notes.ask import search
from rag.runtime import Runtime
from tests.ingest_db.test_row_security import NOTES, OTHER, PUBLIC_NOTES, QUERY, console_conn, indexed  # noqa: F401

pytestmark = pytest.mark.usefixtures("indexed")


def legs(conn: psycopg.Connection, question: str, **kw: object) -> tuple[set[str], list[dict]]:
    kw.setdefault("by_note", False)  # the passages, best first
    args = ", ".join(f"{k} => %({k})s" for k in kw)
    rows = conn.execute(f"select * from search_hybrid(%(q)s{', ' + args if args else ''})", {"q": question, **kw}).fetchall()
    return {r["legs"] for r in rows}, rows


def test_search_hybrid_uses_the_cached_embedding_else_bm25(cli, aconn: psycopg.Connection) -> None:
    ran, rows = legs(aconn, QUERY)
    assert ran == {"lexical"} and rows and rows[0]["vector_rank"] is None
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)

    code, _, err = cli("search", QUERY)  # any question ragpg embeds is cached
    assert code == 0, err
    ran, rows = legs(aconn, f"  {QUERY} ")  # the key is the trimmed text
    assert ran == {"vector+lexical"}
    assert any(r["vector_rank"] is not None for r in rows) and any(r["lexical_rank"] is not None for r in rows)
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    model = aconn.execute("select provider || '/' || model as m, sql_name from embedding_models").fetchone()
    assert legs(aconn, QUERY, model=model["m"])[0] == legs(aconn, QUERY, model=model["sql_name"])[0] == {"vector+lexical"}

    code, out, err = cli("embed", "tomatoes need sun", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["model"] == model["m"] and data["dims"] == len(data["embedding"]) > 0
    assert legs(aconn, "tomatoes need sun")[0] == {"vector+lexical"}
    cached = aconn.execute("select query_text, uses from query_embeddings order by query_text").fetchall()
    assert [r["query_text"] for r in cached] == [QUERY, "tomatoes need sun"]

    # the retrieved notes were counted, once per question
    counted = {r["source_path"]: r["retrievals"] for r in aconn.execute("select * from ragpg_most_retrieved_notes")}
    assert counted and set(counted.values()) == {1}


def test_search_hybrid_lists_notes_each_with_its_best_passages(cli, aconn: psycopg.Connection) -> None:
    passages = legs(aconn, QUERY, match_count=50)[1]
    rows = aconn.execute("select * from search_hybrid(%s, 2, passages_per_note => 2)", (QUERY,)).fetchall()
    notes = list(dict.fromkeys((r["vault"], r["source_path"]) for r in rows))
    best = list(dict.fromkeys((r["vault"], r["source_path"]) for r in passages))[:2]
    assert notes == best and [r["note_rank"] for r in rows] == sorted(r["note_rank"] for r in rows)
    for rank, note in enumerate(notes, start=1):
        mine = [r["chunk_id"] for r in rows if (r["vault"], r["source_path"]) == note]
        assert mine == [r["chunk_id"] for r in passages if (r["vault"], r["source_path"]) == note][:2]
        assert {r["note_rank"] for r in rows if (r["vault"], r["source_path"]) == note} == {rank}
    several = aconn.execute("select * from search_hybrid(%s, 3, by_note => false)", (QUERY,)).fetchall()
    assert [r["chunk_id"] for r in several] == [r["chunk_id"] for r in passages[:3]]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="at least 1"):
        aconn.execute("select * from search_hybrid(%s, 0)", (QUERY,))
    # a console caller's huge figures: the pool is capped, not an integer overflow
    huge = aconn.execute("select * from search_hybrid(%s, 2000000000, passages_per_note => 2000000000)",
                         (QUERY,)).fetchall()
    assert huge and {r["chunk_id"] for r in huge} == {r["chunk_id"] for r in legs(aconn, QUERY, match_count=1000)[1]}


def test_console_search_bad_input(cli, aconn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="question is empty"):
        aconn.execute("select * from search_hybrid('  ')")
    with pytest.raises(psycopg.errors.UndefinedObject, match="unknown embedding model 'nope/x'"):
        aconn.execute("select * from search_hybrid('tomato', model => 'nope/x')")
    code, out, err = cli("embed", "   ")
    assert code == 2 and out == "" and err.strip() == "error: the text to embed is empty"


def test_console_role_sees_only_its_rows_through_search_and_views(cli, aconn: psycopg.Connection) -> None:
    assert cli("search", QUERY)[0] == 0  # caches the embedding, counts retrievals in both vaults
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        for question in (QUERY, "launch codes"):  # the vector leg (cached) and BM25 alone
            ran, rows = legs(conn, question)
            assert {(r["vault"], r["source_path"]) for r in rows} <= PUBLIC_NOTES and rows, question
        assert {(r["vault"], r["source_path"]) for r in conn.execute("select * from ragpg_largest_notes")} == PUBLIC_NOTES
        assert {(r["vault"], r["source_path"]) for r in conn.execute(
            "select * from ragpg_most_retrieved_notes")} <= PUBLIC_NOTES
        assert [(r["vault"], r["folder"], r["documents"]) for r in conn.execute(
            "select * from ragpg_indexed_folders")] == [("notes", "open", 1)]
        assert [(r["vault"], r["documents"]) for r in conn.execute("select * from ragpg_indexed_vaults")] == [("notes", 1)]
        assert conn.execute("select * from query_embeddings").fetchall() == []  # the owner's questions
        for attempt in ("select * from ragpg_index_runs_recent",
                        "select ragpg_record_query(1, 'x', null, array[1]::bigint[])"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(attempt)
    owner = {(r["vault"], r["source_path"]) for r in aconn.execute("select * from ragpg_largest_notes")}
    assert owner == {("notes", p) for p in NOTES} | {("other", p) for p in OTHER}


def test_cli_index_runs_are_recorded(cli, aconn: psycopg.Connection) -> None:
    runs = aconn.execute("select * from ragpg_index_runs_recent").fetchall()
    assert [(r["origin"], r["status"], r["vaults"], r["files_indexed"]) for r in runs] == [
        ("cli", "succeeded", ["notes", "other"], len(NOTES) + len(OTHER))]
    assert runs[0]["duration"] is not None and runs[0]["error"] is None
    assert cli("index", "--quiet", "notes")[0] == 0
    latest = aconn.execute("select * from ragpg_index_runs_recent limit 1").fetchone()
    assert (latest["vaults"], latest["files_indexed"], latest["files_seen"]) == (["notes"], 0, len(NOTES))


def test_scoped_requests_record_and_the_setting_turns_it_off(settings, aconn: psycopg.Connection) -> None:
    scoped = Scope(vaults=("notes",), clearance="public", principal="key:test")
    rt = Runtime(settings)
    try:
        assert search(QUERY, runtime=rt, scope=scoped).items  # read as ragpg_reader, recorded all the same
    finally:
        rt.close()
    assert aconn.execute("select count(*) as n from query_embeddings").fetchone()["n"] == 1
    off = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"query_log": False})})
    rt = Runtime(off)
    try:
        search("launch plan", runtime=rt)
    finally:
        rt.close()
    assert aconn.execute("select count(*) as n from query_embeddings").fetchone()["n"] == 1
