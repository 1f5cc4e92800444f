"""The connections of a running ragpg: the primary's pool (DATABASE_URL or the embedded server),
the read replica's when one is configured, their outage guards, connections that read as a caller's
scope, and the query log's background writer. `rag.runtime.Runtime` holds one `DatabasePools`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg
from psycopg.rows import dict_row

from rag.config import Settings
from rag.errors import DatabaseError
from rag.store.database import Connection, mask_url, open_connection
from rag.store.locate import resolve_database_url
from rag.store.outage import OutageGuard
from rag.store.row_security import apply_read_scope, clear_read_scope, scope_settings

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from rag.access import Scope
    from rag.store.query_log import QueryLogWriter
    from rag.store.replica import ReplayWait

POOL_MIN_SIZE = 1


def _configure(conn: Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.commit()


@contextmanager
def _reading_as(conn: Connection, scope: Scope) -> Iterator[None]:
    apply_read_scope(conn, scope)
    if not conn.autocommit:  # committed, so a rollback by the caller cannot undo the scope
        conn.commit()
    try:
        yield
    finally:
        try:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            clear_read_scope(conn)
        except psycopg.Error:
            conn.close()  # never lend a connection that may still read as someone: the pool replaces it
        else:
            if not conn.autocommit:
                conn.commit()


def _restore_transactional(conn: Connection) -> None:
    """Give the pool its connection back as it lent it (autocommit off), or closed: the pool
    replaces a closed connection rather than lend one in an unexpected state."""
    if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.close()
        return
    conn.autocommit = False


@dataclass
class DatabasePools:
    """Pools open on first use; `close` flushes the query log and closes them (a later use opens anew)."""

    settings: Settings
    max_size: int = 10
    _pool: ConnectionPool[Connection] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _url: str | None = field(default=None, repr=False)
    _outage: OutageGuard | None = field(default=None, repr=False)
    # The read replica's pool and guard (settings.read_database_url); None until first used, or ever without one.
    _read_pool: ConnectionPool[Connection] | None = field(default=None, repr=False)
    _read_outage: OutageGuard | None = field(default=None, repr=False)
    _query_log: QueryLogWriter | None = field(default=None, repr=False)

    @property
    def pool(self) -> ConnectionPool[Connection]:
        """The primary's pool (DATABASE_URL or the embedded server)."""
        with self._lock:
            if self._pool is None:
                self._pool = self._open_pool(self._database_url(), "ragpg")
            return self._pool

    @property
    def has_read_replica(self) -> bool:
        return bool(self.settings.read_database_url)

    @property
    def read_pool(self) -> ConnectionPool[Connection]:
        """The read replica's pool when one is configured, else the primary's."""
        if not self.settings.read_database_url:
            return self.pool
        with self._lock:
            if self._read_pool is None:
                try:
                    self._read_pool = self._open_pool(self.settings.read_database_url, "ragpg-read")
                except DatabaseError as exc:  # say which of the two databases is unreachable
                    raise DatabaseError(str(exc).replace("the database", "the read replica", 1)) from None
            return self._read_pool

    def _database_url(self) -> str:
        if self._url is None:
            self._url = resolve_database_url(self.settings)
        return self._url

    def primary_url(self) -> str:
        """Where writes go (resolving DATABASE_URL or the embedded server, started if need be)."""
        return self._database_url()

    def wait_for_read_replica(self) -> ReplayWait | None:
        """After writes that reads must see (an index run): wait for the read replica to replay them, at
        most db.replica_wait_s (rag/store/replica.py). None when there is no read replica."""
        if not self.settings.read_database_url:
            return None
        from rag.store.replica import wait_after_writes

        return wait_after_writes(self.settings, self.primary_url())

    def _open_pool(self, url: str, name: str) -> ConnectionPool[Connection]:
        from psycopg_pool import ConnectionPool

        db = self.settings.db
        # One plain connection first: an unreachable database is one clear error within
        # connect_timeout_s, not a pool retrying (and logging each retry) until its timeout.
        open_connection(url, register_vector=False, connect_timeout_s=db.connect_timeout_s).close()
        pool = ConnectionPool(url, min_size=POOL_MIN_SIZE, max_size=self.max_size,
                              kwargs={"row_factory": dict_row, "connect_timeout": max(1, round(db.connect_timeout_s))},
                              configure=_configure,
                              # a connection left dead by a database restart is replaced before use
                              check=ConnectionPool.check_connection,
                              timeout=db.pool_wait_s, open=False, name=name)
        try:
            pool.open(wait=True, timeout=db.connect_timeout_s + db.pool_wait_s)
        except Exception:
            pool.close(timeout=0)
            raise DatabaseError(f"cannot connect to the database at {mask_url(url)}") from None
        return pool

    def _replace_pool(self) -> None:
        """After an outage: a fresh pool connects now; the old one would wait out its reconnect backoff."""
        with self._lock:
            old, self._pool = self._pool, None
        if old is not None:
            old.close(timeout=0)

    def _replace_read_pool(self) -> None:
        with self._lock:
            old, self._read_pool = self._read_pool, None
        if old is not None:
            old.close(timeout=0)

    @property
    def outage(self) -> OutageGuard:
        """The primary's outage guard."""
        with self._lock:
            if self._outage is None:
                db = self.settings.db
                self._outage = OutageGuard(self._database_url, db.connect_timeout_s, db.outage_probe_interval_s,
                                           self._replace_pool)
            return self._outage

    @property
    def read_outage(self) -> OutageGuard:
        """The read replica's outage guard when one is configured, else the primary's."""
        read_url = self.settings.read_database_url
        if not read_url:
            return self.outage
        with self._lock:
            if self._read_outage is None:
                db = self.settings.db
                self._read_outage = OutageGuard(lambda: read_url, db.connect_timeout_s, db.outage_probe_interval_s,
                                                self._replace_read_pool)
            return self._read_outage

    @contextmanager
    def connection(self, *, autocommit: bool = False, scope: Scope | None = None,
                   read: bool = False) -> Iterator[Connection]:
        """A pooled connection. ``autocommit=True`` suits a run of reads (a search, compute_context):
        each statement stands alone, so no BEGIN, COMMIT or SAVEPOINT round trips. While the database
        is down this fails at once (DatabaseError) instead of waiting (rag/store/outage.py).
        With a limited ``scope`` the connection reads as that scope (row-level security,
        rag/store/row_security.py) until it goes back to the pool. ``read=True``: for reads only, from
        the read replica when one is configured (rag/store/replica.py); writing on it fails."""
        if scope is not None and scope_settings(scope) is not None:
            with self._connection(autocommit, read) as conn, _reading_as(conn, scope):
                yield conn
            return
        with self._connection(autocommit, read) as conn:
            yield conn

    @contextmanager
    def _connection(self, autocommit: bool, read: bool) -> Iterator[Connection]:
        outage = self.read_outage if read else self.outage
        outage.before_use()
        try:
            pool = self.read_pool if read else self.pool
        except DatabaseError as exc:  # cannot connect at all
            outage.failed(str(exc))
            raise
        lent: Connection | None = None
        try:
            with pool.connection() as conn:
                lent = conn
                if not autocommit:
                    yield conn
                    return
                conn.autocommit = True
                try:
                    yield conn
                finally:
                    _restore_transactional(conn)
        except psycopg.OperationalError as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            # An outage only when no connection could be had, or the one lent died: a cancelled or
            # failed statement on a live connection says nothing about the database being down.
            if lent is None or lent.broken or lent.closed:
                outage.failed(reason)
            raise DatabaseError(f"database unavailable: {reason}") from None

    @property
    def query_log(self) -> QueryLogWriter:
        """The background writer of the SQL console's query log (started on first use)."""
        with self._lock:
            if self._query_log is None:
                from rag.store.query_log import QueryLogWriter

                s = self.settings.retrieval
                self._query_log = QueryLogWriter(self._open_for_query_log, queue_size=s.query_log_queue_size,
                                                 batch_size=s.query_log_batch_size,
                                                 linger_s=s.query_log_linger_ms / 1000, exit_flush_s=s.query_log_flush_s)
            return self._query_log

    def _open_for_query_log(self) -> Connection:
        return open_connection(self._database_url(), autocommit=True,
                               connect_timeout_s=self.settings.db.connect_timeout_s)

    def close(self) -> None:
        with self._lock:
            writer, self._query_log = self._query_log, None
        if writer is not None:
            writer.close(self.settings.retrieval.query_log_flush_s)
        with self._lock:
            pools, self._pool, self._read_pool = (self._pool, self._read_pool), None, None
        for pool in pools:
            if pool is not None:
                pool.close()


