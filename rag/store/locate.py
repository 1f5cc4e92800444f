"""Where the database is: DATABASE_URL when set, otherwise the embedded server, started and
brought to the schema head on first use; `connect` opens a connection there.

Kept apart from `rag.store.database` (how to connect to a URL), which `rag.store.migrate` needs:
starting the embedded server migrates it, so this module sits above both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rag.config import Settings
from rag.errors import DatabaseError
from rag.store.database import Connection, open_connection
from rag.store.embedded import EmbeddedServer


def embedded_server(settings: Settings) -> EmbeddedServer:
    return EmbeddedServer(settings.data_dir)


def resolve_database_url(settings: Settings, *, start: bool = True) -> str:
    """DATABASE_URL when set; otherwise the embedded server's URL, starting it when asked."""
    if settings.database_url:
        return settings.database_url
    server = embedded_server(settings)
    status = server.status()
    if status.running and status.url:
        return status.url
    if not start:
        raise DatabaseError("the embedded server is not running; run `ragpg db start`")
    started = server.start()
    assert started.url is not None
    # The embedded database is ragpg's own: bring its schema to head on first start, so
    # `ragpg vault add` on a fresh machine works without a separate `ragpg db upgrade`. Imported
    # here: alembic and SQLAlchemy are a quarter second of every CLI command's start otherwise.
    from rag.store import migrate

    migrate.upgrade(started.url)
    return started.url


@contextmanager
def connect(settings: Settings, *, autocommit: bool = False) -> Iterator[Connection]:
    conn = open_connection(resolve_database_url(settings), autocommit=autocommit,
                           connect_timeout_s=settings.db.connect_timeout_s)
    try:
        yield conn
    finally:
        conn.close()
