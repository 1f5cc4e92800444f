"""Bulk loads into a model's embeddings table: drop its HNSW index(es), load, rebuild them.

Inserting into an HNSW index costs far more per vector than building the index over the same rows
afterwards (measured on the Obsidian help vault, 384 dims: ~1.4 ms a vector inserted vs ~0.36 ms a
row rebuilt), so a flush that adds many vectors relative to the table's size drops the index,
COPYs, and recreates it (`ragpg_drop_hnsw_index` / `ragpg_create_hnsw_index`, db/sql/
10_embedding_models.sql: the index definition is code, never read back from a table) — all in
the CALLER'S transaction. DDL in Postgres is transactional: a crash or error rolls back to the old table and
index. Trade-off: `drop index` takes an ACCESS EXCLUSIVE lock on the table, so concurrent searches
of that model wait until the flush commits (the rebuild included); that is accepted for large loads
(a first index run), while small flushes on a big table keep the plain incremental insert.

A whole index run can defer instead (`defer_indexes` / `restore_deferred`): when its first write is
a bulk load, the index is dropped in a committed transaction that records it in
`deferred_indexes` (its definition too, for inspection; rebuilding calls the SQL function), every batch of the run COPYs without it, and it is built once at the end. One
build instead of one per flush (on the Obsidian help vault a run did two rebuilds and ~500
incremental inserts: ~1.6 s, against ~0.4 s for one build), and searches are not blocked meanwhile:
without the index they scan exactly (same or better results, slower), and `create index` blocks
only writers. A killed run leaves the row behind; the next index run rebuilds from it first. A
session advisory lock held from drop to rebuild tells a live run's deferral from a dead one's.
The same deferral serves the `chunks` table's secondary indexes (GIN on metadata, the
folder btree; `ragpg_drop_deferrable_indexes` / `ragpg_create_deferred_indexes`, db/sql/
25_bulk_load.sql) for loads that dwarf the whole table, and one vault's graph for a bulk load of
that vault (rag/ingest/bulk.py: `table` is then the vault's partition, held detached meanwhile).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from psycopg import sql
from psycopg.rows import class_row

from rag.store.database import Connection, fetch_column

_DROP = sql.SQL("select index_name, definition from ragpg_drop_deferrable_indexes(%s)")
_CREATE = sql.SQL("select ragpg_create_deferred_indexes(%s)")


@dataclass(frozen=True)
class BulkLoadPolicy:
    """When a flush of `n` vectors rebuilds the index instead of inserting into it."""

    min_vectors: int
    min_fraction: float

    def applies(self, conn: Connection, table: str, n: int | None) -> bool:
        """`n` None: a load of unknown size that its caller declared bulk (rag/ingest/bulk.py)."""
        if n is not None and n < self.min_vectors:
            return False
        # Two writers of this table (index runs of two vaults) that both counted under their
        # ACCESS SHARE lock and then both asked for `drop index`'s ACCESS EXCLUSIVE one would
        # deadlock. This self-conflicting mode serialises bulk candidates up front; searches and
        # plain inserts are not blocked by it.
        conn.execute(sql.SQL("lock table {} in share update exclusive mode").format(sql.Identifier(table)))
        if n is None:
            return True
        # Bulk iff existing rows <= n / min_fraction; counting stops one row past that bound, so the
        # check costs O(n) even on a huge table.
        bound = math.floor(n / self.min_fraction)
        query = sql.SQL("select count(*) from (select from {} limit %s) s").format(sql.Identifier(table))
        return fetch_column(conn, int, query, (bound + 1,))[0] <= bound


@dataclass(frozen=True)
class _Dropped:
    index_name: str
    definition: str


def _drop(conn: Connection, table: str) -> list[_Dropped]:
    with conn.cursor(row_factory=class_row(_Dropped)) as cur:
        return cur.execute(_DROP, (table,)).fetchall()


@contextmanager
def indexes_rebuilt(conn: Connection, table: str) -> Iterator[None]:
    """Drop the model table's HNSW index, run the body, build it again (caller's transaction)."""
    dropped = _drop(conn, table)
    yield
    if dropped:
        conn.execute(_CREATE, (table,))


# First key of the advisory lock a run holds while one of its tables' indexes is deferred ("RAGD").
_DEFER_LOCK_CLASS = 0x52414744


def defer_indexes(conn: Connection, table: str, policy: BulkLoadPolicy, n: int | None) -> bool:
    """Drop `table`'s HNSW indexes until `restore_deferred(conn, table)` when `policy` says `n` new
    vectors make a bulk load; True when something was dropped. Commits (the run's later batches are
    their own transactions): call it on an autocommit connection, outside any transaction."""
    conn.execute("select pg_advisory_lock(%s::int, hashtext(%s))", (_DEFER_LOCK_CLASS, table))
    dropped = False
    try:
        with conn.transaction():
            if policy.applies(conn, table, n):
                found = _drop(conn, table)  # none when another run deferred it already
                for index in found:
                    conn.execute("insert into deferred_indexes (index_name, table_name, definition) "
                                 "values (%s, %s, %s)", (index.index_name, table, index.definition))
                dropped = bool(found)
    finally:
        if not dropped and not conn.closed:
            conn.execute("select pg_advisory_unlock(%s::int, hashtext(%s))", (_DEFER_LOCK_CLASS, table))
    return dropped


@dataclass(frozen=True)
class _Deferred:
    table_name: str
    missing: bool


# Rows whose run is gone (advisory lock free) or is this session's; an index that exists again
# (rebuilt by hand, or a model re-registered) is not built twice.
_TAKE_DEFERRED = sql.SQL(
    "delete from deferred_indexes where (%s::text is null or table_name = %s) "
    "and pg_try_advisory_xact_lock(%s::int, hashtext(table_name)) "
    "returning table_name, to_regclass(index_name) is null "
    "and to_regclass(quote_ident(table_name)) is not null as missing")


def restore_deferred(conn: Connection, table: str | None = None) -> int:
    """Build the deferred indexes of `table` (None: of every table whose deferring run is gone);
    returns how many were built. Each row is deleted in the transaction that builds its index, so
    two sessions never build the same one. `table` also releases this session's deferral lock."""
    try:
        with conn.transaction():
            with conn.cursor(row_factory=class_row(_Deferred)) as cur:
                rows = cur.execute(_TAKE_DEFERRED, (table, table, _DEFER_LOCK_CLASS)).fetchall()
            for row in rows:
                if row.missing:  # a table dropped meanwhile (model removed) needs no index
                    conn.execute(_CREATE, (row.table_name,))
        return sum(r.missing for r in rows)
    finally:
        if table is not None and not conn.closed:
            conn.execute("select pg_advisory_unlock(%s::int, hashtext(%s))", (_DEFER_LOCK_CLASS, table))
