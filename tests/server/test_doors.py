"""The server's doors against a hostile web page and hostile clients (issue 29), through a real
`ragpg serve` on loopback spoken to byte by byte: only its own Host names are answered (DNS
rebinding), other origins are refused, and slow clients are cut off."""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import time
from pathlib import Path

import psycopg
import pytest

from rag.store import keys as key_store
from tests.server.rawhttp import read_all, send
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


# -- slow clients ------------------------------------------------------------------------------------

TIMEOUT_S = 1.0  # server.header_timeout_s and server.body_timeout_s in these tests
# A server without deadlines is still holding the connection by then; 19 times TIMEOUT_S, so a loaded
# 2-core machine cuts in time (a passing run never waits for it).
GIVE_UP_S = 20.0


def _trickle(sock: socket.socket, data: bytes, every_s: float = 0.2) -> tuple[float, bytes]:
    """Send `data` a byte at a time until the server closes the connection (or GIVE_UP_S passes):
    (seconds until it closed, what it sent back)."""
    sock.settimeout(every_s)
    started = time.monotonic()
    received = b""
    for i in range(len(data)):
        if time.monotonic() - started > GIVE_UP_S:
            break
        try:
            sock.sendall(data[i:i + 1])
        except OSError:  # reset by the server
            break
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        received += chunk
        if b"HTTP/1.1 408" in received and received.endswith(b"}"):
            break
    return time.monotonic() - started, received


@pytest.fixture
def impatient_server(db_url: str, conn: psycopg.Connection, tmp_path: Path):
    seed(conn)
    proc, port = start(db_url, tmp_path, "--workers", "2", extra_env={
        "RAGPG_SERVER__HEADER_TIMEOUT_S": str(TIMEOUT_S), "RAGPG_SERVER__BODY_TIMEOUT_S": str(TIMEOUT_S)})
    yield port
    stop(proc)


def _assert_timed_out(elapsed: float, received: bytes) -> None:
    assert elapsed < GIVE_UP_S - 1, f"still open after {elapsed:.1f} s"
    if received:  # a 408 in the error envelope, then the close
        assert received.startswith(b"HTTP/1.1 408"), received
        assert b'"code":"request_timeout"' in received


def test_slow_headers_slow_bodies_and_silent_sockets_are_cut(impatient_server: int) -> None:
    port = impatient_server
    own = f"127.0.0.1:{port}"
    headers = (f"GET /v1/vaults HTTP/1.1\r\nHost: {own}\r\n" + "".join(f"X-Pad-{i}: {'a' * 20}\r\n"
                                                                       for i in range(40)) + "\r\n").encode()
    body = json.dumps({"query": "launch codes " * 20}).encode()
    post = (f"POST /v1/search HTTP/1.1\r\nHost: {own}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    with contextlib.ExitStack() as stack:
        crowd = [stack.enter_context(socket.create_connection(("127.0.0.1", port))) for _ in range(20)]
        for sock in crowd:  # a crowd of half-open requests, as Slowloris holds them
            sock.sendall(b"GET /v1/vaults HTTP/1.1\r\nHost: ")
        elapsed, received = _trickle(stack.enter_context(socket.create_connection(("127.0.0.1", port))), headers)
        _assert_timed_out(elapsed, received)
        assert received.startswith(b"HTTP/1.1 408")  # bytes came: the client is told why

        slow_body = stack.enter_context(socket.create_connection(("127.0.0.1", port)))
        slow_body.sendall(post)  # the headers at once, then the body a byte at a time
        elapsed, received = _trickle(slow_body, body)
        _assert_timed_out(elapsed, received)
        assert received.startswith(b"HTTP/1.1 408")

        silent = stack.enter_context(socket.create_connection(("127.0.0.1", port)))
        silent.settimeout(GIVE_UP_S)
        started = time.monotonic()
        assert silent.recv(1024) == b""  # nothing sent, nothing said back: just closed
        assert time.monotonic() - started < GIVE_UP_S - 1

        for sock in crowd:  # every one of the crowd was cut too
            sock.settimeout(GIVE_UP_S)
            try:
                assert sock.recv(65536).startswith(b"HTTP/1.1 408")
            except ConnectionResetError:
                pass
        # and meanwhile, and afterwards, everybody else is served
        assert send(port, "GET", "/v1/vaults", {"Host": own}).status == 200
        kept = send(port, "POST", "/v1/search", {"Host": own, "Content-Type": "application/json"}, body)
        assert kept.status == 404  # past the doors (nothing is embedded in the seed), not a timeout
        assert send(port, "GET", "/v1/vaults", {"Host": "evil.example"}).status == 421  # in workers too


@pytest.fixture(params=["h11", "httptools"])
def uvicorn_server(request, make_runtime, seeded):
    """The app under uvicorn in a thread with the deadlines on one parser or the other."""
    import threading

    import uvicorn

    from ragpg_server.app import create_app
    from ragpg_server.protocol import TimedH11Protocol, TimedHttpToolsProtocol
    from tests.server.test_serve_cli import free_port

    port = free_port()
    cls = TimedH11Protocol if request.param == "h11" else TimedHttpToolsProtocol
    app = create_app(make_runtime(host="127.0.0.1", port=port))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", http=functools.partial(
        cls, header_timeout_s=TIMEOUT_S, body_timeout_s=TIMEOUT_S)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(timeout=30)


def test_both_parsers_keep_the_deadlines_and_serve_the_patient(uvicorn_server: int) -> None:
    port = uvicorn_server
    own = f"127.0.0.1:{port}"
    request = f"GET /v1/vaults HTTP/1.1\r\nHost: {own}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        # a slow but timely client: the headers over half the deadline, then two requests kept alive
        for i in range(len(request)):
            sock.sendall(request[i:i + 1])
            time.sleep(0.5 * TIMEOUT_S / len(request))
        sock.settimeout(5)
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first
        sock.sendall(request)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        # then a kept-alive connection that starts a request and stalls is cut like a new one
        sock.sendall(b"GET /v1/vaults HTTP/1.1\r\n")
        elapsed, received = _trickle(sock, b"X-Slow: " + b"a" * 200)
        _assert_timed_out(elapsed, received)
        assert received.startswith(b"HTTP/1.1 408")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"POST /v1/search HTTP/1.1\r\nHost: {own}\r\nContent-Type: application/json\r\n"
                     "Content-Length: 400\r\n\r\n{".encode())
        elapsed, received = _trickle(sock, b'"query": "x"' * 30)
        _assert_timed_out(elapsed, received)
        assert received.startswith(b"HTTP/1.1 408") and b"server.body_timeout_s" in received
    assert send(port, "GET", "/v1/vaults", {"Host": own}).status == 200


def test_a_pipelined_request_with_a_slow_body_is_cut_too(uvicorn_server: int) -> None:
    port = uvicorn_server
    own = f"127.0.0.1:{port}"
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"GET /v1/vaults HTTP/1.1\r\nHost: {own}\r\n\r\n"
                     f"POST /v1/search HTTP/1.1\r\nHost: {own}\r\nContent-Type: application/json\r\n"
                     "Content-Length: 400\r\n\r\n{".encode())
        elapsed, received = _trickle(sock, b'"query": "x"' * 30)
        first, _, rest = received.partition(b"]}")  # the GET's answer, then the POST's
        assert first.startswith(b"HTTP/1.1 200")
        _assert_timed_out(elapsed, rest)
        assert rest.startswith(b"HTTP/1.1 408")


def test_two_host_or_origin_headers_are_refused(keyless_server: int) -> None:
    port = keyless_server
    own = f"127.0.0.1:{port}"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /v1/vaults HTTP/1.1\r\nHost: {own}\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
                     .encode())
        data = read_all(sock)
    assert data.startswith(b"HTTP/1.1 421") or data.startswith(b"HTTP/1.1 400"), data
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /v1/vaults HTTP/1.1\r\nHost: {own}\r\nOrigin: http://{own}\r\nOrigin: http://evil.example\r\n"
                     "Connection: close\r\n\r\n".encode())
        assert read_all(sock).startswith(b"HTTP/1.1 403")
