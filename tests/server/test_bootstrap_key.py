"""`server.api_key` (env RAGPG_SERVER__API_KEY, docker-compose's RAGPG_API_KEY): `ragpg serve` creates
that key at first start, so it may bind 0.0.0.0 with authentication on; weak or revoked keys refuse."""

from __future__ import annotations

import httpx
import psycopg
import pytest

from rag.errors import ConfigError
from rag.key_bootstrap import MIN_KEY_CHARS, ensure_configured_key
from rag.store import keys as key_store
from tests.server.test_serve_cli import env_for, free_port, start, stop
from tests.support.cli import ragpg

KEY = "compose-key-0123456789abcdefghij"


def test_first_start_creates_the_key_and_binds_every_interface(db_url: str, conn: psycopg.Connection,
                                                               tmp_path) -> None:
    env = {"RAGPG_SERVER__API_KEY": KEY}
    proc, port = start(db_url, tmp_path, "--host", "0.0.0.0", extra_env=env)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/v1/vaults").status_code == 401
        ok = httpx.get(f"http://127.0.0.1:{port}/v1/vaults", headers={"Authorization": f"Bearer {KEY}"})
        assert ok.status_code == 200 and ok.json() == {"vaults": []}
    finally:
        err = stop(proc)
    assert "API key 'env-" in err and "created" in err and "API key required on every request" in err
    assert KEY not in err  # the key itself is never printed
    keys = key_store.list_keys(conn)
    assert [(k.all_vaults, k.clearance, k.can_index) for k in keys] == [(True, "restricted", True)]

    proc, port = start(db_url, tmp_path, "--host", "0.0.0.0", extra_env=env)  # a restart: the same key, not a second one
    assert "present" in stop(proc)
    assert len(key_store.list_keys(conn)) == 1


def test_weak_or_revoked_keys_refuse_to_start(db_url: str, conn: psycopg.Connection, tmp_path) -> None:
    env = {**env_for(db_url, tmp_path), "RAGPG_SERVER__API_KEY": "short"}
    done = ragpg("serve", "--host", "0.0.0.0", "--port", str(free_port()), env=env, timeout=60)
    assert done.returncode != 0 and done.stderr.strip().splitlines() == [
        f"error: server.api_key is 5 characters; use at least {MIN_KEY_CHARS} "
        "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"]
    made = ensure_configured_key(conn, KEY)
    key_store.revoke_key(conn, made.name)
    with pytest.raises(ConfigError, match="revoked key"):
        ensure_configured_key(conn, KEY)
    with pytest.raises(ConfigError, match="printable ASCII"):
        ensure_configured_key(conn, "x" * MIN_KEY_CHARS + " y")
    done = ragpg("serve", "--port", str(free_port()), env={**env, "RAGPG_SERVER__API_KEY": KEY}, timeout=60)
    assert done.returncode != 0 and "revoked key" in done.stderr and "Traceback" not in done.stderr
