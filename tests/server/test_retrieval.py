"""POST /v1/context, /v1/ask, /v1/search over a real indexed corpus: shapes, key scoping and
clearance (restricted content never leaves without it), errors, one rag:root trace per request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from rag.trace import ROOT_SPAN, Tracer
from tests.server.support import bearer, row_counts
from tests.server.test_http import assert_error
from tests.support.files import write_files
from tests.support.tracing import capturing_tracer

META = "langfuse.observation.metadata."

PUBLIC_MARK, INTERNAL_MARK, RESTRICTED_MARK, BETA_MARK = "SUNFLOWER", "BLUEHERON", "ZEBRAQUARTZ", "KINGFISHER"

FILES = {
    "alpha": {
        "garden/tomatoes.md": f"# Tomatoes\n\nTomatoes need full sun and regular watering. {PUBLIC_MARK} tomatoes.\n",
        "plans/roadmap.md": (f"---\nconfidentiality: internal\n---\n# Roadmap\n\nThe tomatoes roadmap codename "
                             f"{INTERNAL_MARK} ships in spring. Tomatoes watering plan.\n"),
        "vault/secret.md": (f"---\nconfidentiality: restricted\n---\n# Secret tomatoes\n\nTomatoes launch code "
                            f"{RESTRICTED_MARK} is restricted. Tomatoes need watering.\n"),
    },
    "beta": {"beta.md": f"# Beta tomatoes\n\nTomatoes in the beta vault, marker {BETA_MARK}, need sun.\n"},
}

ENDPOINTS = {
    "context": lambda q, **kw: ("/v1/context", {"query": q, **kw}),
    "search": lambda q, **kw: ("/v1/search", {"query": q, **kw}),
    "ask": lambda q, **kw: ("/v1/ask", {"query": q, "debug": True, **kw}),
}


@pytest.fixture
def corpus(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> dict[str, str]:
    for vault, files in FILES.items():
        add_vault(conn, NewVault(name=vault, path=write_files(tmp_path / vault, files)))
    conn.commit()
    report = index_vaults(settings)
    assert not report.failed, report.to_dict()
    make = lambda name, **kw: key_store.create_key(conn, name, **kw)[1]  # noqa: E731
    return {
        "admin": make("admin", vaults=[], all_vaults=True, clearance="restricted", can_index=True),
        "alpha_public": make("alpha-public", vaults=["alpha"], clearance="public"),
        "alpha_internal": make("alpha-internal", vaults=["alpha"], clearance="internal"),
        "beta": make("beta", vaults=["beta"], clearance="restricted"),
    }


def post(client: TestClient, endpoint: str, key: str | None, query: str = "tomatoes watering", **kw: Any):
    path, body = ENDPOINTS[endpoint](query, **kw)
    return client.post(path, json=body, headers=bearer(key) if key else None)


def test_shapes(client: TestClient, corpus: dict[str, str]) -> None:
    ctx = post(client, "context", corpus["admin"], vaults=["alpha"], budget_tokens=2000)
    assert ctx.status_code == 200, ctx.text
    body = ctx.json()
    assert set(body) == {"context", "citations", "used", "ranked", "decision", "evidence_full", "evidence_llm",
                         "insufficient", "used_tokens"}  # no deprecated `chunks` doubling `ranked`
    assert body["ranked"] and body["citations"] and all(ch["vault"] == "alpha" for ch in body["ranked"])
    assert body["used"] and {c["ref"] for c in body["used"]} <= {c["ref"] for c in body["ranked"]}
    found = post(client, "search", corpus["admin"], k=5).json()
    assert found["items"] and set(found["items"][0]) == {"vault", "source_path", "heading_path", "ordinal",
                                                         "start_line", "end_line", "snippet", "score", "heading",
                                                         "location", "open_at"}
    # by note (the default): distinct notes, each with its passages; `items` are those passages in order
    notes = [(n["vault"], n["source_path"]) for n in found["notes"]]
    assert found["by"] == "note" and notes and len(notes) == len(set(notes)) <= 5
    assert found["items"] == [p for n in found["notes"] for p in n["passages"]]
    one = post(client, "search", corpus["admin"], k=1, by="passage").json()
    assert one["by"] == "passage" and len(one["items"]) == 1 and len(one["notes"]) == 1
    bad = post(client, "search", corpus["admin"], by="chunk")
    assert bad.status_code == 400 and "by" in bad.text
    answer = post(client, "ask", corpus["admin"], vaults=["alpha"]).json()
    assert set(answer) >= {"answer", "references", "abstained", "decision", "debug"} and "abstain_reason" not in answer
    assert isinstance(answer["answer"], str) and answer["answer"]


@pytest.mark.parametrize("endpoint", ["context", "search", "ask"])
def test_clearance_and_scope_on_every_read_path(client: TestClient, corpus: dict[str, str], endpoint: str) -> None:
    # positive control: the restricted key over every vault can see restricted content
    if endpoint != "ask":  # ask may abstain on the hash embedder's scores; its leak checks below still hold
        admin = post(client, endpoint, corpus["admin"], "tomatoes launch code restricted", vaults=["alpha"])
        assert admin.status_code == 200 and RESTRICTED_MARK in admin.text, admin.text
    for query in ("tomatoes launch code restricted", "tomatoes roadmap codename", "tomatoes watering"):
        public = post(client, endpoint, corpus["alpha_public"], query)
        assert public.status_code == 200, public.text
        assert RESTRICTED_MARK not in public.text and INTERNAL_MARK not in public.text
        assert BETA_MARK not in public.text  # a key's default vaults are its own
        if endpoint != "ask":
            assert PUBLIC_MARK in public.text  # what the key may read is still found
        internal = post(client, endpoint, corpus["alpha_internal"], query, vaults=["alpha"])
        assert internal.status_code == 200 and RESTRICTED_MARK not in internal.text
        scoped = post(client, endpoint, corpus["beta"], query)
        assert scoped.status_code == 200 and PUBLIC_MARK not in scoped.text and RESTRICTED_MARK not in scoped.text
    # a vault outside the key's scope is a 403, named in the message
    assert_error(post(client, endpoint, corpus["alpha_public"], vaults=["beta"]), 403, "forbidden", "'beta'")
    assert_error(post(client, endpoint, corpus["alpha_public"], vaults=["alpha", "beta"]), 403, "forbidden")
    # unknown vault inside an all-vaults key: 404
    assert_error(post(client, endpoint, corpus["admin"], vaults=["nope"]), 404, "not_found", "nope")
    # a name no vault can have (a line break in it) is a 400 on one line, before any lookup
    odd = post(client, endpoint, corpus["admin"], vaults=["no\npe"])
    assert_error(odd, 400, "invalid_request", "invalid 'vaults.0': a name is 1-64 letters")
    assert "\n" not in odd.json()["error"]["message"]
    # no key / bad key
    assert_error(post(client, endpoint, None), 401, "unauthorized")
    assert_error(post(client, endpoint, "rpg_wrong"), 401, "unauthorized")


def test_the_query_limit_is_the_setting_on_every_endpoint(settings: Settings, corpus: dict[str, str]) -> None:
    """retrieval.max_query_chars is the one limit: the HTTP contract keeps no limit of its own."""
    from ragpg_server.app import create_app, pool_size_for

    limit = 25_000
    rt = Runtime.from_settings(settings.model_copy(update={"retrieval": settings.retrieval.model_copy(
        update={"max_query_chars": limit})}), pool_max_size=pool_size_for(settings.server.concurrency))
    try:
        with TestClient(create_app(rt), base_url="http://127.0.0.1:8000", client=("127.0.0.1", 50123)) as client:
            for endpoint, what in (("context", "query"), ("search", "search query"), ("ask", "question")):
                long = "tomatoes watering " * 1200  # 21,600 characters: over the default, under this limit
                assert post(client, endpoint, corpus["admin"], long).status_code == 200, endpoint
                assert_error(post(client, endpoint, corpus["admin"], "x" * (limit + 1)), 400, "invalid_input",
                             f"the {what} is {limit + 1} characters long; the limit is {limit}")
    finally:
        rt.close()


def nested(levels: int) -> dict[str, Any]:
    """A filter of `levels` JSON levels: `$and` arrays around one condition."""
    deep: dict[str, Any] = {"doc_type": "note"}
    for _ in range((levels - 1) // 2):
        deep = {"$and": [deep]}
    return deep


def test_a_filter_gets_one_verdict_at_every_door(client: TestClient, corpus: dict[str, str], runtime: Runtime,
                                                 conn: psycopg.Connection) -> None:
    """One walk of a filter (rag.arguments.json_problem) with one set of limits: the HTTP contract, the
    library's entry points and the SQL calls agree; what passes it meets the SQL compiler's own rules."""
    from rag import compute_context, search
    from rag.errors import InputError
    from rag.retrieval.retrieve import match_lexical

    cases = [(nested(21), "nested deeper than 8 levels"),  # within the walk's limit: the compiler decides
             (nested(71), "is nested deeper than 64 levels"),
             ({"tags": {"$in": [f"t{i}" for i in range(1001)]}}, "holds more than 1000 values"),
             ({"title": "a\x00b"}, "holds a NUL character at title, which Postgres cannot store")]
    for filters, message in cases:
        for endpoint in ("context", "search"):
            resp = post(client, endpoint, corpus["admin"], filters=filters)
            assert resp.status_code == 400 and message in resp.json()["error"]["message"], (endpoint, resp.text)
        for call in (lambda f: compute_context("tomatoes", filters=f, runtime=runtime),
                     lambda f: search("tomatoes", filters=f, runtime=runtime),
                     lambda f: match_lexical(conn, "tomatoes", filter=f)):
            with pytest.raises(InputError) as err:
                call(filters)
            assert message in str(err.value) and "\n" not in str(err.value)


def test_filters_cannot_widen_the_scope(client: TestClient, corpus: dict[str, str]) -> None:
    key = corpus["alpha_public"]
    for endpoint in ("context", "search"):
        for filters in ({"confidentiality": "restricted"}, {"$or": [{"confidentiality": "restricted"}, {}]},
                        {"vault": "beta"}):
            resp = post(client, endpoint, key, "tomatoes launch code", filters=filters)
            assert resp.status_code in (200, 403), resp.text
            assert RESTRICTED_MARK not in resp.text and BETA_MARK not in resp.text


def test_bad_input_writes_nothing(client: TestClient, corpus: dict[str, str], conn: psycopg.Connection) -> None:
    before = row_counts(conn)
    key = corpus["admin"]
    assert_error(post(client, "context", key, "   "), 400, "invalid_input", "empty")
    assert_error(post(client, "search", key, "  "), 400, "invalid_input")
    assert_error(post(client, "ask", key, " "), 400, "invalid_input")
    assert_error(post(client, "context", key, profile="no-such-profile"), 404, "not_found", "no-such-profile")
    assert_error(post(client, "context", key, filters={"tags": {"$regex": "x"}}), 400, "invalid_input", "filter")
    assert_error(post(client, "search", key, filters={"date": {"$gte": {"a": 1}}}), 400, "invalid_input")
    assert_error(post(client, "ask", key, folders=["no/such/folder"]), 404, "not_found", "no/such/folder")  # as a vault
    assert_error(post(client, "search", key, "x" * 20001), 400, "invalid_input",
                 "the search query is 20001 characters long; the limit is 20000")
    after = row_counts(conn)
    # only api_keys.last_used_at moved (an update, not a row)
    assert after == before


@pytest.fixture
def captured(runtime: Runtime, monkeypatch: pytest.MonkeyPatch):
    """The runtime's tracer replaced by a real Langfuse tracer whose spans land in memory."""
    with capturing_tracer(monkeypatch) as (tracer, exporter):
        runtime._tracer = tracer
        yield tracer, exporter


def roots(tracer: Tracer, exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    tracer.flush()
    found = [{k[len(META):]: json.loads(v) for k, v in s.attributes.items() if k.startswith(META)}
             for s in exporter.get_finished_spans() if s.name == ROOT_SPAN]
    exporter.clear()
    return found


def traced_requests(corpus: dict[str, str]) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [("POST", *ENDPOINTS[e]("tomatoes watering")) for e in ("context", "search", "ask")] + [
        ("GET", "/v1/chunks/alpha/garden/tomatoes.md/0", None), ("GET", "/v1/vaults", None),
        ("POST", "/v1/index", {"vaults": ["beta"]})]


def test_one_root_trace_per_request_with_the_request_id(client: TestClient, app, captured,
                                                        corpus: dict[str, str]) -> None:
    tracer, exporter = captured
    admin = bearer(corpus["admin"])
    for n, (method, path, body) in enumerate(traced_requests(corpus)):
        rid = f"trace-me-{n}"
        resp = client.request(method, path, json=body, headers={**admin, "X-Request-ID": rid})
        assert resp.status_code in (200, 202), resp.text
        assert resp.headers["x-request-id"] == rid
        if path == "/v1/index":
            run_id = resp.json()["id"]
            assert app.state.ragpg.index_runner.wait(30)
            assert [r["requestId"] for r in roots(tracer, exporter)] == [rid], path
            resp = client.get(f"/v1/index/{run_id}", headers={**admin, "X-Request-ID": "poll-1"})
            assert resp.status_code == 200 and resp.json()["status"] == "succeeded", resp.text
            rid = "poll-1"
        assert [r["requestId"] for r in roots(tracer, exporter)] == [rid], path
        # without a caller id one is generated, echoed, and used for the trace
        resp = client.request(method, path, json=body, headers=admin)
        assert resp.status_code in (200, 202), resp.text
        if path == "/v1/index":
            assert app.state.ragpg.index_runner.wait(30)
        assert [r["requestId"] for r in roots(tracer, exporter)] == [resp.headers["x-request-id"]], path
    # the retrieval roots carry rag's decision attributes
    client.post("/v1/context", json={"query": "tomatoes watering"}, headers=admin)
    (root,) = roots(tracer, exporter)
    assert {"winner", "insufficient", "decisionSignature"} <= set(root)
