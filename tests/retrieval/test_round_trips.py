"""On an autocommit connection a retrieval call is one statement: no BEGIN, COMMIT or SAVEPOINT
round trips; a failed call still leaves the connection idle and usable. (libpq's protocol trace
shows what was sent.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import pq

from rag.errors import InputError
from rag.retrieval import retrieve
from rag.store import models
from rag.store.database import open_connection
from tests.retrieval.corpus import hash_embedding

TRANSACTION_COMMANDS = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[Callable[[psycopg.Connection], Path]]:
    opened: list[tuple[psycopg.Connection, object]] = []

    def trace(conn: psycopg.Connection) -> Path:
        path = tmp_path / f"trace-{len(opened)}.txt"
        fh = path.open("w")
        conn.pgconn.trace(fh.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        opened.append((conn, fh))
        return path

    yield trace
    for conn, fh in opened:
        if not conn.closed:
            conn.pgconn.untrace()
        fh.close()


def sent_transaction_commands(path: Path) -> list[str]:
    sent = [line for line in path.read_text().splitlines() if line.startswith("F\t")]  # frontend → server
    return [cmd for line in sent for cmd in TRANSACTION_COMMANDS if f'"{cmd}' in line]


def search_all(conn: psycopg.Connection, model: models.EmbeddingModelRef) -> None:
    embedding = hash_embedding("common notes", model.dims)
    assert retrieve.match_vector(conn, model, embedding, match_count=5, similarity_threshold=-1)
    assert retrieve.match_lexical(conn, "common", match_count=5)
    assert retrieve.match_hybrid(conn, model, "common", embedding, match_count=5, similarity_threshold=-1)


def test_autocommit_connection_sends_only_the_statements(filter_db, traced):
    with open_connection(filter_db.url, autocommit=True) as conn:
        path = traced(conn)
        search_all(conn, filter_db.model)
        conn.pgconn.untrace()
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert sent_transaction_commands(path) == []


def test_transactional_connection_wraps_each_call(filter_db, traced):
    # the control: the same calls on a connection outside autocommit run in their own transactions
    with open_connection(filter_db.url) as conn:
        path = traced(conn)
        search_all(conn, filter_db.model)
        conn.pgconn.untrace()
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert sent_transaction_commands(path).count("BEGIN") == 3
    assert sent_transaction_commands(path).count("COMMIT") == 3


def test_failed_call_on_autocommit_connection_leaves_it_usable(filter_db):
    with open_connection(filter_db.url, autocommit=True) as conn:
        with pytest.raises(InputError, match="^query embedding has 3 dimensions"):
            retrieve.match_vector(conn, filter_db.model, [0.1, 0.2, 0.3], match_count=5)
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        with pytest.raises(InputError, match="^invalid filter"):
            retrieve.match_lexical(conn, "common", match_count=5, filter={"year": {"$bogus": 1}})
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        search_all(conn, filter_db.model)


def vector_text_sent(path: Path) -> bool:
    """Whether a query embedding went as pgvector text ('[0.1,...]') in a Bind message."""
    return any(line.startswith("F\t") and "\tBind\t" in line and "'[" in line for line in path.read_text().splitlines())


def test_query_embedding_travels_binary_when_pgvector_is_registered(filter_db, traced):
    # formatting 384 floats as text costs more than a third of an HNSW probe; a connection without
    # pgvector's types (a replica's) still sends text, with the same results
    embedding = hash_embedding("common notes", filter_db.model.dims)
    results = {}
    for registered in (True, False):
        with open_connection(filter_db.url, autocommit=True, register_vector=registered) as conn:
            path = traced(conn)
            results[registered] = (
                retrieve.match_vector(conn, filter_db.model, embedding, match_count=5, similarity_threshold=-1),
                retrieve.match_hybrid(conn, filter_db.model, "common", embedding, match_count=5,
                                      similarity_threshold=-1),
                retrieve.match_folders(conn, filter_db.model, embedding))
            conn.pgconn.untrace()
        assert vector_text_sent(path) is not registered
    assert results[True] == results[False]
    assert results[True][0] and results[True][1]
