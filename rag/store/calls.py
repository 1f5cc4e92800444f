"""One SQL call: its transaction (or savepoint) and the one place a database-side failure becomes
a ragpg error, shared by every module that runs the SQL functions (retrieval, the model registry).

Each call runs in its own transaction (on an idle autocommit connection its one statement is that
transaction), or in a savepoint when the connection is already inside one, so a failed call leaves
the caller's transaction usable. No psycopg exception escapes: bad input raises InputError, an
unknown object (a vault named in a filter) NotFoundError, anything else DatabaseError.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from rag.errors import DatabaseError, InputError, NotFoundError
from rag.store.database import Connection

T = TypeVar("T")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def map_database_error(exc: BaseException) -> Exception:
    """The one place a database-side failure becomes a ragpg error."""
    if isinstance(exc, UnicodeError):
        return InputError("text is not valid Unicode")
    if not isinstance(exc, psycopg.Error):
        return DatabaseError(_one_line(str(exc)) or type(exc).__name__)
    diag = getattr(exc, "diag", None)
    message = _one_line((diag.message_primary if diag is not None else None) or str(exc)) or type(exc).__name__
    state = exc.sqlstate or ""
    if isinstance(exc, psycopg.DataError) or state.startswith("22"):
        return InputError(message)
    if state == "42704":  # undefined object: an unknown vault named in a filter
        return NotFoundError(message)
    if state.startswith("54"):  # program limit exceeded: stack depth, statement too complex
        return InputError(f"input too complex: {message}")
    if state == "42883":
        return DatabaseError(f"{message}: the retrieval functions are missing; run `ragpg db upgrade`")
    if state == "57014":
        return DatabaseError(f"query canceled: {message}")
    return DatabaseError(message)


@contextmanager
def database_call(conn: Connection) -> Iterator[None]:
    try:
        if conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            # The statement is its own transaction: wrapping it would only add BEGIN and COMMIT
            # round trips, and a failure leaves nothing open.
            yield
        else:
            with conn.transaction():
                yield
    except (psycopg.Error, UnicodeError) as exc:
        raise map_database_error(exc) from None


def fetch_rows(conn: Connection, row_type: type[T], query: sql.SQL | sql.Composed, params: Mapping[str, Any]) -> list[T]:
    with database_call(conn), conn.cursor(row_factory=class_row(row_type)) as cur:
        cur.execute(query, params)
        return cur.fetchall()
