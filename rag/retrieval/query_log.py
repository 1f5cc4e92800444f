"""What the SQL console learns from questions asked through ragpg: each question's embedding (so
`search_hybrid('question')` in psql can run its vector leg without Python) and which notes came up
(`ragpg_most_retrieved_notes`), db/sql/90_console_search.sql.

Retrieval only queues its record (`log_retrieval`); the runtime's background writer
(rag/store/query_log.py) writes queued records in batches on the primary, so the question never
waits for the write, and a failure to record never fails the question. `record_query` writes one
record at once, for `ragpg embed`, whose whole point is the cached embedding.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from rag.store.database import Connection
from rag.store.query_log import QueryRecord
from rag.types import Candidate

if TYPE_CHECKING:  # the runtime is handed in by the entry point (rag.runtime)
    from rag.runtime import Runtime

log = logging.getLogger("ragpg.query_log")


def log_retrieval(rt: Runtime, model_id: int | None, query: str, embedding: np.ndarray | None,
                  candidates: Sequence[Candidate] = (), top: int = 0) -> bool:
    """Queue `query`'s embedding for `model_id` and a retrieval for the notes of the first `top`
    candidates. Returns whether it was queued (False when the queue is full)."""
    chunk_ids = tuple(c.chunk_id for c in list(candidates)[:top])
    return rt.query_log.submit(QueryRecord(model_id, query, embedding, chunk_ids))


RECORD_SQL = "select ragpg_record_query(%s, %s, %s, %s, %s)"


def record_query(conn: Connection, model_id: int | None, query: str, embedding: np.ndarray | None,
                 candidates: Sequence[Candidate] = (), top: int = 0, *, cached_by: str | None = None) -> bool:
    """Record now, on `conn` (the owner's connection to the primary); the embedding is cached as
    `cached_by`'s (a console role's; None: the connection's own role). Returns whether it was recorded."""
    chunk_ids = [c.chunk_id for c in list(candidates)[:top]]
    params: tuple[Any, ...] = (model_id, query, embedding if embedding is not None else None, chunk_ids, cached_by)
    try:
        if conn.autocommit:
            conn.execute(RECORD_SQL, params)
        else:
            with conn.transaction():  # a savepoint: a failure leaves the caller's transaction usable
                conn.execute(RECORD_SQL, params)
    except psycopg.Error as exc:
        if conn.broken:
            raise
        log.warning("query not recorded for the SQL console: %s", str(exc).strip().splitlines()[0] if str(exc) else exc)
        return False
    return True
