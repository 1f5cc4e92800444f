"""Secrets are masked at ingestion, before anything is written or embedded: no table holds them and
no surface serves them (POST /v1/context, /v1/search, /v1/ask, GET /v1/chunks, compute_context, the CLI's
`search` and `ask --json`), whichever field of a note they sit in."""

from __future__ import annotations

import string
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.compute import compute_context
from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.runtime import Runtime
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.ingest_db.helpers import tables_holding
from tests.server.support import bearer
from tests.support.cli import ragpg_env, run_in_process, use_ragpg_env

SECRETS = ("AKIAIOSFODNN7EXAMPLE", "sk-live-abcdefghijklmnop1234567890")
NOTE = (f"# Deploy\n\nThe deploy notes for tomatoes: key {SECRETS[0]} opens the bucket.\n\n"
        f"api_key = {SECRETS[1]} is the tomatoes payment token.\n")


@pytest.fixture
def admin_key(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> str:
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "deploy.md").write_text(NOTE)
    add_vault(conn, NewVault(name="v", path=tmp_path / "v"))
    conn.commit()
    assert not index_vaults(settings).failed
    return key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")[1]


def assert_masked(text: str) -> None:
    assert not any(s in text for s in SECRETS), text
    assert "REDACTED" in text, text


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/context", {"query": "tomatoes deploy bucket payment token", "mode": "base"}),
    ("/v1/search", {"query": "tomatoes deploy bucket payment token"}),
    ("/v1/ask", {"query": "what opens the tomatoes bucket", "debug": True}),
])
def test_every_http_read_shows_masked_text(client: TestClient, admin_key: str, path: str, body: dict) -> None:
    response = client.post(path, json=body, headers=bearer(admin_key))
    assert response.status_code == 200, response.text
    if path == "/v1/ask" and response.json()["abstained"]:
        pytest.fail("ask abstained on the one note that answers; the masking check needs an answer")
    assert_masked(response.text)


def test_chunk_fetch_shows_masked_text(client: TestClient, admin_key: str) -> None:
    response = client.get("/v1/chunks/v/deploy.md/0", headers=bearer(admin_key))
    assert response.status_code == 200, response.text
    assert_masked(response.json()["content"])


def test_compute_context_in_process_is_masked(admin_key: str, runtime: Runtime) -> None:
    result = compute_context("tomatoes deploy bucket payment token", mode="base", runtime=runtime)
    assert result.ranked
    for text in (result.context, *(r.candidate.content for r in result.ranked), str(result.evidence_full),
                 str(result.evidence_llm)):
        assert_masked(text)


# --- a secret of every kind in every field of a note ---------------------------------------------

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
# Words the searches below ask for; every field also holds them, so every chunk is found.
WORDS = "tomato harvest rotation"


@dataclass(frozen=True)
class Secret:
    text: str  # as written in the note
    needles: tuple[str, ...]  # its random parts: none may appear anywhere (compared in lower case)

    @property
    def needle(self) -> str:
        return self.needles[0]


def _core(alphabet: str, size: int) -> st.SearchStrategy[str]:
    # A digit somewhere, so every generic `token:` form counts as a credential; never all one case
    # of a common word, so the needle cannot occur in ordinary text by chance.
    return st.text(alphabet, min_size=size, max_size=size + 6).map(lambda s: f"{s}7Q")


def _secret(template: str, core: st.SearchStrategy[str]) -> st.SearchStrategy[Secret]:
    return core.map(lambda c: Secret(template.format(c), (c,)))


def _pem(lines: list[str]) -> Secret:
    return Secret("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----",
                  tuple(lines))


def _jwt(parts: tuple[str, str, str]) -> Secret:
    return Secret(f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}", parts)


# Every kind rag/secrets.py detects. NAME_SAFE ones fit a file or folder name (no "/").
NAME_SAFE: dict[str, st.SearchStrategy[Secret]] = {
    "github": _secret("ghp_{}", _core(ALNUM, 36)),
    "github_pat": _secret("github_pat_{}", _core(ALNUM, 40)),
    "aws_key_id": _secret("AKIA{}", st.text(UPPER, min_size=16, max_size=16)),
    "aws_secret": _secret("aws_secret_access_key={}", _core(ALNUM, 38)),
    "slack": _secret("xoxb-1234-{}", _core(ALNUM, 24)),
    "slack_app": _secret("xapp-1-{}", _core(ALNUM, 24)),
    "openai": _secret("sk-proj-{}", _core(ALNUM, 24)),
    "stripe": _secret("sk_live_{}", _core(ALNUM, 20)),
    "google": _secret("AIza{}", st.text(ALNUM, min_size=35, max_size=35)),
    "jwt": st.tuples(_core(ALNUM, 10), _core(ALNUM, 12), _core(ALNUM, 20)).map(_jwt),
    "password": _secret("password={}", _core(ALNUM, 12)),
    "api_key": _secret("api_key={}", _core(ALNUM, 12)),
    "secret": _secret("secret={}", _core(ALNUM, 12)),
    "token": _secret("token: {}", _core(ALNUM, 16)),
    "bearer": _secret("Authorization: Bearer {}", _core(ALNUM, 20)),
}
ONE_LINE: dict[str, st.SearchStrategy[Secret]] = {
    **NAME_SAFE,
    "url_password": _secret("postgres://app:{}@db.internal:5432/prod", _core(ALNUM, 12)),
    "slack_webhook": _secret("https://hooks.slack.com/services/T0123/B0123/{}", _core(ALNUM, 24)),
}
name_safe = st.one_of(*NAME_SAFE.values())
one_line = st.one_of(*ONE_LINE.values())
private_key = st.lists(_core(B64, 58), min_size=2, max_size=3).map(_pem)
any_kind = st.one_of(one_line, private_key)


@dataclass(frozen=True)
class HostileNote:
    folder: Secret
    file: Secret
    fields: dict[str, Secret]  # front matter value, heading, body, code block...
    pem: Secret

    @property
    def secrets(self) -> list[Secret]:
        return [self.folder, self.file, self.pem, *self.fields.values()]

    @property
    def rel_path(self) -> str:
        return f"notes {self.folder.text}/{WORDS} {self.file.text}.md"

    def text(self) -> str:
        f = self.fields
        front = {
            "title": f"{WORDS} {f['title'].text}",
            "tags": ["harvest", f["tag"].text],
            "aliases": [f"{WORDS} {f['alias'].text}"],
            "project": f"{WORDS} {f['project'].text}",
            "url": f"https://example.org/{f['url'].text}",
            "aws_secret_access_key": f["bare_value"].needle,  # the key names it, the value alone does not
            "deploy": {"token": f["nested"].needle, "notes": [f"{WORDS} {f['nested_list'].text}"]},
            f["as_key"].text: "yes",
            "ssh_key": self.pem.text,
            "confidentiality": "public",
        }
        return (f"---\n{yaml.safe_dump(front, sort_keys=False, width=1000)}---\n"
                f"# {WORDS} {f['heading'].text}\n\n"
                f"The {WORDS} plan: {f['body'].text} opens the shed.\n\n"
                f"## {WORDS} code\n\n```sh\nexport {f['code'].text}\n```\n\n"
                f"{f['body_pem'].text}\n\nThe {WORDS} ends here.\n")


FIELD_NAMES = ("title", "tag", "alias", "project", "url", "bare_value", "nested", "nested_list", "as_key",
               "heading", "body", "code")
hostile_notes = st.builds(
    HostileNote, folder=name_safe, file=name_safe,
    fields=st.fixed_dictionaries({**{name: one_line for name in FIELD_NAMES}, "body_pem": any_kind}),
    pem=private_key)


def leaked(text: str, needles: list[str]) -> list[str]:
    lowered = text.lower()
    return [n for n in needles if n.lower() in lowered]


_vault_numbers = count()  # each example indexes its own vault in the test's database


@pytest.fixture
def cli_run(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> Iterator:
    use_ragpg_env(monkeypatch, ragpg_env(db_url, tmp_path))

    def run(*args: str) -> tuple[int, str]:
        code, out, err = run_in_process(capsys, *args)
        return code, out + err

    yield run


@pytest.mark.security
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(note=hostile_notes)
def test_no_secret_in_any_table_or_response(note: HostileNote, conn: psycopg.Connection, settings: Settings,
                                            client: TestClient, cli_run, tmp_path: Path) -> None:
    name = f"h{next(_vault_numbers)}"
    root = tmp_path / name
    (root / note.rel_path).parent.mkdir(parents=True)
    (root / note.rel_path).write_text(note.text(), encoding="utf-8")
    add_vault(conn, NewVault(name=name, path=root))
    conn.commit()
    report = index_vaults(settings, [name])
    assert not report.failed and report.vaults[0].files_indexed == 1, report.to_dict()
    key = key_store.create_key(conn, f"k-{name}", vaults=[name], clearance="restricted")[1]
    needles = [n for s in note.secrets for n in s.needles]

    assert tables_holding(conn, needles) == []

    responses = [client.post("/v1/search", json={"query": WORDS, "k": 50}, headers=bearer(key)),
                 client.post("/v1/context", json={"query": WORDS, "mode": "base"}, headers=bearer(key)),
                 client.post("/v1/ask", json={"query": f"what is the {WORDS} plan?", "debug": True},
                             headers=bearer(key))]
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    items = responses[0].json()["items"]
    assert items, "the search found none of the note's chunks"
    for item in items:
        path = quote(item["source_path"], safe="/")
        responses.append(client.get(f"/v1/chunks/{name}/{path}/{item['ordinal']}", headers=bearer(key)))
        assert responses[-1].status_code == 200, responses[-1].text
    for r in responses:
        assert leaked(r.text, needles) == [], r.text

    for args in (("search", WORDS, "--vault", name, "--json"),
                 ("ask", f"what is the {WORDS} plan?", "--vault", name, "--json")):
        code, out = cli_run(*args)
        assert code == 0, out
        assert leaked(out, needles) == [], out



@pytest.mark.security
def test_prefix_filters_on_tags_cannot_spell_out_a_secret(client: TestClient, conn: psycopg.Connection,
                                                          settings: Settings, tmp_path: Path) -> None:
    """`{"tags": {"$prefix": ...}}` answered one character at a time would spell a tag holding a token."""
    token = "ghp_" + "Zq7" * 12
    root = tmp_path / "t"
    root.mkdir()
    (root / "n.md").write_text(f"---\ntags: [{token}, garden]\n---\nThe garden shed plan.\n")
    add_vault(conn, NewVault(name="t", path=root))
    conn.commit()
    assert not index_vaults(settings).failed
    key = key_store.create_key(conn, "reader", vaults=["t"], clearance="public")[1]

    def hits(prefix: str) -> int:
        r = client.post("/v1/search", json={"query": "garden shed plan", "filters": {"tags": {"$prefix": prefix}}},
                        headers=bearer(key))
        assert r.status_code == 200, r.text
        return len(r.json()["items"])

    assert hits("gard") == 1  # the filter works
    known = "ghp_"
    answers = {c: hits(known + c) for c in ALNUM}
    assert set(answers.values()) == {0}, answers  # no character of the token is told apart
    assert hits("ghp") == 0
