"""What a running ragpg needs, built once at an entry point: settings, a connection pool,
the embedder, the optional LLM, the tracer and the profiles. Pieces are created lazily."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import dict_row

from rag.config import Settings, load_settings
from rag.errors import DatabaseError
from rag.store.database import mask_url, resolve_database_url

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from rag.embed.base import Embedder
    from rag.llm import LLM

POOL_MIN_SIZE = 1
POOL_TIMEOUT_S = 10.0


def _configure(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.commit()


def _restore_transactional(conn: psycopg.Connection) -> None:
    """Give the pool its connection back as it lent it (autocommit off), or closed: the pool
    replaces a closed connection rather than lend one in an unexpected state."""
    if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        conn.close()
        return
    conn.autocommit = False


@dataclass
class Runtime:
    settings: Settings
    pool_max_size: int = 10
    _pool: ConnectionPool | None = field(default=None, repr=False)
    _embedder: Embedder | None = field(default=None, repr=False)
    _tracer: Any = field(default=None, repr=False)
    _profiles: dict[str, Any] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **kwargs: Any) -> Runtime:
        return cls(settings or load_settings(), **kwargs)

    @property
    def pool(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                from psycopg_pool import ConnectionPool

                url = resolve_database_url(self.settings)
                self._pool = ConnectionPool(url, min_size=POOL_MIN_SIZE, max_size=self.pool_max_size,
                                            kwargs={"row_factory": dict_row}, configure=_configure,
                                            # a connection left dead by a database restart is
                                            # replaced before use instead of failing one request
                                            check=ConnectionPool.check_connection,
                                            timeout=POOL_TIMEOUT_S, open=False, name="ragpg")
                try:
                    self._pool.open(wait=True, timeout=POOL_TIMEOUT_S)
                except Exception:
                    self._pool = None
                    raise DatabaseError(f"cannot connect to the database at {mask_url(url)}") from None
            return self._pool

    @contextmanager
    def connection(self, *, autocommit: bool = False) -> Iterator[psycopg.Connection]:
        """A pooled connection. ``autocommit=True`` suits a run of reads (a search, compute_context):
        each statement stands alone, so no BEGIN, COMMIT or SAVEPOINT round trips."""
        try:
            with self.pool.connection() as conn:
                if not autocommit:
                    yield conn
                    return
                conn.autocommit = True
                try:
                    yield conn
                finally:
                    _restore_transactional(conn)
        except psycopg.OperationalError as exc:
            raise DatabaseError(f"database unavailable: {str(exc).strip().splitlines()[0]}") from None

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                from rag.embed.registry import get_embedder

                self._embedder = get_embedder(self.settings.embedding.model, self.settings.embedding)
            return self._embedder

    @property
    def llm(self) -> LLM | None:
        from rag.llm import get_llm

        return get_llm(self.settings.llm)

    @property
    def tracer(self) -> Any:
        with self._lock:
            if self._tracer is None:
                from rag.trace import Tracer

                self._tracer = Tracer.from_settings(self.settings)
            return self._tracer

    @property
    def profiles(self) -> dict[str, Any]:
        with self._lock:
            if self._profiles is None:
                from rag.profiles import load_profiles

                self._profiles = load_profiles(self.settings)
            return self._profiles

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


_default: Runtime | None = None
_default_lock = threading.Lock()


def default_runtime() -> Runtime:
    """For in-process callers that pass no runtime: built on first use, never at import time."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runtime.from_settings()
        return _default
