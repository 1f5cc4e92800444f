"""Run-level deferral of the HNSW index (rag/ingest/hnsw.py): a bulk run builds it once at the end and
leaves nothing in deferred_indexes; a run killed while its index was dropped is repaired by the next
run; a deferral whose run is still alive is left alone."""

from __future__ import annotations

from pathlib import Path

import psycopg

from rag.config import Settings
from rag.ingest.hnsw import BulkLoadPolicy, defer_indexes, restore_deferred
from rag.store.database import open_connection
from tests.ingest_db.helpers import add, embedding_count, hnsw_definition, index, with_settings
from tests.support.files import write_files

TABLE = "embeddings_hash_feature_hash_384"
DEFINITION = hnsw_definition(TABLE)
ALWAYS = BulkLoadPolicy(min_vectors=1, min_fraction=0.001)


def notes(count: int) -> dict[str, str]:
    return {f"n{i:03d}.md": f"# Note {i}\n\nabout topic {i % 5}\n" for i in range(count)}


def hnsw_definitions(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("select pg_get_indexdef(indexrelid) as d from pg_index where indrelid = %s::regclass "
                        "and indisvalid", (TABLE,)).fetchall()
    return [r["d"] for r in rows if "hnsw" in r["d"]]


def index_oid(conn: psycopg.Connection) -> int:
    return conn.execute("select %s::regclass::oid::int8 as oid", (f"{TABLE}_hnsw_idx",)).fetchone()["oid"]


def deferred(conn: psycopg.Connection) -> int:
    return conn.execute("select count(*) as n from deferred_indexes").fetchone()["n"]


def test_a_bulk_run_builds_the_index_once_at_the_end(aconn: psycopg.Connection, settings: Settings,
                                                     tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {})
    add(aconn, "v", root)
    index(settings)  # registers the model: its index exists, over no rows
    before = index_oid(aconn)
    write_files(root, notes(40))
    # Batches of 4 documents: each one alone (or 4 merged) is below min_vectors, the run's 40 new
    # documents are not, so the index is dropped once and rebuilt at the end (a new oid).
    bulky = with_settings(settings, ingest={"bulk_load_min_vectors": 20, "upsert_batch_documents": 4})
    report = index(bulky).vaults[0]
    assert report.error is None and report.chunks_written == 40
    assert embedding_count(aconn, TABLE, "v") == 40
    assert hnsw_definitions(aconn) == [DEFINITION] and index_oid(aconn) != before
    assert deferred(aconn) == 0


def test_an_index_dropped_by_a_killed_run_is_rebuilt_by_the_next(aconn: psycopg.Connection, settings: Settings,
                                                                 db_url: str, tmp_path: Path) -> None:
    add(aconn, "v", write_files(tmp_path / "v", notes(3)))
    index(settings)
    killed = open_connection(db_url, autocommit=True)
    assert defer_indexes(killed, TABLE, ALWAYS, 100)
    assert hnsw_definitions(aconn) == [] and deferred(aconn) == 1

    # The stored definition is for inspection only: the rebuild is the index's code
    # (ragpg_create_hnsw_index), never text read back from the table.
    aconn.execute("update deferred_indexes set definition = 'drop table chunks cascade'")
    killed.close()  # the run dies: its advisory lock goes with its session
    write_files(tmp_path / "v", {"new.md": "# New\n\ntext\n"})
    assert index(settings).vaults[0].files_indexed == 1
    assert hnsw_definitions(aconn) == [DEFINITION] and deferred(aconn) == 0


def test_a_live_runs_deferral_is_not_taken_over(aconn: psycopg.Connection, settings: Settings, db_url: str,
                                                tmp_path: Path) -> None:
    add(aconn, "v", write_files(tmp_path / "v", notes(3)))
    index(settings)
    other = open_connection(db_url, autocommit=True)
    try:
        assert defer_indexes(other, TABLE, ALWAYS, 100)
        assert restore_deferred(aconn) == 0
        assert hnsw_definitions(aconn) == [] and deferred(aconn) == 1
        assert restore_deferred(other, TABLE) == 1
        assert hnsw_definitions(aconn) == [DEFINITION] and deferred(aconn) == 0
    finally:
        other.close()
