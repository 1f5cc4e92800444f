"""Issue 29: a role cannot confirm another's exact question, nor when it was asked.

The query-embedding cache records which role cached each question; a console role reads only its own
rows (through ragpg_cached_query_embeddings, search_hybrid or the table itself), the owner all of them.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.ingest_db.test_console_search import legs
from tests.ingest_db.test_row_security import QUERY, console_conn, indexed  # noqa: F401

pytestmark = [pytest.mark.security, pytest.mark.usefixtures("indexed")]

OWN_QUESTION = "tomatoes need sun"


def cached(conn: psycopg.Connection, question: str) -> list[dict]:
    return conn.execute("select * from ragpg_cached_query_embeddings(%s)", (question,)).fetchall()


def test_each_role_reads_only_the_questions_it_cached(cli, aconn: psycopg.Connection) -> None:
    assert cli("search", QUERY)[0] == 0  # the owner's question, cached as the owner's
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as alice, \
            console_conn(cli, "--clearance", "internal") as bob:
        assert cached(alice, QUERY) == [] and cached(bob, QUERY) == []
        alice_role = alice.execute("select current_user as r").fetchone()["r"]
        code, _, err = cli("embed", OWN_QUESTION, "--role", alice_role)
        assert code == 0, err

        assert legs(alice, QUERY)[0] == legs(bob, QUERY)[0] == {"lexical"}
        assert [r["model_id"] for r in cached(alice, OWN_QUESTION)] != [] and cached(bob, OWN_QUESTION) == []
        assert legs(alice, OWN_QUESTION)[0] == {"vector+lexical"} and legs(bob, OWN_QUESTION)[0] == {"lexical"}
        assert [r["query_text"] for r in alice.execute("select query_text from query_embeddings")] == [OWN_QUESTION]
        assert bob.execute("select count(*) as n from query_embeddings").fetchone()["n"] == 0

    owner_rows = aconn.execute("select query_text, cached_by from query_embeddings order by query_text").fetchall()
    assert [(r["query_text"], r["cached_by"] == alice_role) for r in owner_rows] == [
        (QUERY, False), (OWN_QUESTION, True)]
    assert len(cached(aconn, QUERY)) == len(cached(aconn, OWN_QUESTION)) == 1


def test_embed_for_an_unknown_role_is_one_line_and_caches_nothing(cli, aconn: psycopg.Connection) -> None:
    code, out, err = cli("embed", OWN_QUESTION, "--role", "ragpg_console_nosuch")
    assert code != 0 and out == ""
    assert err.strip() == ("error: unknown console role 'ragpg_console_nosuch' (`ragpg db console` makes them; "
                           "known: none)")
    assert aconn.execute("select count(*) as n from query_embeddings").fetchone()["n"] == 0
