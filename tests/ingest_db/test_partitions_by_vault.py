"""Revisions 0014 (issue 34) and 0020 (issue 49): content tables partitioned by vault, small vaults sharing the
default partition. A populated database goes back to 0013, and to 0019 (a partition per vault), and up again with
every row and every search result unchanged (a public console role still sees no restricted row, and cannot
read a partition directly); a vault that passes ingest.own_partition_min_chunks moves to partitions of its own
with every search result unchanged; removing a vault drops its partitions, or deletes only its rows from the
shared ones."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql

from rag.store import migrate
from tests.ingest_db.test_row_security import (  # noqa: F401
    PUBLIC_NOTES,
    QUERY,
    call_every_match_function,
    console_conn,
    indexed,
    model_suffix,
)

# every column 0013 had, per table (0014 adds vault_id to the embeddings and document_retrievals)
ROWS = {
    "documents": "select * from documents order by id",
    "chunks": "select * from chunks order by id",
    "bm25_postings": "select * from bm25_postings order by vault_id, lexeme, chunk_id",
    "bm25_term_stats": "select * from bm25_term_stats order by vault_id, lexeme, level",
    "bm25_vault_stats": "select * from bm25_vault_stats order by vault_id, level",
    "document_retrievals": "select document_id, retrievals, last_retrieved_at from document_retrievals order by 1",
    "vaults": "select * from vaults order by id",
}


def every_row(conn: psycopg.Connection, suffix: str) -> dict[str, list[dict[str, Any]]]:
    rows = {name: conn.execute(query).fetchall() for name, query in ROWS.items()}
    # 0015's flag (whose links were read) is not 0013's: compared as 0013 holds the documents
    rows["documents"] = [{k: v for k, v in r.items() if k != "links_indexed"} for r in rows["documents"]]
    rows["embeddings"] = conn.execute(sql.SQL("select chunk_id, embedding::text from {} order by 1").format(
        sql.Identifier(f"embeddings_{suffix}"))).fetchall()
    rows["next_chunk_id"] = conn.execute(
        "select last_value, is_called from chunks_id_seq").fetchall()
    return rows


def searches(conn: psycopg.Connection, suffix: str, embedding: str,
             vaults: tuple[str, ...] = ("notes", "other")) -> dict[str, Any]:
    found: dict[str, Any] = call_every_match_function(conn, suffix, embedding)
    for vault in vaults:
        scoped = psycopg.types.json.Jsonb({"vault": vault})
        found[f"native {vault}"] = conn.execute(sql.SQL("select * from {}(%s::vector, 0, 50, %s)").format(
            sql.Identifier(f"match_native_chunks_{suffix}")), (embedding, scoped)).fetchall()
        found[f"hybrid {vault}"] = conn.execute(sql.SQL("select * from {}(%s, %s::vector, 50, %s)").format(
            sql.Identifier(f"match_hybrid_chunks_{suffix}")), (QUERY, embedding, scoped)).fetchall()
        found[f"lexical {vault}"] = conn.execute("select * from match_lexical_chunks(%s, 50, %s)",
                                                 (QUERY, scoped)).fetchall()
    return found


def relkind(conn: psycopg.Connection, table: str) -> str:
    return str(conn.execute("select relkind from pg_class where oid = %s::regclass", (table,)).fetchone()["relkind"])


@pytest.mark.usefixtures("indexed")
def test_0014_moves_a_populated_database_with_nothing_lost(cli, db_url: str, aconn: psycopg.Connection) -> None:
    suffix = model_suffix(aconn)
    embedding = aconn.execute(sql.SQL("select embedding::text as e from {} limit 1").format(
        sql.Identifier(f"embeddings_{suffix}"))).fetchone()["e"]
    assert cli("search", QUERY)[0] == 0  # a retrieval count, so document_retrievals has rows
    owner_head = searches(aconn, suffix, embedding)
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        public_head = searches(conn, suffix, embedding, ("notes",))
    assert {(r["vault"], r["source_path"]) for r in owner_head["lexical notes"]} >= {("notes", "vault/secret.md")}
    assert {(r["vault"], r["source_path"]) for r in public_head["hybrid notes"]} == PUBLIC_NOTES

    migrate.downgrade(db_url, "0013")
    assert relkind(aconn, "chunks") == "r" and relkind(aconn, f"embeddings_{suffix}") == "r"
    before = every_row(aconn, suffix)
    assert before["document_retrievals"] and before["embeddings"] and len({r["vault_id"] for r in before["chunks"]}) == 2

    assert migrate.upgrade(db_url) == migrate.head_revision()
    for table in CONTENT_TABLES + (f"embeddings_{suffix}",):
        assert relkind(aconn, table) == "p"
        # two vaults of a few chunks each: both in the shared partition
        assert partitions(aconn, table) == [f"{table}_shared"], table
    assert every_row(aconn, suffix) == before
    assert searches(aconn, suffix, embedding) == owner_head
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        assert searches(conn, suffix, embedding, ("notes",)) == public_head
        assert_closed(conn, aconn, suffix)


CONTENT_TABLES = ("chunks", "bm25_postings", "bm25_term_stats")


def partitions(conn: psycopg.Connection, table: str) -> list[str]:
    return sorted(r["relname"] for r in conn.execute(
        "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = %s::regclass",
        (table,)))


def assert_closed(conn: psycopg.Connection, owner: psycopg.Connection, suffix: str) -> None:
    """Every partition, shared or a vault's own, read directly by the console role: refused (a partition read
    directly would bypass the parent's policies)."""
    for table in CONTENT_TABLES + (f"embeddings_{suffix}",):
        for part in partitions(owner, table):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL("select * from {}").format(sql.Identifier(part)))


@pytest.mark.usefixtures("indexed")
def test_0020_moves_small_vaults_into_the_shared_partition_with_nothing_lost(
        cli, db_url: str, aconn: psycopg.Connection) -> None:
    suffix = model_suffix(aconn)
    embedding = aconn.execute(sql.SQL("select embedding::text as e from {} limit 1").format(
        sql.Identifier(f"embeddings_{suffix}"))).fetchone()["e"]
    assert cli("search", QUERY)[0] == 0
    migrate.downgrade(db_url, "0019")
    ids = {r["name"]: r["id"] for r in aconn.execute("select id, name from vaults")}
    for table in CONTENT_TABLES + (f"embeddings_{suffix}",):  # today's layout: a partition per vault
        assert partitions(aconn, table) == sorted(f"{table}_p{i}" for i in ids.values()), table
    before = every_row(aconn, suffix)
    owner_before = searches(aconn, suffix, embedding)
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        public_before = searches(conn, suffix, embedding, ("notes",))
    assert migrate.upgrade(db_url) == migrate.head_revision()
    for table in CONTENT_TABLES + (f"embeddings_{suffix}",):
        assert partitions(aconn, table) == [f"{table}_shared"], table
    assert every_row(aconn, suffix) == before
    assert searches(aconn, suffix, embedding) == owner_before
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        assert searches(conn, suffix, embedding, ("notes",)) == public_before
        assert {(r["vault"], r["source_path"]) for r in public_before["hybrid notes"]} == PUBLIC_NOTES


@pytest.mark.usefixtures("indexed")
def test_a_vault_passing_the_threshold_moves_with_every_search_unchanged(cli, aconn: psycopg.Connection) -> None:
    suffix = model_suffix(aconn)
    embedding = aconn.execute(sql.SQL("select embedding::text as e from {} limit 1").format(
        sql.Identifier(f"embeddings_{suffix}"))).fetchone()["e"]
    notes = aconn.execute("select id from vaults where name = 'notes'").fetchone()["id"]
    stored = aconn.execute("select count(*) as n from chunks where vault_id = %s", (notes,)).fetchone()["n"]
    rows = every_row(aconn, suffix)
    owner = searches(aconn, suffix, embedding)
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        public = searches(conn, suffix, embedding, ("notes",))
    # at the threshold it stays; one chunk more (stored + expected) and it moves, as an index run asks
    assert aconn.execute("select ragpg_place_vault(%s, 0, %s) as m", (notes, stored)).fetchone()["m"] is False
    assert aconn.execute("select ragpg_place_vault(%s, 1, %s) as m", (notes, stored)).fetchone()["m"] is True
    assert aconn.execute("select ragpg_place_vault(%s, 1, %s) as m", (notes, stored)).fetchone()["m"] is False
    for table in CONTENT_TABLES + (f"embeddings_{suffix}",):
        assert partitions(aconn, table) == sorted([f"{table}_shared", f"{table}_p{notes}"]), table
    own = aconn.execute(sql.SQL("select count(*) as n from {}").format(sql.Identifier(f"chunks_p{notes}"))).fetchone()
    assert own["n"] == stored
    assert every_row(aconn, suffix) == rows
    assert searches(aconn, suffix, embedding) == owner
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        assert searches(conn, suffix, embedding, ("notes",)) == public
        assert_closed(conn, aconn, suffix)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="own_partition_min_chunks must be >= 0"):
        aconn.execute("select ragpg_place_vault(%s, 1, -1)", (notes,))


def test_an_index_run_moves_a_vault_past_the_setting(cli, tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                     aconn: psycopg.Connection) -> None:
    from tests.ingest_db.test_row_security import NOTES
    from tests.support.files import write_files
    assert cli("vault", "add", "small", str(write_files(tmp_path / "small", NOTES)))[0] == 0
    assert cli("vault", "add", "grown", str(write_files(tmp_path / "grown", NOTES)))[0] == 0
    monkeypatch.setenv("RAGPG_INGEST__OWN_PARTITION_MIN_CHUNKS", "2")
    code, _, err = cli("index", "--quiet", "grown")
    assert code == 0, err
    placed = {r["name"]: r["own"] for r in aconn.execute(
        "select name, ragpg_vault_has_own_partition(id) as own from vaults")}
    assert placed == {"small": False, "grown": True}
    code, _, err = cli("index", "--quiet")
    assert code == 0, err
    hits = aconn.execute("select * from match_lexical_chunks(%s, 50)", (QUERY,)).fetchall()
    assert {r["vault"] for r in hits} == {"small", "grown"}
    assert aconn.execute("select ragpg_vault_has_own_partition(id) as own from vaults where name = 'small'"
                         ).fetchone()["own"] is True  # its run passed the setting too


@pytest.mark.usefixtures("indexed")
def test_removing_a_vault_deletes_only_its_rows(cli, aconn: psycopg.Connection) -> None:
    ids = {r["name"]: r["id"] for r in aconn.execute("select id, name from vaults")}
    suffix = model_suffix(aconn)
    tables = CONTENT_TABLES + (f"embeddings_{suffix}",)
    def rows_of(t: str, where: str = "true") -> list[dict[str, Any]]:
        return aconn.execute(sql.SQL("select x::text as row from {} x where {} order by x::text").format(
            sql.Identifier(t), sql.SQL(where))).fetchall()

    kept = {t: rows_of(t, f"vault_id = {ids['notes']}") for t in tables}
    code, _, err = cli("vault", "remove", "other")  # in the shared partition: its rows deleted there
    assert code == 0, err
    for t in tables:
        assert aconn.execute(sql.SQL("select count(*) as n from {} where vault_id = %s").format(sql.Identifier(t)),
                             (ids["other"],)).fetchone()["n"] == 0, t
        assert rows_of(t) == kept[t], t
    assert aconn.execute("select count(*) as n from documents where vault_id = %s", (ids["other"],)).fetchone()["n"] == 0
    assert aconn.execute("select count(*) as n from bm25_vault_stats where vault_id = %s",
                         (ids["other"],)).fetchone()["n"] == 0
    assert {r["vault"] for r in aconn.execute("select * from match_lexical_chunks(%s, 50)", (QUERY,))} == {"notes"}
    # a vault with partitions of its own: they are dropped
    assert aconn.execute("select ragpg_place_vault(%s, 1, 0) as m", (ids["notes"],)).fetchone()["m"] is True
    own = [p for t in tables for p in partitions(aconn, t) if p.endswith(f"_p{ids['notes']}")]
    assert len(own) == 4
    code, _, err = cli("vault", "remove", "notes")
    assert code == 0, err
    assert all(aconn.execute("select to_regclass(%s) as r", (p,)).fetchone()["r"] is None for p in own)
    assert all(partitions(aconn, t) == [f"{t}_shared"] for t in tables)
