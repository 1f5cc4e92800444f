"""Fixtures split by concern: tests/support/pg.py (databases), tests/support/llm_fixtures.py (LLM stub)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LANGFUSE_TRACING_ENABLED", "false")

import psycopg  # noqa: E402
import pytest  # noqa: E402

from rag.config import Settings, load_settings  # noqa: E402
from rag.store.database import open_connection  # noqa: E402
from tests.support.pg import TestServer  # noqa: E402

try:  # the LLM stub fixtures (helper module may be absent in partial checkouts)
    from tests.support.llm_fixtures import llm_stub  # noqa: F401,E402
except ImportError:  # pragma: no cover
    pass

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[TestServer]:
    server = TestServer()
    try:
        server.start()
    except Exception as exc:  # a clear exit instead of a wall of errors
        server.stop()
        pytest.exit(f"cannot start the test PostgreSQL server: {exc}", returncode=3)
    yield server
    server.stop()


@pytest.fixture
def db_url(pg_server: TestServer) -> Iterator[str]:
    """A fresh database cloned from the migrated template (fast per-test isolation)."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    connection = open_connection(db_url)
    yield connection
    connection.close()


@pytest.fixture
def aconn(db_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection (for code that commits itself, per batch or per statement)."""
    connection = open_connection(db_url, autocommit=True)
    yield connection
    connection.close()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    """Settings pointing at the per-test database, with the hash embedder (fast, deterministic)."""
    os.environ.pop("RAGPG_CONFIG", None)
    return load_settings(tmp_path / "absent-config.toml", database_url=db_url, data_dir=tmp_path / "data",
                         embedding={"model": "hash"})


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
