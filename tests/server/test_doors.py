"""The server's doors against a hostile web page and hostile clients (issue 29), through a real
`ragpg serve` on loopback spoken to byte by byte: only its own Host names are answered (DNS
rebinding), other origins are refused, and slow clients are cut off."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from rag.store import keys as key_store
from tests.server.rawhttp import send
from tests.server.support import bearer, seed
from tests.server.test_serve_cli import start, stop

pytestmark = pytest.mark.security

FOREIGN_HOSTS = ["evil.example:{port}", "evil.example", "127.0.0.1.nip.io:{port}", "127.0.0.1:{other}",
                 "localhost:{other}", "localhost", "127.0.0.1@evil.example:{port}", ""]


@pytest.fixture
def keyless_server(db_url: str, conn: psycopg.Connection, tmp_path: Path):
    seed(conn)  # vaults alpha and beta, with restricted text
    proc, port = start(db_url, tmp_path)
    yield port
    stop(proc)


def _is_error(resp, status: int, code: str) -> dict:
    assert resp.status == status, (resp.status, resp.body)
    body = resp.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert "x-request-id" in resp.headers
    assert not any(name.startswith("access-control-") for name in resp.headers)
    return body["error"]


def test_a_foreign_host_is_421_before_anything_answers(keyless_server: int) -> None:
    """DNS rebinding: a page on evil.example that resolves its name to 127.0.0.1 sends Host: evil.example."""
    port = keyless_server
    own = {"Host": f"127.0.0.1:{port}"}
    listed = send(port, "GET", "/v1/vaults", own)
    assert listed.status == 200 and {v["name"] for v in listed.json()["vaults"]} == {"alpha", "beta"}
    for template in FOREIGN_HOSTS:
        host = template.format(port=port, other=port + 1)
        for method, path, body in (("GET", "/v1/vaults", b""), ("GET", "/", b""), ("GET", "/healthz", b""),
                                   ("POST", "/v1/search", json.dumps({"query": "launch codes"}).encode()),
                                   ("GET", "/v1/chunks/alpha/secret/plan.md/0", b"")):
            resp = send(port, method, path, {"Host": host, "Content-Type": "application/json"}, body)
            err = _is_error(resp, 421, "misdirected_request")
            assert "RESTRICTED" not in resp.body.decode() and "alpha" not in resp.body.decode()
            assert "server.allowed_hosts" in err["message"]
    no_host = send(port, "GET", "/v1/vaults", {}, version="1.0")
    _is_error(no_host, 421, "misdirected_request")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        assert send(port, "GET", "/v1/vaults", {"Host": host}).status == 200, host


def test_another_origin_is_403_and_gets_no_cors_headers(keyless_server: int) -> None:
    port = keyless_server
    own = f"127.0.0.1:{port}"
    search = json.dumps({"query": "launch codes"}).encode()
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null", f"http://localhost:{port + 1}",
                   f"http://{own}.evil.example", f"ftp://{own}"):
        for method, path, body in (("GET", "/v1/vaults", b""), ("POST", "/v1/search", search),
                                   ("OPTIONS", "/v1/search", b"")):
            headers = {"Host": own, "Origin": origin, "Content-Type": "application/json",
                       "Access-Control-Request-Method": "POST"}
            err = _is_error(send(port, method, path, headers, body), 403, "cross_origin_refused")
            assert "server.allowed_origins" in err["message"]
    # without an Origin header a browser still marks what another site's page sent
    for site in ("cross-site", "same-site"):
        _is_error(send(port, "GET", "/v1/vaults", {"Host": own, "Sec-Fetch-Site": site, "Sec-Fetch-Mode": "cors"}),
                  403, "cross_origin_refused")
    # the page's own requests, and a user following a link to it, work
    for headers in ({"Origin": f"http://{own}"}, {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"},
                    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, {"Sec-Fetch-Site": "none"}):
        for path in ("/", "/v1/vaults"):
            resp = send(port, "GET", path, {"Host": own, **headers})
            assert resp.status == 200, (headers, resp.body)
            assert not any(name.startswith("access-control-") for name in resp.headers)
    passed = send(port, "POST", "/v1/search", {"Host": own, "Origin": f"http://{own}",
                                                "Content-Type": "application/json"}, search)
    assert passed.json()["error"]["code"] == "not_found"  # past the doors: nothing is embedded in the seed


def test_a_key_does_not_make_a_foreign_host_acceptable(db_url: str, conn: psycopg.Connection,
                                                        tmp_path: Path) -> None:
    """Keys on: a foreign Host is still refused first (421, not 401), and the key's requests pass."""
    seed(conn)
    _, key = key_store.create_key(conn, "k", vaults=["alpha"], clearance="public")
    proc, port = start(db_url, tmp_path)
    try:
        _is_error(send(port, "GET", "/v1/vaults", {"Host": "evil.example", **bearer(key)}), 421, "misdirected_request")
        _is_error(send(port, "GET", "/v1/vaults", {"Host": "evil.example"}), 421, "misdirected_request")
        assert send(port, "GET", "/v1/vaults", {"Host": f"localhost:{port}", **bearer(key)}).status == 200
        _is_error(send(port, "GET", "/v1/vaults", {"Host": f"localhost:{port}"}), 401, "unauthorized")
    finally:
        stop(proc)


def test_configured_hosts_and_origins(db_url: str, conn: psycopg.Connection, tmp_path: Path) -> None:
    """server.allowed_hosts (a proxy's name) and server.allowed_origins (a web app's), from the environment."""
    seed(conn)
    proc, port = start(db_url, tmp_path, extra_env={
        "RAGPG_SERVER__ALLOWED_HOSTS": '["ragpg.internal", "notes.example.org:443"]',
        "RAGPG_SERVER__ALLOWED_ORIGINS": '["https://app.example.org"]'})
    try:
        for host in ("ragpg.internal", f"ragpg.internal:{port}", "notes.example.org:443", f"127.0.0.1:{port}"):
            assert send(port, "GET", "/v1/vaults", {"Host": host}).status == 200, host
        for host in ("notes.example.org", "notes.example.org:80", "evil.example"):
            _is_error(send(port, "GET", "/v1/vaults", {"Host": host}), 421, "misdirected_request")
        app_origin = {"Host": "ragpg.internal", "Origin": "https://app.example.org"}
        resp = send(port, "GET", "/v1/vaults", app_origin)
        assert resp.status == 200 and resp.headers["access-control-allow-origin"] == "https://app.example.org"
        preflight = send(port, "OPTIONS", "/v1/search", {**app_origin, "Access-Control-Request-Method": "POST",
                                                          "Access-Control-Request-Headers": "authorization"})
        assert preflight.status == 200 and "POST" in preflight.headers["access-control-allow-methods"]
        _is_error(send(port, "GET", "/v1/vaults", {"Host": "ragpg.internal", "Origin": "https://evil.example"}),
                  403, "cross_origin_refused")
    finally:
        stop(proc)


@pytest.mark.parametrize("value, parsed", [
    ("LocalHost:8000", ("localhost", 8000)), ("[::1]:8000", ("[::1]", 8000)), ("[::1]", ("[::1]", None)),
    ("notes.example.org", ("notes.example.org", None)), ("localhost:", None), ("localhost:99999", None),
    ("localhost:80x", None), ("[::1]x", None), ("user@localhost:8000", None), ("localhost/x", None), ("", None),
])
def test_host_values_are_parsed_strictly(value: str, parsed) -> None:
    from ragpg_server.hosts import split_host

    assert split_host(value) == parsed
