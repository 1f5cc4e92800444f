"""The web page at /, the offline API docs (/docs, /redoc) and the page's read route
(GET /v1/vaults/{vault}/folders): no external URL anywhere, assets served from the package,
folders scoped by the key, Obsidian vaults recognised, `explain` on /v1/ask."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.config import Settings
from rag.ingest.pipeline import index_vaults
from rag.store import keys as key_store
from rag.store.vaults import NewVault, add_vault
from tests.server.support import bearer
from tests.server.test_http import assert_error

# src= / href= / url(...) / @import values that leave the server: a scheme://host or a //host.
_ASSET_REF = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""", re.IGNORECASE)


def external_refs(html: str) -> list[str]:
    refs = [a or b for a, b in _ASSET_REF.findall(html)]
    return [r for r in refs if re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", r.strip(), re.IGNORECASE)]


def test_the_page_has_an_icon(client: TestClient) -> None:
    page = client.get("/").text
    assert 'rel="icon" href="static/favicon.svg"' in page
    for path in ("/static/favicon.svg", "/favicon.ico"):  # no 404 in the browser's console
        icon = client.get(path)
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
        assert icon.text.startswith("<svg")


def test_external_refs_detector() -> None:
    assert external_refs('<script src="https://cdn.example/x.js"></script><link href="//cdn/x.css">') == [
        "https://cdn.example/x.js", "//cdn/x.css"]
    assert external_refs('<script src="static/app.js"></script><a href="/docs">') == []


@pytest.mark.parametrize("path", ["/", "/docs", "/redoc"])
def test_pages_name_no_external_asset(client: TestClient, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/html")
    assert external_refs(resp.text) == [], external_refs(resp.text)
    # every asset the page names is served here
    for a, b in _ASSET_REF.findall(resp.text):
        ref = (a or b).strip()
        if ref.startswith(("#", "data:")) or not ref.endswith((".js", ".css", ".png")):
            continue
        asset = client.get(ref if ref.startswith("/") else "/" + ref)
        assert asset.status_code == 200 and len(asset.content) > 1000, ref


def test_docs_load_the_bundled_swagger_and_redoc(client: TestClient) -> None:
    docs = client.get("/docs").text
    assert "/docs-assets/swagger-ui-bundle.js" in docs and "/openapi.json" in docs
    assert '"validatorUrl": null' in docs  # no call to the online validator
    assert "/docs-assets/redoc.standalone.js" in client.get("/redoc").text
    assert "fonts.googleapis" not in client.get("/redoc").text


def test_page_scripts_and_styles_ship_with_a_strict_policy(client: TestClient) -> None:
    resp = client.get("/")
    csp = resp.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    js = client.get("/static/app.js")
    assert js.status_code == 200 and "sessionStorage" in js.text and "Authorization" in js.text
    assert external_refs(client.get("/static/style.css").text) == []
    # the key goes in a header, never into a URL
    assert "?key=" not in js.text and "api_key=" not in js.text
    assert client.get("/static/../app.py").status_code == 404


def test_page_is_in_the_package_data() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["ragpg_server"]
    static = Path(__file__).resolve().parents[2] / "server" / "static"
    for name in ("index.html", "app.js", "style.css"):
        assert any(Path("static", name).match(p) for p in patterns), name
        assert (static / name).is_file()


def json_names(*models: type) -> set[str]:
    """The keys of the models' JSON (serialization schema: computed fields included)."""
    return {key for m in models for key in m.model_json_schema(mode="serialization")["properties"]}


def test_the_page_reads_only_the_names_the_api_returns() -> None:
    """The page reads each value by its one name (docs/glossary.md): no deprecated alias, and nothing
    the response records do not declare."""
    from rag.notes.browse import VaultOutline
    from rag.notes.results import Reference, SearchItem, SearchResponse
    from ragpg_server.models import AskReply, ErrorResponse, VaultsResponse

    script = (Path(__file__).resolve().parents[2] / "server" / "static" / "app.js").read_text(encoding="utf-8")
    for alias in ("rel_path", "chunk_index", "chunks"):
        assert not re.search(rf"\.{alias}\b", script), alias
    ask_part = script[script.index("// -- ask"):script.index("// -- search")]
    reads = {
        "item": (set(re.findall(r"\bitem\.(\w+)", script)), json_names(SearchItem)),
        "reference": (set(re.findall(r"\b(?:r|refs\[\w+\]|refs\[best\])\.(\w+)", ask_part)) - {"append"},
                      json_names(Reference)),
        "data": (set(re.findall(r"\bdata\.(\w+)", script)),
                 json_names(AskReply, SearchResponse, VaultsResponse, VaultOutline, ErrorResponse)),
    }
    for what, (read, declared) in reads.items():
        assert read and read <= declared, (what, read - declared)


@pytest.fixture
def vaults(conn: psycopg.Connection, settings: Settings, tmp_path: Path) -> dict[str, str]:
    obsidian = tmp_path / "My Notes"
    (obsidian / ".obsidian").mkdir(parents=True)
    (obsidian / "garden").mkdir()
    (obsidian / "garden" / "tomatoes.md").write_text("# Tomatoes\n\nTomatoes need full sun and water.\n")
    (obsidian / "plans").mkdir()
    (obsidian / "plans" / "secret.md").write_text(
        "---\nconfidentiality: restricted\n---\n# Plan\n\nThe secret tomato plan.\n")
    (obsidian / "top.md").write_text("# Top\n\nA note at the top level about sunflowers.\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "readme.md").write_text("# Readme\n\nPlain folder of notes about peppers.\n")
    add_vault(conn, NewVault(name="notes", path=obsidian))
    add_vault(conn, NewVault(name="plain", path=plain))
    conn.commit()
    assert not index_vaults(settings).failed
    return {
        "public": key_store.create_key(conn, "notes-public", vaults=["notes"], clearance="public")[1],
        "admin": key_store.create_key(conn, "admin", vaults=[], all_vaults=True, clearance="restricted")[1],
    }


def test_folders_of_a_vault(client: TestClient, vaults: dict[str, str]) -> None:
    resp = client.get("/v1/vaults/notes/folders", headers=bearer(vaults["admin"]))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["obsidian_vault"] == "My Notes"
    assert [f["folder"] for f in body["folders"]] == ["", "garden", "plans"]
    plain = client.get("/v1/vaults/plain/folders", headers=bearer(vaults["admin"])).json()
    assert plain["obsidian_vault"] is None and [f["folder"] for f in plain["folders"]] == [""]


def test_folders_follow_the_key(client: TestClient, vaults: dict[str, str]) -> None:
    public = client.get("/v1/vaults/notes/folders", headers=bearer(vaults["public"]))
    assert public.status_code == 200
    assert [f["folder"] for f in public.json()["folders"]] == ["", "garden"]  # plans/ holds restricted only
    assert_error(client.get("/v1/vaults/plain/folders", headers=bearer(vaults["public"])), 403, "forbidden")
    assert_error(client.get("/v1/vaults/notes/folders", headers=bearer("rpg_wrong")), 401, "unauthorized")
    assert_error(client.get("/v1/vaults/nope/folders", headers=bearer(vaults["admin"])), 404, "not_found")
    assert client.get("/v1/vaults/bad%20name/folders", headers=bearer(vaults["admin"])).status_code == 400


def test_ask_explain_returns_the_plain_explanation(client: TestClient, vaults: dict[str, str]) -> None:
    body = {"query": "What do tomatoes need?", "vaults": ["notes"], "explain": True}
    resp = client.post("/v1/ask", json=body, headers=bearer(vaults["admin"]))
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["explanation"] and out["explanation"][0].startswith("Searched vault notes")
    assert any("garden/tomatoes.md" in line for line in out["explanation"])
    assert "debug" not in out or out["debug"] is None  # explain alone does not send the raw numbers
    plain = client.post("/v1/ask", json={**body, "explain": False}, headers=bearer(vaults["admin"])).json()
    assert plain.get("explanation") is None
    assert client.post("/v1/ask", json={**body, "explain": "yes"}, headers=bearer(vaults["admin"])).status_code == 400


def test_redoc_bundle_names_no_cdn(client: TestClient) -> None:
    js = client.get("/docs-assets/redoc.standalone.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "cdn.redoc.ly" not in js.text and "/docs-assets/favicon.png" in js.text
    assert "default-src 'self'" in client.get("/redoc").headers["content-security-policy"]


def test_readme_shows_the_page_screenshots() -> None:
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    for name in ("answer.png", "explanation.png"):
        assert f"(docs/img/{name})" in readme, name
        assert (root / "docs" / "img" / name).stat().st_size > 10_000, name
