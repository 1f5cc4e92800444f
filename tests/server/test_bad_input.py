"""Every bad input named in the issue, on every endpoint it applies to: the right 4xx, a message
that names the problem, the error envelope with a request id, and no row written anywhere."""

from __future__ import annotations

import json

import psycopg
import pytest
from fastapi.testclient import TestClient

from tests.server.support import Keys, bearer, row_counts
from tests.server.test_http import assert_error

# A valid body per POST endpoint; each case below breaks one thing about it.
VALID = {
    "/v1/context": {"query": "gardening", "vaults": ["alpha"]},
    "/v1/ask": {"query": "gardening", "vaults": ["alpha"]},
    "/v1/search": {"query": "gardening", "vaults": ["alpha"]},
    "/v1/index": {"vaults": ["alpha"]},
}
# Requests a key must be checked on (GETs included).
ALL_REQUESTS = [("POST", path, body) for path, body in VALID.items()] + [
    ("GET", "/v1/chunks/alpha/notes/public.md/0", None),
    ("GET", "/v1/vaults", None),
    ("GET", "/v1/index/00000000-0000-0000-0000-000000000000", None),
]


@pytest.fixture
def unchanged(seeded: psycopg.Connection, keys: Keys):
    """Row counts of every table, checked again after the test's requests."""
    before = row_counts(seeded)
    yield keys
    assert row_counts(seeded) == before


def test_malformed_json(client: TestClient, unchanged: Keys) -> None:
    h = {**bearer(unchanged.admin), "content-type": "application/json"}
    for path in VALID:
        for raw in (b'{"query": "x",', b"{'query': 'x'}", b"not json", b'{"vaults": ["alpha"]} trailing'):
            assert_error(client.post(path, content=raw, headers=h), 400, "invalid_request",
                         "request body is not valid JSON")
        assert_error(client.post(path, content=b"\xff\xfe{}", headers=h), 400, "invalid_request")
        assert_error(client.post(path, content=b'["a"]', headers=h), 400, "invalid_request", "JSON object")


@pytest.mark.parametrize("path, field, value", [
    ("/v1/context", "query", 5),
    ("/v1/context", "budget_tokens", "4000"),
    ("/v1/context", "vaults", "alpha"),
    ("/v1/context", "filters", ["a"]),
    ("/v1/context", "mode", "fastest"),
    ("/v1/ask", "query", ["x"]),
    ("/v1/ask", "k", "3"),
    ("/v1/ask", "debug", "yes"),
    ("/v1/search", "k", 2.5),
    ("/v1/search", "folders", [1]),
    ("/v1/index", "vaults", [None]),
])
def test_wrong_types(client: TestClient, unchanged: Keys, path: str, field: str, value: object) -> None:
    body = {**VALID[path], field: value}
    err = assert_error(client.post(path, json=body, headers=bearer(unchanged.admin)), 400, "invalid_request",
                       f"'{field}")
    assert err["details"][0]["field"].split(".")[0] == field


@pytest.mark.security
@pytest.mark.parametrize("path, field", [("/v1/context", "budget_tokens"), ("/v1/ask", "k"), ("/v1/search", "k")])
def test_numbers_past_their_bounds_are_400(client: TestClient, unchanged: Keys, path: str, field: str) -> None:
    """Issue 47: a number the database cannot hold (10**30) is the field's own error, never a database one."""
    for value in (10**30, -(10**30)):
        err = assert_error(client.post(path, json={**VALID[path], field: value}, headers=bearer(unchanged.admin)),
                           400, "invalid_request", f"'{field}")
        assert "database" not in err["message"]
    code = client.get(f"/v1/chunks/alpha/notes/public.md/{10**30}", headers=bearer(unchanged.admin)).status_code
    assert code in (400, 422)


def test_unknown_fields(client: TestClient, unchanged: Keys) -> None:
    for path, body in VALID.items():
        for extra in ("top_k", "clearance", "scope"):  # nothing widens a key's scope by asking
            err = assert_error(client.post(path, json={**body, extra: "restricted"}, headers=bearer(unchanged.admin)),
                               400, "invalid_request", f"unknown field '{extra}'")
            assert err["details"][0]["type"] == "extra_forbidden"


def test_oversize_body(client: TestClient, unchanged: Keys) -> None:
    limit = client.app.state.ragpg.settings.server.max_body_bytes
    for path, body in VALID.items():
        big = json.dumps({**body, "padding": "x" * (limit + 1)}).encode()
        assert_error(client.post(path, content=big, headers={**bearer(unchanged.admin),
                                                             "content-type": "application/json"}),
                     413, "payload_too_large", f"the limit is {limit} bytes")


@pytest.mark.parametrize("raw_path", [
    "..%2F..%2Fetc%2Fpasswd",  # ../../etc/passwd with encoded slashes
    "%2e%2e/%2e%2e/etc/passwd",  # ../../etc/passwd with encoded dots
    "notes/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
])
def test_path_traversal(client: TestClient, unchanged: Keys, raw_path: str) -> None:
    resp = client.get(f"/v1/chunks/alpha/{raw_path}/0", headers=bearer(unchanged.admin))
    assert_error(resp, 400, "invalid_input", "path traversal ('..') is not allowed")
    assert "root:" not in resp.text


def test_missing_key(client: TestClient, unchanged: Keys) -> None:
    for method, path, body in ALL_REQUESTS:
        assert_error(client.request(method, path, json=body), 401, "unauthorized", "missing API key",
                     "Authorization: Bearer")


def test_revoked_and_unknown_key(client: TestClient, unchanged: Keys) -> None:
    for method, path, body in ALL_REQUESTS:
        for key in (unchanged.revoked, unchanged.revoked + "x", "rpg_guess"):
            assert_error(client.request(method, path, json=body, headers=bearer(key)), 401, "unauthorized",
                         "invalid or revoked API key")


def test_key_for_another_vault(client: TestClient, unchanged: Keys) -> None:
    h = bearer(unchanged.beta)  # vault beta only
    for path, body in VALID.items():
        assert_error(client.post(path, json=body, headers=h), 403, "forbidden", "may not read vault 'alpha'")
        assert_error(client.post(path, json={**body, "vaults": ["beta", "alpha"]}, headers=h), 403, "forbidden",
                     "'alpha'")
    assert_error(client.get("/v1/chunks/alpha/notes/public.md/0", headers=h), 403, "forbidden", "vault 'alpha'")


@pytest.mark.security
@pytest.mark.parametrize("raw, message", [
    # a lone surrogate, JSON-escaped
    (b'{"QUERY": "\\ud800"}', "is not valid Unicode: a lone surrogate (\\ud800) at position 0"),
    (b'{"QUERY": "gardening", "vaults": ["\\udcff"]}', "unable to parse raw data as a unicode string"),
    (b'{"QUERY": "gardening", "filters": {"\\udcff": 1}}', "is not valid Unicode at a key: a lone surrogate (\\udcff)"),
    (b'{"QUERY": "gardening", "filters": {"a": NaN}}', "holds nan at a, which JSON cannot carry"),
    (b'{"QUERY": "gardening", "filters": {"a": Infinity}}', "holds inf at a, which JSON cannot carry"),
    (b'{"QUERY": "gardening", "filters": {"a": -1e999}}', "holds -inf at a, which JSON cannot carry"),
])
def test_values_json_text_cannot_hold_are_400(client: TestClient, unchanged: Keys, raw: bytes, message: str) -> None:
    """Issue 29: what the library refuses with an InputError is a 400 with the same words over HTTP."""
    h = {**bearer(unchanged.admin), "content-type": "application/json"}
    for path, field in (("/v1/context", b"query"), ("/v1/search", b"query"), ("/v1/ask", b"query")):
        body = raw.replace(b"QUERY", field)
        if path == "/v1/ask" and b"filters" in body:
            continue  # ask takes no filters
        resp = client.post(path, content=body, headers=h)
        err = assert_error(resp, 400, resp.json()["error"]["code"], message)
        assert err["code"] in ("invalid_request", "invalid_input")


@pytest.mark.parametrize("path", ["/v1/ask", "/v1/context", "/v1/search"])
def test_the_old_question_field_is_refused_naming_query(client: TestClient, unchanged: Keys, path: str) -> None:
    """Issue 48: every route takes its text as `query`; `question` (POST /v1/ask's old name) is not an alias."""
    h = bearer(unchanged.admin)
    err = assert_error(client.post(path, json={"question": "gardening", "vaults": ["alpha"]}, headers=h), 400,
                       "invalid_request")
    assert err["message"].startswith("unknown field 'question': it was renamed 'query'"), err
    both = assert_error(client.post(path, json={"question": "x", "query": "gardening", "vaults": ["alpha"]},
                                    headers=h), 400, "invalid_request")
    assert both["message"].startswith("unknown field 'question': it was renamed 'query'"), both
