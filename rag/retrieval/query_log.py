"""What the SQL console learns from questions asked through ragpg: each question's embedding (so
`search_hybrid('question')` in psql can run its vector leg without Python) and which notes came up
(`ragpg_most_retrieved_notes`). One statement per question, `ragpg_record_query`
(db/sql/90_console_search.sql); a failure to record never fails the question.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from rag.store.database import Connection
from rag.types import Candidate

log = logging.getLogger("ragpg.query_log")


def record_query(conn: Connection, model_id: int | None, query: str, embedding: np.ndarray | None,
                 candidates: Sequence[Candidate] = (), top: int = 0) -> bool:
    """Cache `query`'s embedding for `model_id` and count a retrieval for the notes of the first
    `top` candidates. Returns whether it was recorded."""
    chunk_ids = [c.chunk_id for c in list(candidates)[:top]]
    params: tuple[Any, ...] = (model_id, query, embedding if embedding is not None else None, chunk_ids)
    try:
        if conn.autocommit:
            conn.execute("select ragpg_record_query(%s, %s, %s, %s)", params)
        else:
            with conn.transaction():  # a savepoint: a failure leaves the caller's transaction usable
                conn.execute("select ragpg_record_query(%s, %s, %s, %s)", params)
    except psycopg.Error as exc:
        if conn.broken:
            raise
        log.warning("query not recorded for the SQL console: %s", str(exc).strip().splitlines()[0] if str(exc) else exc)
        return False
    return True
