"""The database going away under a running app: every endpoint answers 503 with the error envelope
(never a 500, never a hang), /healthz says the database is unreachable, admission slots and pooled
connections are released, and the app recovers once the database is back.

The app reaches the test database through a small TCP proxy that the test cuts and restores.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.config import Settings
from rag.runtime import Runtime
from rag.store import keys as key_store
from ragpg_server.app import create_app, pool_size_for
from tests.server.conftest import LOCAL_URL, LOOPBACK, with_server
from tests.server.support import assert_pool_idle, bearer, seed
from tests.server.test_http import assert_error


class Proxy:
    """TCP on 127.0.0.1 → the database's socket (unix or TCP). `down()` drops every connection and
    stops listening; `up()` listens again on the same port."""

    def __init__(self, conn: psycopg.Connection) -> None:
        host, port = conn.info.host, conn.info.port
        self.upstream: tuple[int, str | tuple[str, int]] = (
            (socket.AF_UNIX, f"{host}/.s.PGSQL.{port}") if host.startswith("/") else (socket.AF_INET, (host, port)))
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        if self._listener is not None:
            try:  # wakes the thread blocked in accept() (close() alone does not, on Linux)
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            family, address = self.upstream
            server = socket.socket(family)
            server.connect(address)
            with self._lock:
                self._open.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def url(self, conn: psycopg.Connection) -> str:
        return f"postgresql://{conn.info.user}@127.0.0.1:{self.port}/{conn.info.dbname}?connect_timeout=2"


REQUESTS = [
    ("POST", "/v1/context", {"query": "gardening"}),
    ("POST", "/v1/ask", {"query": "gardening"}),
    ("POST", "/v1/search", {"query": "gardening"}),
    ("GET", "/v1/chunks/alpha/notes/public.md/0", None),
    ("GET", "/v1/vaults", None),
    ("POST", "/v1/index", {"vaults": ["alpha"]}),
    ("GET", "/v1/index/00000000-0000-0000-0000-000000000000", None),
]


@pytest.fixture
def proxy(conn: psycopg.Connection):
    p = Proxy(conn)
    p.up()
    yield p
    p.down()


def test_every_endpoint_503_while_the_database_is_down(settings: Settings, conn: psycopg.Connection,
                                                       proxy: Proxy, monkeypatch, tmp_path: Path) -> None:
    seed(conn)
    _, key = key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")
    s = with_server(settings.model_copy(update={"database_url": proxy.url(conn)}), concurrency=2, queue_size=4)
    rt = Runtime.from_settings(s, pool_max_size=pool_size_for(s.server.concurrency))
    app = create_app(rt)
    h = bearer(key)
    try:
        with TestClient(app, base_url=LOCAL_URL, client=LOOPBACK, raise_server_exceptions=False) as client:
            assert client.get("/healthz").status_code == 200
            assert client.get("/v1/vaults", headers=h).status_code == 200
            assert client.get("/v1/chunks/alpha/notes/public.md/0", headers=h).status_code == 200

            proxy.down()
            for method, path, body in REQUESTS:
                resp = client.request(method, path, json=body, headers=h)
                err = assert_error(resp, 503, "database_unavailable")
                assert "database" in err["message"] and "Traceback" not in err["message"], err
                assert rt.db.outage.down, path  # turned away by the outage guard, not left to hang
            health = client.get("/healthz")
            assert health.status_code == 503, health.text
            assert health.json()["database"] is False and health.json()["status"] == "unavailable"
            state = app.state.ragpg
            assert state.admission.in_flight == 0 and state.health_admission.in_flight == 0

            proxy.up()
            # the pool reconnects: within a few attempts every endpoint answers normally again
            deadline = time.monotonic() + 20
            while client.get("/healthz").status_code != 200:
                assert time.monotonic() < deadline, "no recovery after the database came back"
                time.sleep(0.2)
            for _ in range(3):  # a connection that died with the proxy may be discarded on first use
                if client.get("/v1/vaults", headers=h).status_code == 200:
                    break
            assert client.get("/v1/vaults", headers=h).status_code == 200
            assert client.get("/v1/chunks/alpha/notes/public.md/0", headers=h).status_code == 200
            assert_pool_idle(rt.db.pool)
    finally:
        rt.close()


def test_outage_fails_fast_and_recovers_quickly(settings: Settings, conn: psycopg.Connection, proxy: Proxy) -> None:
    """Item 11: a 503 with Retry-After at once while the database is down (even for requests queued
    behind each other), and normal answers soon after it comes back: one probe a second. The times
    are measured in bench/; here the mechanism is asserted (short pool timeouts, the outage guard)."""
    seed(conn)
    _, key = key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")
    s = with_server(settings.model_copy(update={"database_url": proxy.url(conn)}), concurrency=2, queue_size=8)
    rt = Runtime.from_settings(s, pool_max_size=pool_size_for(s.server.concurrency))
    h = bearer(key)
    try:
        with TestClient(create_app(rt), base_url=LOCAL_URL, client=LOOPBACK,
                        raise_server_exceptions=False) as client:
            assert client.get("/v1/vaults", headers=h).status_code == 200
            proxy.down()
            # Fail fast, as behaviour rather than wall time: the first request waits at most the
            # pool's short timeouts (configured below a second or two), and from then on the outage
            # guard knows the database is down and turns requests away before they touch the pool.
            assert (rt.db.pool.timeout, s.db.pool_wait_s) == (s.db.pool_wait_s, 1.0) and s.db.connect_timeout_s <= 2
            for i in range(4):
                for method, path, body in REQUESTS[:5]:
                    resp = client.request(method, path, json=body, headers=h)
                    assert resp.status_code == 503 and resp.headers["retry-after"] == "1", resp.text
                    assert rt.db.outage.down, (i, path)
            proxy.up()
            assert s.db.outage_probe_interval_s == 1.0  # a probe per second notices the database is back
            deadline = time.monotonic() + 20  # a guard against hanging, not a timing assertion
            while client.get("/v1/vaults", headers=h).status_code != 200:
                assert time.monotonic() < deadline, "no recovery after the database came back"
                time.sleep(0.1)
            assert not rt.db.outage.down
            assert client.get("/v1/chunks/alpha/notes/public.md/0", headers=h).status_code == 200
    finally:
        rt.close()
