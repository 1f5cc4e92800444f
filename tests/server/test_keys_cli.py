"""`ragpg keys create|list|revoke` through the real CLI: the key is shown once and stored only as a
hash; bad input is a clear error that writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import psycopg
import pytest

from rag.errors import AuthError
from rag.store import keys as key_store
from tests.server.support import add_vault, row_counts
from tests.support.cli import ragpg


def env_for(db_url: str, tmp_path: Path) -> dict[str, str]:
    return {"DATABASE_URL": db_url, "RAGPG_CONFIG": str(tmp_path / "none.toml"),
            "RAGPG_DATA_DIR": str(tmp_path / "data")}


def test_create_list_revoke(db_url: str, conn: psycopg.Connection, tmp_path: Path) -> None:
    env = env_for(db_url, tmp_path)
    add_vault(conn, "alpha")
    add_vault(conn, "beta")
    created = ragpg("keys", "create", "reader", "--vault", "alpha", "--vault", "beta", "--clearance", "internal",
                    "--json", env=env)
    assert created.returncode == 0, created.stderr
    info = json.loads(created.stdout)
    plaintext = info["key"]
    assert plaintext.startswith(key_store.KEY_PREFIX) and len(plaintext) > 40
    assert info["vaults"] == ["alpha", "beta"] and info["clearance"] == "internal"
    plain = ragpg("keys", "create", "admin", "--all-vaults", "--clearance", "restricted", env=env)
    assert plain.returncode == 0, plain.stderr
    admin_key = plain.stdout.strip()  # stdout is the key alone; the notice goes to stderr
    assert admin_key.startswith(key_store.KEY_PREFIX) and "cannot be shown again" in plain.stderr

    # hashed at rest: the table holds the sha256 and a display prefix, never the key
    rows = conn.execute("select name, key_hash, key_prefix, vaults, all_vaults, clearance from api_keys"
                        " order by id").fetchall()
    conn.commit()
    assert [r["name"] for r in rows] == ["reader", "admin"]
    assert rows[0]["key_hash"] == hashlib.sha256(plaintext.encode()).hexdigest()
    for row, key in zip(rows, (plaintext, admin_key), strict=True):
        assert key not in json.dumps(row, default=str)
        assert key.startswith(row["key_prefix"]) and len(row["key_prefix"]) < len(key) // 3
    assert rows[1]["all_vaults"] is True and rows[1]["clearance"] == "restricted"
    assert key_store.authenticate(conn, plaintext).scope.clearance == "internal"

    listed = ragpg("keys", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert plaintext not in listed.stdout and admin_key not in listed.stdout
    by_name = {k["name"]: k for k in json.loads(listed.stdout)}
    assert by_name["reader"]["vaults"] == ["alpha", "beta"] and by_name["admin"]["vaults"] == "*"
    assert by_name["reader"]["revoked_at"] is None
    text = ragpg("keys", "list", env=env).stdout
    assert "reader" in text and "active" in text and plaintext not in text

    revoked = ragpg("keys", "revoke", "reader", env=env)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert json.loads(ragpg("keys", "list", "--json", env=env).stdout)[0]["revoked_at"] is not None
    assert "revoked" in ragpg("keys", "list", env=env).stdout
    assert key_store.any_active_keys(conn)  # the admin key is still active
    with pytest.raises(AuthError, match="revoked"):
        key_store.authenticate(conn, plaintext)


def test_bad_input_is_a_clear_error_and_writes_nothing(db_url: str, conn: psycopg.Connection,
                                                      tmp_path: Path) -> None:
    env = env_for(db_url, tmp_path)
    add_vault(conn, "alpha")
    assert ragpg("keys", "create", "dup", "--vault", "alpha", env=env).returncode == 0
    before = row_counts(conn)
    cases = [
        (("keys", "create", "k1", "--vault", "alpha", "--clearance", "secretish"), "unknown clearance 'secretish'"),
        (("keys", "create", "k2"), "at least one --vault"),
        (("keys", "create", "k3", "--vault", "alpha", "--all-vaults"), "either --vault names or --all-vaults"),
        (("keys", "create", "k4", "--vault", "../etc"), "invalid vault name '../etc'"),
        (("keys", "create", "dup", "--vault", "alpha"), "already exists"),
        (("keys", "create", "x" * 101, "--vault", "alpha"), "1-100 characters"),
        (("keys", "revoke", "nobody"), "no API key named 'nobody'"),
    ]
    for args, needle in cases:
        result = ragpg(*args, env=env)
        assert result.returncode != 0, (args, result.stdout)
        assert needle in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
        assert key_store.KEY_PREFIX not in result.stdout  # no key printed for a refused create
    assert row_counts(conn) == before


@pytest.mark.security
def test_a_key_for_a_vault_that_does_not_exist_is_refused(db_url: str, conn: psycopg.Connection,
                                                          tmp_path: Path) -> None:
    """`keys create --vault nosuch` made a key for a name any later vault could take."""
    env = env_for(db_url, tmp_path)
    add_vault(conn, "alpha")
    before = row_counts(conn)
    for args in (("--vault", "nosuch"), ("--vault", "alpha", "--vault", "nosuch"), ("--vault", "ALPHA")):
        result = ragpg("keys", "create", "k", *args, env=env)
        wanted = args[-1]
        assert result.returncode == 4, (args, result.stderr)
        assert result.stderr.splitlines() == [f"error: unknown vault '{wanted}' (known: alpha)"]
        assert result.stdout == "" and key_store.KEY_PREFIX not in result.stderr
    assert row_counts(conn) == before
    assert ragpg("keys", "create", "k", "--vault", "alpha", env=env).returncode == 0


@pytest.mark.security
def test_the_library_refuses_a_key_for_a_missing_vault_too(conn: psycopg.Connection) -> None:
    """The rule lives in rag.store.keys.create_key, so every way of making a key (CLI, the server's
    configured first key, a caller of the library) keeps it."""
    from rag.errors import NotFoundError

    add_vault(conn, "alpha")
    before = row_counts(conn)
    with pytest.raises(NotFoundError, match=r"^unknown vault 'nosuch' \(known: alpha\)$"):
        key_store.create_key(conn, "k", vaults=["alpha", "nosuch"])
    assert row_counts(conn) == before
    row, _ = key_store.create_key(conn, "k", vaults=["alpha"])
    assert row.vaults == ["alpha"]
