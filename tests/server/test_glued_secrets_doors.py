"""Tokens glued to other text (issue 47: `deploy_ghp_…`, `key_AKIA…`, `JWT_eyJ…`) in every field of a small
vault on disk, indexed by the real pipeline into the per-test database: no table holds one and no door
serves one (HTTP search, related, folders and ask, the LLM's prompts, MCP over stdio, `ragpg search
--json`), a question holding one is cached masked, and a link to a URL with a password keeps its note
indexed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import anyio
import psycopg
import pytest
import yaml
from fastapi.testclient import TestClient

from rag.config import LLMSettings, Settings
from rag.ingest.pipeline import index_vaults
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.ingest_db.helpers import tables_holding
from tests.mcp.session import data, stdio_session
from tests.server.support import bearer
from tests.support.cli import ragpg_env, run_in_process, use_ragpg_env
from tests.support.llm_stub import LLMStub

# The random part of each token: none may appear anywhere (compared in lower case).
CORES = {
    "github": "Zq7xW2Kp4Lm9Nb3Vc8Xz1Qa5Ws6Ed2Rf0Tg7Y",
    "github2": "Hy6Uj8Ik9Ol0Pm1Nb2Vc3Xz4As5Df6Gh7Jk8L",
    "aws": "IOSFODNN7QWERTY2",
    "jwt": "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "npm": "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2y",
    "hf": "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
    "gitlab": "xY3zA9bC8dE7fG6hJ5kL",
    "sendgrid": "pQ8rS9tU0vW1xY2zA3bC4dE5fG6hI7jK8lM9nO0pQ1r",
    "openai": "Ab3Cd4Ef5Gh6Ij7Kl8Mn9Op0Qr1St2Uv3Wx4Yz5",
    "stripe": "Rt5Yu6Io7Pa8Sd9Fg0Hj1Kl2",
    "slack": "Mn3Bv4Cx5Za6Sd7Fg8Hj9Kl0",
    "google": "SyB2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R",
    "password": "hunter2Xq9Wz",
    "url_password": "pw123456Vb7Nm",
    "api_key": "abcd1234efgh5678ijkl",
    "question": "Qs9Wd8Ef7Rg6Th5Yj4Uk3Il2Om1Pn0Bv9Cx8Za7",
}
GHP, GHP2 = f"ghp_{CORES['github']}", f"ghp_{CORES['github2']}"
AWS = f"AKIA{CORES['aws']}"
JWT = f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{CORES['jwt']}"
SENDGRID = f"SG.aB1cD2eF3gH4iJ5kL6mN7o.{CORES['sendgrid']}"
WORDS = "tomato harvest rotation"  # every field holds them, so every chunk is found

FOLDER = f"deploy_{GHP}"
NOTE_PATH = f"{FOLDER}/key_{AWS} {WORDS}.md"
FRONT = {
    "title": f"{WORDS} JWT_{JWT}",
    "tags": ["harvest", f"ci_npm_{CORES['npm']}"],
    "aliases": [f"{WORDS} model_hf_{CORES['hf']}"],
    "deploy": f"ci_glpat-{CORES['gitlab']}",
    "mail": {"relay": f"mail_{SENDGRID}"},
    "confidentiality": "public",
}
BODY = (f"# {WORDS} GH_{GHP2}\n\n"
        f"The {WORDS} plan: password=[{CORES['password']}] must be rotated, see "
        f"[the site](https://user:{CORES['url_password']}@example.com/) and my_sk-proj-{CORES['openai']}.\n\n"
        f"## {WORDS} keys\n\nAPI key: {CORES['api_key']}\nbilling_sk_live_{CORES['stripe']} and "
        f"bot_xoxb-1234-{CORES['slack']} and maps_AIza{CORES['google']}.\n")
NOTE = f"---\n{yaml.safe_dump(FRONT, sort_keys=False, width=1000)}---\n{BODY}"
OTHER = f"# {WORDS} notes\n\nThe {WORDS} plan links to [[key_{AWS} {WORDS}]] and key_{AWS} again.\n"
CANVAS = {"nodes": [{"id": "a1", "type": "text", "text": f"# {WORDS} card\n\nThe {WORDS} card holds token_{GHP}.",
                     "x": 0, "y": 0, "width": 300, "height": 200}], "edges": []}
QUESTION = f"{WORDS} plan GH_ghp_{CORES['question']}"


def leaked(text: str) -> list[str]:
    lowered = text.lower()
    return [name for name, core in CORES.items() if core.lower() in lowered]


@pytest.fixture
def llm_stub_answers(llm_stub: LLMStub) -> LLMStub:
    llm_stub.responder = lambda messages: "[]" if "folders" in messages[-1]["content"] else f"The {WORDS} plan."
    return llm_stub


@pytest.fixture
def settings(settings: Settings, llm_stub_answers: LLMStub) -> Settings:
    """The suite's settings with the LLM stub as the language model (the server's /v1/ask uses it)."""
    llm = LLMSettings(model="openai/stub", api_base=f"{llm_stub_answers.url}/v1", api_key="sk-test", timeout_s=5)
    return settings.model_copy(update={"llm": llm})


@pytest.fixture
def glued_vault(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> str:
    root = tmp_path / "glue"
    (root / FOLDER).mkdir(parents=True)
    (root / NOTE_PATH).write_text(NOTE, encoding="utf-8")
    (root / f"links {WORDS}.md").write_text(OTHER, encoding="utf-8")
    (root / f"board_{GHP2}.canvas").write_text(json.dumps(CANVAS), encoding="utf-8")
    add_vault(conn, NewVault(name="glue", path=root))
    conn.commit()
    report = index_vaults(settings, ["glue"])
    # (the note with a masked URL in a link failed to parse: "'REDACTED:password' does not appear to be an
    # IPv4 or IPv6 address")
    assert not report.failed and report.vaults[0].files_indexed == 3, report.to_dict()
    return key_store.create_key(conn, "public-reader", vaults=["glue"], clearance="public")[1]


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator:
    use_ragpg_env(monkeypatch, ragpg_env(db_url, tmp_path))
    yield lambda *args: run_in_process(capsys, *args)


@pytest.mark.security
def test_glued_tokens_reach_no_table_and_no_door(glued_vault: str, client: TestClient, conn: psycopg.Connection,
                                                 llm_stub_answers: LLMStub, cli, db_url: str,
                                                 tmp_path: Path) -> None:
    key = bearer(glued_vault)
    served: list[str] = []

    found = client.post("/v1/search", json={"query": QUESTION, "k": 50}, headers=key)
    assert found.status_code == 200, found.text
    paths = {item["source_path"] for item in found.json()["items"]}
    assert len(paths) == 3, paths  # the note, the note linking to it and the canvas are all found
    served.append(found.text)
    for path in paths:
        related = client.get(f"/v1/related/glue/{quote(path, safe='/')}", headers=key)
        assert related.status_code == 200, related.text
        served.append(related.text)
    folders = client.get("/v1/vaults/glue/folders", headers=key)
    assert folders.status_code == 200 and len(folders.json()["folders"]) == 2, folders.text
    served.append(folders.text)
    asked = client.post("/v1/ask", json={"query": QUESTION, "debug": True}, headers=key)
    assert asked.status_code == 200, asked.text
    served.append(asked.text)

    prompts = json.dumps(llm_stub_answers.requests)
    assert "Which folders" in prompts  # the folder list went to the LLM
    served.append(prompts)

    code, out, err = cli("search", QUESTION, "--vault", "glue", "--json")
    assert code == 0 and json.loads(out)["items"], err
    served.append(out + err)

    served.extend(anyio.run(_mcp_answers, db_url, tmp_path, sorted(paths)))

    assert [leaked(text) for text in served] == [[] for _ in served], [t for t in served if leaked(t)]
    assert tables_holding(conn, list(CORES.values())) == []  # query_embeddings included: the question is masked
    cached = conn.execute("select query_text from query_embeddings").fetchall()
    assert cached and all("[REDACTED:github_token]" in r["query_text"] for r in cached), cached


async def _mcp_answers(db_url: str, tmp_path: Path, paths: list[str]) -> list[str]:
    texts = []
    async with stdio_session(db_url, tmp_path) as (s, _):
        resources = (await s.list_resources()).resources
        assert len(resources) == 3
        texts.append(" ".join(str(r.uri) + " " + r.name for r in resources))
        for r in resources:
            texts.extend(c.text for c in (await s.read_resource(r.uri)).contents if hasattr(c, "text"))
        texts.append(json.dumps(data(await s.call_tool("list_folders", {"vault": "glue"}))))
        texts.append(json.dumps(data(await s.call_tool("search_notes", {"query": QUESTION}))))
        for path in paths:
            texts.append(json.dumps(data(await s.call_tool("related_notes", {"vault": "glue", "path": path}))))
    return texts


@pytest.mark.security
def test_a_public_note_edited_to_link_a_url_with_a_password_stays_readable(
        conn: psycopg.Connection, settings: Settings, client: TestClient, tmp_path: Path) -> None:
    """The edit made the note fail to parse, so it was kept only as `restricted`: gone for public readers."""
    root = tmp_path / "edit"
    root.mkdir()
    note = root / "garden.md"
    note.write_text(f"# {WORDS}\n\nThe {WORDS} garden plan.\n", encoding="utf-8")
    add_vault(conn, NewVault(name="edit", path=root))
    conn.commit()
    assert not index_vaults(settings, ["edit"]).failed
    key = bearer(key_store.create_key(conn, "public-reader", vaults=["edit"], clearance="public")[1])
    note.write_text(f"# {WORDS}\n\nThe {WORDS} garden plan, see [site](https://user:{CORES['url_password']}"
                    "@example.com/).\n", encoding="utf-8")
    report = index_vaults(settings, ["edit"])
    assert report.vaults[0].files_indexed == 1 and not report.vaults[0].skipped, report.to_dict()
    found = client.post("/v1/search", json={"query": f"{WORDS} garden plan"}, headers=key)
    assert found.status_code == 200 and [i["source_path"] for i in found.json()["items"]] == ["garden.md"], found.text
    assert leaked(found.text) == []
