"""Issue 29: what a console role can count of the rows it may not read.

PostgreSQL's statistics count every row, hidden or not. What can be taken away cheaply is: the
per-table activity counters (pg_stat_user_tables and the functions behind it: live, dead, inserted,
deleted rows) and table sizes. What is left (planner estimates in pg_class and EXPLAIN, EXPLAIN
ANALYZE's "Rows Removed by Filter", timing) is documented in README's Security section.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.ingest_db.test_row_security import console_conn, indexed  # noqa: F401

pytestmark = [pytest.mark.security, pytest.mark.usefixtures("indexed")]

REFUSED = (
    "select n_live_tup from pg_stat_user_tables where relname = 'chunks'",
    "select n_tup_ins, n_tup_del from pg_stat_all_tables where relname = 'documents'",
    "select idx_tup_read from pg_stat_user_indexes where relname = 'chunks'",
    "select heap_blks_read from pg_statio_user_tables where relname = 'chunks'",
    "select pg_stat_get_live_tuples('chunks'::regclass)",
    "select pg_stat_get_tuples_inserted('documents'::regclass)",
    "select pg_stat_get_xact_tuples_inserted('documents'::regclass)",
    "select tup_inserted from pg_stat_database where datname = current_database()",
    "select pg_relation_size('chunks')",
    "select pg_total_relation_size('bm25_postings')",
    "select pg_table_size('documents')",
)


def test_a_console_role_cannot_count_hidden_rows_from_the_activity_statistics(
        cli, aconn: psycopg.Connection) -> None:
    with console_conn(cli, "--clearance", "public", "--vault", "notes") as conn:
        for probe in REFUSED:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(probe)
        # the planner's column statistics were never shown for tables under row-level security
        aconn.execute("analyze chunks, documents")
        assert conn.execute("select count(*) as n from pg_stats where tablename in ('chunks', 'documents')"
                            ).fetchone()["n"] == 0
    # the owner (and monitoring roles, pg_monitor) still read them
    assert aconn.execute("select n_live_tup from pg_stat_user_tables where relname = 'chunks'").fetchone() is not None
    assert aconn.execute("select sum(pg_relation_size(t.relid)) as n"  # each vault's partition
                         " from pg_partition_tree('chunks') t").fetchone()["n"] > 0
