"""The composition root: what a running ragpg needs, built once at an entry point (the CLI, the
server, `default_runtime()` for in-process callers) and handed to the stages, which receive it and
never build their own: the settings, the database's connections (`rag.store.pools`), the embedder,
the optional LLM and the tracer. Pieces are created lazily."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rag.config import Settings, load_settings
from rag.store.pools import DatabasePools

if TYPE_CHECKING:
    from rag.access import Scope
    from rag.embed.base import Embedder
    from rag.llm import LLM
    from rag.store.database import Connection
    from rag.store.query_log import QueryLogWriter
    from rag.store.replica import ReplayWait


@dataclass
class Runtime:
    settings: Settings
    pool_max_size: int = 10
    _db: DatabasePools | None = field(default=None, repr=False)
    _embedder: Embedder | None = field(default=None, repr=False)
    _tracer: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **kwargs: Any) -> Runtime:
        return cls(settings or load_settings(), **kwargs)

    @property
    def db(self) -> DatabasePools:
        """The primary's and the read replica's connection pools (rag/store/pools.py)."""
        with self._lock:
            if self._db is None:
                self._db = DatabasePools(self.settings, self.pool_max_size)
            return self._db

    @contextmanager
    def connection(self, *, autocommit: bool = False, scope: Scope | None = None,
                   read: bool = False) -> Iterator[Connection]:
        """A pooled connection (`DatabasePools.connection`: autocommit, read scope, read replica)."""
        with self.db.connection(autocommit=autocommit, scope=scope, read=read) as conn:
            yield conn

    @property
    def has_read_replica(self) -> bool:
        return self.db.has_read_replica

    def primary_url(self) -> str:
        """Where writes go (resolving DATABASE_URL or the embedded server, started if need be)."""
        return self.db.primary_url()

    def wait_for_read_replica(self) -> ReplayWait | None:
        """After writes that reads must see: `DatabasePools.wait_for_read_replica`."""
        return self.db.wait_for_read_replica()

    @property
    def query_log(self) -> QueryLogWriter:
        """The background writer of the SQL console's query log (started on first use)."""
        return self.db.query_log

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

    def close(self) -> None:
        with self._lock:
            db = self._db
        if db is not None:
            db.close()


_default: Runtime | None = None
_default_lock = threading.Lock()


def default_runtime() -> Runtime:
    """For in-process callers that pass no runtime: built on first use, never at import time."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Runtime.from_settings()
        return _default
