"""Revision 0014 (issue 34): content tables partitioned by vault. A populated database goes back to 0013 and
up again with every row and every search result unchanged (a public console role still sees no restricted
row, and cannot read a partition directly); a search naming a vault reads one partition; removing a vault
drops its partitions."""

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
    for table in ("chunks", "bm25_postings", "bm25_term_stats", f"embeddings_{suffix}"):
        assert relkind(aconn, table) == "p"
        assert aconn.execute("select count(*) as n from pg_inherits where inhparent = %s::regclass",
                             (table,)).fetchone()["n"] == 2, table
    assert every_row(aconn, suffix) == before
    assert searches(aconn, suffix, embedding) == owner_head
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        assert searches(conn, suffix, embedding, ("notes",)) == public_head
        # a partition read directly would bypass the parent's policies: it is closed to the role
        notes_id = aconn.execute("select id from vaults where name = 'notes'").fetchone()["id"]
        for table in ("chunks", f"embeddings_{suffix}", "bm25_postings", "bm25_term_stats"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL("select * from {}").format(sql.Identifier(f"{table}_p{notes_id}")))


@pytest.mark.usefixtures("indexed")
def test_removing_a_vault_drops_its_partitions(cli, aconn: psycopg.Connection) -> None:
    other = aconn.execute("select id from vaults where name = 'other'").fetchone()["id"]
    partitions = [r["relname"] for r in aconn.execute(
        "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid"
        " where c.relkind = 'r' and c.relname like %s", (f"%\\_p{other}",))]
    assert len(partitions) == 4  # chunks, postings, term statistics, the model's embeddings
    code, _, err = cli("vault", "remove", "other")
    assert code == 0, err
    assert all(aconn.execute("select to_regclass(%s) as r", (p,)).fetchone()["r"] is None for p in partitions)
    assert aconn.execute("select count(*) as n from documents where vault_id = %s", (other,)).fetchone()["n"] == 0
    assert aconn.execute("select count(*) as n from bm25_vault_stats where vault_id = %s",
                         (other,)).fetchone()["n"] == 0
    assert {r["vault"] for r in aconn.execute("select * from match_lexical_chunks(%s, 50)", (QUERY,))} == {"notes"}
