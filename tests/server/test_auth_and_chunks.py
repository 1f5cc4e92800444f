"""API keys, vault scoping and clearance on chunk fetch and vault listing; path traversal."""

from __future__ import annotations

import psycopg
import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import LOCAL_URL, REMOTE
from tests.server.support import Keys, bearer, row_counts
from tests.server.test_http import assert_error

PUBLIC = "/v1/chunks/alpha/notes/public.md/0"
INTERNAL = "/v1/chunks/alpha/notes/internal.md/0"
SECRET = "/v1/chunks/alpha/secret/plan.md/0"


def test_no_keys_loopback_is_open_and_unrestricted(client: TestClient, seeded: psycopg.Connection) -> None:
    resp = client.get(SECRET)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["content"] == "RESTRICTED launch codes 1234." and body["confidentiality"] == "restricted"
    assert body["ref"] == "alpha/secret/plan.md#0"
    names = [v["name"] for v in client.get("/v1/vaults").json()["vaults"]]
    assert names == ["alpha", "beta"]


def test_no_keys_remote_client_refused(app, seeded: psycopg.Connection) -> None:
    with TestClient(app, base_url=LOCAL_URL, client=REMOTE) as remote:
        assert_error(remote.get(PUBLIC), 401, "unauthorized", "loopback only")


def test_keys_required_once_any_exists(client: TestClient, keys: Keys) -> None:
    assert_error(client.get(PUBLIC), 401, "unauthorized", "missing API key")
    assert_error(client.get(PUBLIC, headers=bearer("rpg_not-a-real-key")), 401, "unauthorized", "invalid or revoked")
    assert_error(client.get(PUBLIC, headers=bearer(keys.revoked)), 401, "unauthorized", "invalid or revoked")
    assert_error(client.get(PUBLIC, headers={"Authorization": f"Basic {keys.admin}"}), 401, "unauthorized",
                 "Bearer")
    assert_error(client.get(PUBLIC, headers={"Authorization": "Bearer "}), 401, "unauthorized")
    assert client.get(PUBLIC, headers=bearer(keys.admin)).status_code == 200
    assert client.get(PUBLIC, headers={"X-API-Key": keys.admin}).status_code == 200
    # every /v1 route is behind the key
    for method, path, body in (("post", "/v1/context", {"query": "x"}), ("post", "/v1/ask", {"query": "x"}),
                               ("post", "/v1/search", {"query": "x"}), ("get", "/v1/vaults", None),
                               ("post", "/v1/index", {}),
                               ("get", "/v1/index/00000000-0000-0000-0000-000000000000", None)):
        resp = client.request(method, path, json=body)
        assert_error(resp, 401, "unauthorized", "missing API key")


def test_revoking_a_key_takes_effect_at_once(client: TestClient, keys: Keys, seeded: psycopg.Connection) -> None:
    from rag.store.keys import revoke_key

    assert client.get(PUBLIC, headers=bearer(keys.alpha_public)).status_code == 200
    revoke_key(seeded, "alpha-public")
    assert_error(client.get(PUBLIC, headers=bearer(keys.alpha_public)), 401, "unauthorized", "revoked")


def test_chunk_fetch_respects_vault_scope(client: TestClient, keys: Keys) -> None:
    assert_error(client.get("/v1/chunks/beta/b.md/0", headers=bearer(keys.alpha_public)), 403, "forbidden",
                 "vault 'beta'")
    assert client.get("/v1/chunks/beta/b.md/0", headers=bearer(keys.beta)).status_code == 200
    assert_error(client.get(PUBLIC, headers=bearer(keys.beta)), 403, "forbidden", "vault 'alpha'")
    # a vault that does not exist but is outside the scope is still a 403 (scope is checked first)
    assert_error(client.get("/v1/chunks/gamma/x.md/0", headers=bearer(keys.alpha_public)), 403, "forbidden")


def test_chunk_above_clearance_is_indistinguishable_from_missing(client: TestClient, keys: Keys) -> None:
    h = bearer(keys.alpha_public)
    assert client.get(PUBLIC, headers=h).status_code == 200
    hidden = assert_error(client.get(SECRET, headers=h), 404, "not_found")
    missing = assert_error(client.get("/v1/chunks/alpha/secret/nothing.md/0", headers=h), 404, "not_found")
    assert "RESTRICTED" not in hidden["message"]
    assert hidden["message"].replace("plan.md", "X") == missing["message"].replace("nothing.md", "X")
    assert_error(client.get(INTERNAL, headers=h), 404, "not_found")
    # the restricted key sees everything in alpha; the internal beta key sees internal beta content
    assert client.get(SECRET, headers=bearer(keys.alpha_restricted)).json()["content"].startswith("RESTRICTED")
    assert client.get("/v1/chunks/beta/b-internal.md/0", headers=bearer(keys.beta)).status_code == 200


def test_chunk_fetch_shape_and_not_found(client: TestClient, keys: Keys) -> None:
    h = bearer(keys.admin)
    body = client.get("/v1/chunks/alpha/notes/public.md/1", headers=h).json()
    assert body["content"] == "Second public chunk." and body["ordinal"] == 1
    assert body["text"] == body["content"]  # no markup to render here (tests/notes: rendered passages)
    assert body["vault"] == "alpha" and body["source_path"] == "notes/public.md"
    assert body["heading_path"].endswith("part 1") and body["start_line"] == 4
    # the contract lists its fields; internals (metadata, byte offsets) are not passed through
    assert set(body) == {"ref", "vault", "source_path", "ordinal", "heading_path", "content", "text", "token_count",
                         "start_line", "end_line", "title", "url", "doc_type", "confidentiality", "risk_flags",
                         "risk_score", "document_version", "indexed_at"}
    assert_error(client.get("/v1/chunks/alpha/notes/public.md/7", headers=h), 404, "not_found", "#7")
    assert_error(client.get("/v1/chunks/nope/notes/public.md/0", headers=h), 404, "not_found")
    assert_error(client.get("/v1/chunks/alpha/notes/public.md/-1", headers=h), 400, "invalid_request", "ordinal")
    assert_error(client.get("/v1/chunks/alpha/notes/public.md/one", headers=h), 400, "invalid_request", "ordinal")
    assert_error(client.get("/v1/chunks/al%20pha/notes/public.md/0", headers=h), 400, "invalid_request", "vault")


@pytest.mark.parametrize("raw_path, needle", [
    ("%2e%2e/%2e%2e/etc/passwd", "path traversal"),
    ("..%2F..%2Fetc%2Fpasswd", "path traversal"),
    ("notes/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "path traversal"),
    ("%2Fetc%2Fpasswd", "relative to the vault root"),
    ("/etc/passwd", "relative to the vault root"),
    ("C:%2Fwindows%2Fwin.ini", "relative to the vault root"),
    ("notes/%2e/public.md", "'.' path segments"),
    ("notes//public.md", "empty or"),
    ("notes%00.md", "NUL character"),
])
def test_path_traversal_is_400(client: TestClient, keys: Keys, seeded: psycopg.Connection, raw_path: str,
                               needle: str) -> None:
    before = row_counts(seeded)
    resp = client.get(f"/v1/chunks/alpha/{raw_path}/0", headers=bearer(keys.admin))
    assert_error(resp, 400, "invalid_input", needle)
    assert "root:" not in resp.text
    assert row_counts(seeded) == before


def test_vault_listing_is_scoped(client: TestClient, keys: Keys) -> None:
    all_vaults = client.get("/v1/vaults", headers=bearer(keys.admin)).json()["vaults"]
    assert [v["name"] for v in all_vaults] == ["alpha", "beta"]
    alpha = all_vaults[0]
    assert alpha == {"name": "alpha", "documents": 3, "chunks": 4, "last_indexed_at": None}
    assert [v["name"] for v in client.get("/v1/vaults", headers=bearer(keys.alpha_public)).json()["vaults"]] == [
        "alpha"]
    assert [v["name"] for v in client.get("/v1/vaults", headers=bearer(keys.beta)).json()["vaults"]] == ["beta"]
    assert "root_path" not in client.get("/v1/vaults", headers=bearer(keys.admin)).text


def test_vault_counts_leave_out_what_the_key_may_not_read(client: TestClient, keys: Keys) -> None:
    """A public key learns nothing about how much internal or restricted material a vault holds."""
    def alpha(key: str) -> dict:
        return client.get("/v1/vaults", headers=bearer(key)).json()["vaults"][0]

    full = alpha(keys.alpha_restricted)
    public = alpha(keys.alpha_public)
    assert (full["documents"], full["chunks"]) == (3, 4)
    assert public["documents"] < full["documents"] and public["chunks"] < full["chunks"]
    assert (public["documents"], public["chunks"]) == (1, 2)


def test_auth_failures_write_nothing(client: TestClient, keys: Keys, seeded: psycopg.Connection) -> None:
    before = row_counts(seeded)
    assert client.post("/v1/index", json={"vaults": ["alpha"]}).status_code == 401
    assert client.post("/v1/index", json={"vaults": ["alpha"]}, headers=bearer(keys.revoked)).status_code == 401
    assert client.post("/v1/index", json={"vaults": ["beta"]}, headers=bearer(keys.alpha_public)).status_code == 403
    assert row_counts(seeded) == before


def test_a_key_is_touched_once_per_interval_and_a_revocation_applies_at_once(
        make_runtime, keys: Keys, conn: psycopg.Connection) -> None:
    from ragpg_server.app import create_app

    def last_used() -> object:
        conn.rollback()  # a fresh snapshot
        return conn.execute("select last_used_at from api_keys where name = 'admin'").fetchone()["last_used_at"]

    assert last_used() is None
    with TestClient(create_app(make_runtime(key_touch_interval_s=60)), base_url=LOCAL_URL,
                    client=("127.0.0.1", 50123)) as client:
        assert client.get(PUBLIC, headers=bearer(keys.admin)).status_code == 200
        first = last_used()
        assert first is not None
        assert client.get(PUBLIC, headers=bearer(keys.admin)).status_code == 200
        assert last_used() == first  # read, not written, within the interval
        conn.execute("update api_keys set revoked_at = now() where name = 'admin'")
        conn.commit()
        assert_error(client.get(PUBLIC, headers=bearer(keys.admin)), 401, "unauthorized", "invalid or revoked")
    conn.execute("update api_keys set revoked_at = null where name = 'admin'")
    conn.commit()
    with TestClient(create_app(make_runtime(key_touch_interval_s=0)), base_url=LOCAL_URL,
                    client=("127.0.0.1", 50123)) as client:
        assert client.get(PUBLIC, headers=bearer(keys.admin)).status_code == 200
        assert last_used() > first  # 0: every request moves it
