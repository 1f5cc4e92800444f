"""Server fixtures: a Runtime over the per-test database, the app, an in-process client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from rag.config import ServerSettings, Settings
from rag.runtime import Runtime
from ragpg_server.app import create_app, pool_size_for
from tests.server.support import Keys, make_keys, seed

LOOPBACK = ("127.0.0.1", 50123)
REMOTE = ("203.0.113.7", 50123)
# The server answers only its own Host names (ragpg_server.hosts): the default bind, 127.0.0.1:8000.
LOCAL_URL = "http://127.0.0.1:8000"


def with_server(settings: Settings, **server: Any) -> Settings:
    return settings.model_copy(update={"server": ServerSettings(**{**settings.server.model_dump(), **server})})


@pytest.fixture
def make_runtime(settings: Settings) -> Iterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def build(**server: Any) -> Runtime:
        s = with_server(settings, **server)
        rt = Runtime.from_settings(s, pool_max_size=pool_size_for(s.server.concurrency))
        made.append(rt)
        return rt

    yield build
    for rt in made:
        rt.close()


@pytest.fixture
def runtime(make_runtime: Callable[..., Runtime]) -> Runtime:
    return make_runtime()


@pytest.fixture
def app(runtime: Runtime) -> FastAPI:
    return create_app(runtime)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, base_url=LOCAL_URL, client=LOOPBACK, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def seeded(conn: psycopg.Connection) -> psycopg.Connection:
    seed(conn)
    return conn


@pytest.fixture
def keys(seeded: psycopg.Connection) -> Keys:
    return make_keys(seeded)
