"""How to connect to a database URL: one place for timeouts, row factory, pgvector types and the
masked one-line error, and the typed read of a query's single column (`fetch_column`). Where the
database is (DATABASE_URL or the embedded server) is `rag.store.locate`."""

from __future__ import annotations

import re
from typing import TypeAlias, TypeVar

import psycopg
from psycopg.abc import Params, QueryNoTemplate
from psycopg.rows import DictRow, dict_row, scalar_row

from rag.config import DbSettings
from rag.errors import DatabaseError
from rag.secrets import mask_url as mask_url  # where connection errors and `ragpg db` find it

#: Every connection ragpg opens (open_connection, the runtime's pool) returns rows as dicts.
Connection: TypeAlias = psycopg.Connection[DictRow]

CONNECT_TIMEOUT_S = DbSettings().connect_timeout_s  # for callers without settings at hand

T = TypeVar("T")


def sqlalchemy_url(url: str) -> str:
    """The same URL for SQLAlchemy's psycopg 3 dialect."""
    return re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql+psycopg://", url)


def open_connection(url: str, *, autocommit: bool = False, register_vector: bool = True,
                    connect_timeout_s: float = CONNECT_TIMEOUT_S) -> Connection:
    try:
        # libpq counts whole seconds (and treats 1 as 2); at least 1 so 0 never means "wait forever".
        conn = psycopg.connect(url, autocommit=autocommit, connect_timeout=max(1, round(connect_timeout_s)),
                               row_factory=dict_row)
    except psycopg.OperationalError as exc:
        reason = " ".join(line.strip() for line in str(exc).strip().splitlines()) or "connection failed"
        raise DatabaseError(f"cannot connect to the database at {mask_url(url)}: {reason}") from None
    if register_vector:
        _register_vector(conn)
    return conn


def _register_vector(conn: Connection) -> None:
    from pgvector.psycopg import register_vector

    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        # The extension is not created yet (before `ragpg db upgrade`); plain SQL still works.
        if not conn.autocommit:
            conn.rollback()


def fetch_column(conn: Connection, kind: type[T], query: QueryNoTemplate, params: Params | None = None) -> list[T]:
    """The values of `query`'s one column, each checked to be a `kind` (a count, ids, names): the typed
    read of a single column, where a multi-column row is read into a dataclass (`class_row`)."""
    with conn.cursor(row_factory=scalar_row) as cur:
        cur.execute(query, params)
        if cur.description is None or len(cur.description) != 1:
            raise TypeError("fetch_column needs a query with exactly one column")
        values = cur.fetchall()
    wrong = [v for v in values if not isinstance(v, kind)]
    if wrong:
        raise TypeError(f"fetch_column: expected {kind.__name__} values, got {wrong[0]!r}")
    return values
