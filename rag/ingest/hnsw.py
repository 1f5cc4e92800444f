"""Bulk loads into a model's embeddings table: drop its HNSW index(es), load, rebuild them.

Inserting into an HNSW index costs far more per vector than building the index over the same rows
afterwards (measured on the Obsidian help vault, 384 dims: ~1.4 ms a vector inserted vs ~0.36 ms a
row rebuilt), so a flush that adds many vectors relative to the table's size drops the index,
COPYs, and recreates it from its own definition (`pg_get_indexdef`) — all in the CALLER'S
transaction. DDL in Postgres is transactional: a crash or error rolls back to the old table and
index. Trade-off: `drop index` takes an ACCESS EXCLUSIVE lock on the table, so concurrent searches
of that model wait until the flush commits (the rebuild included); that is accepted for large loads
(a first index run), while small flushes on a big table keep the plain incremental insert.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.rows import class_row

_HNSW_INDEXES = sql.SQL(
    "select n.nspname as schema, c.relname as name, pg_get_indexdef(i.indexrelid) as definition "
    "from pg_index i join pg_class c on c.oid = i.indexrelid "
    "join pg_namespace n on n.oid = c.relnamespace join pg_am a on a.oid = c.relam "
    "where i.indrelid = %s::regclass and a.amname = 'hnsw' order by c.relname")


@dataclass(frozen=True)
class BulkLoadPolicy:
    """When a flush of `n` vectors rebuilds the index instead of inserting into it."""

    min_vectors: int
    min_fraction: float

    def applies(self, conn: psycopg.Connection, table: str, n: int) -> bool:
        if n < self.min_vectors:
            return False
        # Two writers of this table (index runs of two vaults) that both counted under their
        # ACCESS SHARE lock and then both asked for `drop index`'s ACCESS EXCLUSIVE one would
        # deadlock. This self-conflicting mode serialises bulk candidates up front; searches and
        # plain inserts are not blocked by it.
        conn.execute(sql.SQL("lock table {} in share update exclusive mode").format(sql.Identifier(table)))
        # Bulk iff existing rows <= n / min_fraction; counting stops one row past that bound, so the
        # check costs O(n) even on a huge table.
        bound = math.floor(n / self.min_fraction)
        query = sql.SQL("select count(*) from (select from {} limit %s) s").format(sql.Identifier(table))
        with conn.cursor(row_factory=class_row(_Count)) as cur:
            found = cur.execute(query, (bound + 1,)).fetchone()
        return found is not None and found.count <= bound


@dataclass(frozen=True)
class _Count:
    count: int


@dataclass(frozen=True)
class _IndexDef:
    schema: str
    name: str
    definition: str


@contextmanager
def indexes_rebuilt(conn: psycopg.Connection, table: str) -> Iterator[None]:
    """Drop `table`'s HNSW indexes, run the body, recreate them identically (caller's transaction)."""
    with conn.cursor(row_factory=class_row(_IndexDef)) as cur:
        found = cur.execute(_HNSW_INDEXES, (sql.Identifier(table).as_string(conn),)).fetchall()
    for index in found:
        conn.execute(sql.SQL("drop index {}.{}").format(sql.Identifier(index.schema), sql.Identifier(index.name)))
    yield
    for index in found:
        conn.execute(sql.SQL(index.definition))  # type: ignore[arg-type]  # pg_get_indexdef output
