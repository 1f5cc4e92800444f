"""`ragpg serve`: loopback-only without keys, a real uvicorn on loopback, several workers."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.store import keys as key_store
from ragpg_server.app import create_app_from_env
from tests.server.conftest import LOCAL_URL
from tests.support.cli import REPO, ragpg, subprocess_env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(db_url: str, tmp_path: Path) -> dict[str, str]:
    return {"DATABASE_URL": db_url, "RAGPG_EMBEDDING__MODEL": "hash", "RAGPG_CONFIG": str(tmp_path / "none.toml"),
            "RAGPG_DATA_DIR": str(tmp_path / "data")}


def start(db_url: str, tmp_path: Path, *args: str,
          extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    env = subprocess_env()
    env.update({**env_for(db_url, tmp_path), **(extra_env or {})})
    proc = subprocess.Popen([sys.executable, "-m", "ragpg_cli.main", "serve", "--port", str(port), *args],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc, port
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("server did not become healthy")


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def raw_get(port: int, path: str) -> str:
    """A request line sent as-is (no client-side dot-segment normalisation)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data.decode(errors="replace")


def test_refuses_public_host_without_keys(db_url: str, tmp_path: Path) -> None:
    result = ragpg("serve", "--host", "0.0.0.0", "--port", str(free_port()), env=env_for(db_url, tmp_path),
                   timeout=60)
    assert result.returncode != 0
    assert "no API keys configured" in result.stderr and "0.0.0.0" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_busy_port_is_one_line_and_not_the_database_code(db_url: str, tmp_path: Path, workers: str) -> None:
    """Another process holds the port: no "serving" line, one error line naming the address, and exit 1
    (a runtime failure), never 3, which says the database is unreachable."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = ragpg("serve", "--port", str(port), "--workers", workers, env=env_for(db_url, tmp_path), timeout=60)
    assert result.returncode == 1, result.stderr
    assert "serving" not in result.stderr and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: cannot listen on 127.0.0.1:{port}: the address is already in use "
                      "(another server? pick another --port)"]


def test_a_port_taken_after_the_check_is_still_not_exit_3(db_url: str, tmp_path: Path) -> None:
    """The race: the port is taken between ragpg's check and uvicorn's bind. uvicorn exits 3; ragpg
    turns that into its one-line runtime failure."""
    env = subprocess_env()
    env.update(env_for(db_url, tmp_path))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code = ("import sys; from ragpg_cli import serve; serve.check_address_free = lambda host, port: None; "
                f"from ragpg_cli.main import main; sys.exit(main(['serve', '--port', '{port}']))")
        result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[-1] == "error: the HTTP server could not start (the lines above say why)"


def test_serves_on_loopback_without_keys(db_url: str, tmp_path: Path) -> None:
    proc, port = start(db_url, tmp_path)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/v1/vaults").json() == {"vaults": []}
        # `..` sent raw (curl --path-as-is): refused with 400, nothing read from disk
        response = raw_get(port, "/v1/chunks/v/../../../../etc/passwd/0")
        assert response.startswith("HTTP/1.1 400"), response
        assert "path traversal" in response and "root:" not in response
    finally:
        err = stop(proc)
    assert "no API keys configured: serving on loopback only, without authentication" in err


def test_worker_factory_builds_its_own_settings(db_url: str, conn: psycopg.Connection, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """What each `--workers N` process runs: settings and runtime from the environment `serve` prepared."""
    _, key = key_store.create_key(conn, "k", vaults=[], all_vaults=True, clearance="restricted")
    for name, value in env_for(db_url, tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RAGPG_SERVER__CONCURRENCY", "3")
    app = create_app_from_env()
    with TestClient(app, base_url=LOCAL_URL, client=("127.0.0.1", 1)) as client:
        assert client.get("/v1/vaults").status_code == 401
        assert client.get("/v1/vaults", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        state = app.state.ragpg
        assert state.admission.concurrency == 3 and state.runtime.pool_max_size >= 3
    assert state.runtime.db._pool is None  # the lifespan closed the worker's pool
