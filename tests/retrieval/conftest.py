"""Fixtures of the retrieval tests.

Creating a database per test costs about a second here, so the package shares one database and
``conn`` (overriding the suite-wide fixture) is a connection whose transaction is rolled back
after the test: every test still starts from the freshly migrated schema. Retrieval calls run in
savepoints inside that transaction. Tests that need committed data (other connections) use
``db_url``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

from rag.store import models
from rag.store.database import open_connection
from tests.retrieval.corpus import build_filter_corpus


@dataclass(frozen=True)
class FilterDB:
    conn: psycopg.Connection
    url: str
    model: models.EmbeddingModelRef
    keys: dict[str, int]

    def names(self, chunk_ids) -> frozenset[str]:
        by_id = {v: k for k, v in self.keys.items()}
        return frozenset(by_id[i] for i in chunk_ids)


@pytest.fixture(scope="package")
def filter_db(pg_server) -> Iterator[FilterDB]:
    """FILTER_CORPUS in its own database, committed; tests must not write to it."""
    name = pg_server.create_database("filters")
    url = pg_server.url(name)
    conn = open_connection(url)
    try:
        model, keys = build_filter_corpus(conn)
        conn.commit()
        yield FilterDB(conn, url, model, keys)
    finally:
        conn.close()
        pg_server.drop_database(name)


@pytest.fixture(scope="package")
def module_db_url(pg_server) -> Iterator[str]:
    name = pg_server.create_database("retrieval")
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.fixture
def conn(module_db_url: str) -> Iterator[psycopg.Connection]:
    connection = open_connection(module_db_url)
    connection.execute("select 1")  # open the transaction the test's writes are rolled back with
    try:
        yield connection
    finally:
        connection.rollback()
        connection.close()
