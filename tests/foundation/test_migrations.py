"""Migrations: round trip, schema snapshot drift, pgvector checks."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from rag.errors import DatabaseError
from rag.store import migrate
from rag.store.database import open_connection

SNAPSHOT = Path(__file__).resolve().parents[2] / "db" / "schema" / "schema.latest.sql"


@pytest.fixture
def empty_db_url(pg_server):
    name = pg_server.create_empty_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)


def _our_tables(url: str) -> set[str]:
    with psycopg.connect(url) as c:
        rows = c.execute("select tablename from pg_tables where schemaname = 'public'").fetchall()
    return {r[0] for r in rows}


def test_upgrade_downgrade_upgrade_round_trips(empty_db_url):
    migrate.upgrade(empty_db_url)
    first = migrate.dump_schema(empty_db_url)
    assert {"vaults", "documents", "chunks", "embedding_models"} <= _our_tables(empty_db_url)

    with open_connection(empty_db_url) as conn:
        conn.execute("select ragpg_register_embedding_model('hash', 'rt', 4)")
        conn.commit()
    migrate.downgrade(empty_db_url, "base")
    assert _our_tables(empty_db_url) <= {"alembic_version"}
    with psycopg.connect(empty_db_url) as c:
        leftovers = c.execute(
            "select proname from pg_proc where pronamespace = 'public'::regnamespace"
            " and (proname like 'ragpg%' or proname like 'match%')").fetchall()
    assert leftovers == []

    migrate.upgrade(empty_db_url)
    assert migrate.dump_schema(empty_db_url) == first


def test_schema_snapshot_matches_migrations(empty_db_url):
    migrate.upgrade(empty_db_url)
    current = migrate.dump_schema(empty_db_url)
    assert SNAPSHOT.exists(), "run `ragpg db dump-schema -o db/schema/schema.latest.sql`"
    assert current == SNAPSHOT.read_text(), (
        "db/schema/schema.latest.sql is stale: regenerate it with "
        "`ragpg db dump-schema -o db/schema/schema.latest.sql` against a freshly upgraded database")


def test_upgrade_is_idempotent_and_reapplies_functions(empty_db_url):
    migrate.upgrade(empty_db_url)
    with open_connection(empty_db_url) as conn:
        conn.execute("drop function ragpg_sql_name(text, text) cascade")
        conn.commit()
    migrate.upgrade(empty_db_url)
    with open_connection(empty_db_url) as conn:
        row = conn.execute("select ragpg_sql_name('OpenAI', 'text-embedding-3-small') as n").fetchone()
        assert row["n"] == "openai_text_embedding_3_small"
        assert migrate.is_current(conn)


def test_model_registration_creates_a_working_hnsw_index(conn):
    model = conn.execute("select * from ragpg_register_embedding_model('hash', 'explain-test', 8)").fetchone()
    assert model["embedding_table"] == "embeddings_hash_explain_test"
    vault = conn.execute("insert into vaults (name, root_path) values ('v', '/v') returning id").fetchone()["id"]
    doc = conn.execute(
        "insert into documents (vault_id, source_path, document_version, size_bytes)"
        " values (%s, 'a.md', 'x', 1) returning id", (vault,)).fetchone()["id"]
    conn.execute(
        "insert into chunks (document_id, vault_id, ordinal, content)"
        " select %s, %s, g, 'chunk ' || g from generate_series(0, 4999) g", (doc, vault))
    conn.execute(
        "insert into embeddings_hash_explain_test (vault_id, chunk_id, embedding)"
        " select vault_id, id, array[random(), random(), random(), random(), random(), random(), random(), random()]::vector"
        " from chunks")
    conn.execute("analyze embeddings_hash_explain_test")
    plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
        "explain select chunk_id from embeddings_hash_explain_test"
        " order by embedding <=> '[1,0,0,0,0,0,0,0]'::vector limit 5").fetchall())
    assert "embeddings_hash_explain_test_hnsw_idx" in plan and "Index Scan" in plan
    again = conn.execute("select * from ragpg_register_embedding_model('hash', 'explain-test', 8)").fetchone()
    assert again["id"] == model["id"]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="registered with 8 dims"):
        conn.execute("select ragpg_register_embedding_model('hash', 'explain-test', 16)")


def test_bm25_statistics_follow_inserts_and_deletes(conn):
    vault = conn.execute("insert into vaults (name, root_path) values ('s', '/s') returning id").fetchone()["id"]
    doc = conn.execute("insert into documents (vault_id, source_path, document_version, size_bytes)"
                       " values (%s, 'a.md', 'x', 1) returning id", (vault,)).fetchone()["id"]
    conn.execute("insert into chunks (document_id, vault_id, ordinal, content) values"
                 " (%s, %s, 0, 'cats chase mice'), (%s, %s, 1, 'cats sleep all day, cats')",
                 (doc, vault, doc, vault))
    stats = conn.execute("select chunk_count, total_length from bm25_vault_stats where vault_id = %s",
                         (vault,)).fetchone()
    assert stats == {"chunk_count": 2, "total_length": 3 + 4}
    df = conn.execute("select chunk_frequency from bm25_term_stats where vault_id = %s and lexeme = 'cat'",
                      (vault,)).fetchone()
    assert df["chunk_frequency"] == 2
    conn.execute("delete from chunks where ordinal = 1")
    assert conn.execute("select chunk_frequency from bm25_term_stats where lexeme = 'cat'").fetchone() == {
        "chunk_frequency": 1}
    assert conn.execute("select count(*) as n from bm25_term_stats where lexeme = 'sleep'").fetchone()["n"] == 0
    assert conn.execute("select chunk_count, total_length from bm25_vault_stats").fetchone() == {
        "chunk_count": 1, "total_length": 3}


def test_bm25_postings_follow_inserts_updates_and_deletes(conn):
    """bm25_postings always equals what the chunks' tsvectors say, whatever statements changed them."""
    expected = ("select c.vault_id, u.lexeme, c.id as chunk_id, coalesce(cardinality(u.positions), 1) as tf,"
                " c.lexeme_count as dl, c.text_search_config::text as cfg"
                " from chunks c cross join lateral unnest(c.content_tsv) u order by 1, 2, 3")
    actual = ("select vault_id, lexeme, chunk_id, tf, dl, text_search_config::text as cfg"
              " from bm25_postings order by 1, 2, 3")
    a = conn.execute("insert into vaults (name, root_path) values ('p', '/p') returning id").fetchone()["id"]
    b = conn.execute("insert into vaults (name, root_path) values ('q', '/q') returning id").fetchone()["id"]
    doc = conn.execute("insert into documents (vault_id, source_path, document_version, size_bytes)"
                       " values (%s, 'a.md', 'x', 1) returning id", (a,)).fetchone()["id"]
    conn.execute("insert into chunks (document_id, vault_id, ordinal, content) values"
                 " (%s, %s, 0, 'cats chase mice'), (%s, %s, 1, 'cats sleep all day, cats'),"
                 " (%s, %s, 2, 'dogs bark')", (doc, a, doc, a, doc, a))
    assert conn.execute(actual).fetchall() == conn.execute(expected).fetchall()
    conn.execute("update chunks set content = content || ' and mice sleep' where ordinal >= 1")
    doc_b = conn.execute("insert into documents (vault_id, source_path, document_version, size_bytes)"
                         " values (%s, 'b.md', 'x', 1) returning id", (b,)).fetchone()["id"]
    # a chunk moves with its document (the key (vault, document) must match): a row moved between partitions
    conn.execute("update chunks set vault_id = %s, document_id = %s, text_search_config = 'simple'"
                 " where ordinal = 0", (b, doc_b))
    conn.execute("update chunks set metadata = '{\"k\": 1}'")
    assert conn.execute(actual).fetchall() == conn.execute(expected).fetchall()
    conn.execute("delete from chunks where ordinal = 1")
    assert conn.execute(actual).fetchall() == conn.execute(expected).fetchall()
    assert {r["vault_id"] for r in conn.execute(actual).fetchall()} == {a, b}
    conn.execute("delete from vaults where id in (%s, %s)", (a, b))  # drops their partitions
    assert conn.execute(actual).fetchall() == conn.execute(expected).fetchall() == []


def test_ensure_pgvector_reports_too_old_server_version_cleanly(conn):
    assert migrate.ensure_pgvector(conn).startswith("0.")


def test_upgrade_on_unreachable_url_is_one_clear_line():
    with pytest.raises(DatabaseError) as err:
        migrate.upgrade("postgresql://me:s3cret@127.0.0.1:1/nothing")
    message = str(err.value)
    assert "cannot connect" in message and "s3cret" not in message and "\n" not in message
