"""Revision 0013 on a populated database: the BM25 statistics split by confidentiality level, the cached
questions kept (as the owner's), searches unchanged, nothing lost; and back to 0011 and up again."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from rag.store import migrate
from tests.ingest_db.test_row_security import QUERY, indexed  # noqa: F401

LEVEL = ("coalesce(array_position(array['public', 'internal', 'confidential', 'restricted'], "
         "c.metadata ->> 'confidentiality'), 4)")
FRESH_VAULT_STATS = f"""select c.vault_id, {LEVEL} as level, count(*) as chunk_count, sum(c.lexeme_count) as total_length
                        from chunks c group by 1, 2 order by 1, 2"""
FRESH_TERM_STATS = f"""select c.vault_id, u.lexeme, {LEVEL} as level, count(*) as chunk_frequency
                       from chunks c cross join lateral unnest(c.content_tsv) u group by 1, 2, 3 order by 1, 2, 3"""


def stored(conn: psycopg.Connection) -> dict[str, list[dict[str, Any]]]:
    return {
        "vault": conn.execute("select vault_id, level, chunk_count, total_length from bm25_vault_stats"
                              " where chunk_count > 0 order by 1, 2").fetchall(),
        "term": conn.execute("select vault_id, lexeme, level, chunk_frequency from bm25_term_stats"
                             " order by 1, 2, 3").fetchall(),
    }


def fresh(conn: psycopg.Connection) -> dict[str, list[dict[str, Any]]]:
    return {"vault": conn.execute(FRESH_VAULT_STATS).fetchall(), "term": conn.execute(FRESH_TERM_STATS).fetchall()}


def owner_view(conn: psycopg.Connection) -> dict[str, Any]:
    return {
        "hits": [(r["chunk_id"], r["bm25_score"]) for r in conn.execute(
            "select * from match_lexical_chunks(%s, 50)", (QUERY,))],
        "chunks": conn.execute("select count(*) as n from chunks").fetchone()["n"],
        "questions": [(r["query_text"], r["uses"]) for r in conn.execute(
            "select query_text, uses from query_embeddings order by 1")],
    }


@pytest.mark.usefixtures("indexed")
def test_0013_splits_the_statistics_of_a_populated_database(cli, db_url: str, aconn: psycopg.Connection) -> None:
    assert cli("search", QUERY)[0] == 0 and cli("embed", "tomatoes need sun")[0] == 0
    head = owner_view(aconn)
    assert len({r["level"] for r in stored(aconn)["vault"]}) >= 3  # public, internal and restricted notes

    migrate.downgrade(db_url, "0012")  # the tables the previous release left (0012 changed none)
    old_vault = aconn.execute("select vault_id, chunk_count, total_length from bm25_vault_stats"
                              " where chunk_count > 0 order by 1").fetchall()
    assert old_vault == aconn.execute(
        "select vault_id, count(*) as chunk_count, sum(lexeme_count) as total_length from chunks group by 1"
        " order by 1").fetchall()
    assert aconn.execute("select count(*) as n from bm25_term_stats").fetchone()["n"] == aconn.execute(
        "select count(distinct (c.vault_id, u.lexeme)) as n from chunks c, unnest(c.content_tsv) u").fetchone()["n"]
    assert [r["query_text"] for r in aconn.execute("select query_text from query_embeddings order by 1")] == [
        QUERY, "tomatoes need sun"]

    assert migrate.upgrade(db_url) == migrate.head_revision()
    assert stored(aconn) == fresh(aconn)
    assert owner_view(aconn) == head
    assert {r["cached_by"] for r in aconn.execute("select cached_by from query_embeddings")} == {
        aconn.execute("select current_user as u").fetchone()["u"]}

    # and the triggers keep them so: a chunk moved to another level, one removed
    aconn.execute("update chunks set metadata = metadata || '{\"confidentiality\": \"confidential\"}'"
                  " where id = (select min(id) from chunks)")
    aconn.execute("delete from chunks where id = (select max(id) from chunks)")
    assert stored(aconn) == fresh(aconn)
