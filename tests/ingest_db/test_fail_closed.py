"""Hostile frontmatter fails closed: a note whose confidentiality cannot be trusted is stored restricted.

Issue 17, items 1, 4 and 10: real files, the real indexer and database, the CLI's summary.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from rag.config import Settings
from rag.ingest import pipeline
from rag.runtime import Runtime
from rag.store import keys as key_store
from ragpg_server.app import create_app, pool_size_for
from tests.ingest_db.helpers import add, index
from tests.server.conftest import LOCAL_URL, LOOPBACK
from tests.support.files import write_files

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcde", "bcdef", strict=True))

HOSTILE = {
    "yaml-error.md": "---\nconfidentiality: restricted\nbad: [unclosed\n---\nsecret one\n",
    "unclosed.md": "---\nconfidentiality: restricted\nno closing fence\n\nsecret two\n",
    "bomb.md": f"---\nconfidentiality: restricted\n{BOMB}---\nsecret three\n",
    "listed.md": "---\nconfidentiality: [restricted]\n---\nsecret four\n",
    "number.md": "---\nconfidentiality: 3\n---\nsecret five\n",
    "empty.md": "---\nconfidentiality:\n---\nsecret six\n",
    "twice.md": "---\nconfidentiality: restricted\nConfidentiality: public\n---\nsecret seven\n",
    "merged.md": "---\nbase: &b {confidentiality: public}\n<<: *b\nconfidentiality: restricted\n---\nsecret eight\n",
}
PLAIN = {"public.md": "---\ntitle: open\n---\nopen text\n", "internal.md": "---\nconfidentiality: internal\n---\nx\n"}


def levels(conn: psycopg.Connection) -> dict[str, set[str]]:
    """source_path -> the levels stored for it, in documents and in every chunk's metadata."""
    rows = conn.execute("select d.source_path, d.confidentiality as doc, c.metadata->>'confidentiality' as chunk "
                        "from documents d join chunks c on c.document_id = d.id").fetchall()
    out: dict[str, set[str]] = {}
    for r in rows:
        out.setdefault(r["source_path"], set()).update({r["doc"], r["chunk"]})
    return out


def test_untrustworthy_confidentiality_is_stored_restricted(aconn: psycopg.Connection, cli,
                                                            tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {**HOSTILE, **PLAIN})
    assert cli("vault", "add", "v", str(root))[0] == 0
    code, out, err = cli("index", "v", "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["files_failed_closed"] == len(HOSTILE) and summary["files_indexed"] == len(HOSTILE) + 2
    stored = levels(aconn)
    assert {p: stored[p] for p in HOSTILE} == {p: {"restricted"} for p in HOSTILE}
    assert stored["public.md"] == {"public"} and stored["internal.md"] == {"internal"}
    warned = [line for line in err.splitlines() if "(treated as restricted)" in line]
    assert sorted(line.split(" in ", 1)[1].split(":")[0] for line in warned) == sorted(HOSTILE)
    assert all(line.startswith("warning: v: ") and "\n" not in line for line in warned)

    code, out, _ = cli("index", "v")  # human summary names the count (nothing changed: 0 this run)
    assert code == 0 and "stored as restricted" not in out
    (root / "listed.md").write_text("---\nconfidentiality: [restricted]\n---\nsecret four, edited\n")
    code, out, _ = cli("index", "v")
    assert code == 0 and "1 stored as restricted (unusable confidentiality)" in out


def test_edit_with_bad_date_still_applies_the_new_level(aconn: psycopg.Connection, settings: Settings,
                                                        tmp_path: Path) -> None:
    """Item 4: public → restricted in the same edit that makes the date impossible."""
    root = write_files(tmp_path / "v", {"n.md": "---\ndate: 2026-02-01\n---\nplan\n"})
    add(aconn, "v", root)
    index(settings)
    assert levels(aconn) == {"n.md": {"public"}}
    (root / "n.md").write_text("---\nconfidentiality: restricted\ndate: 2026-02-30\n---\nplan, now secret\n")
    report = index(settings).vaults[0]
    assert report.error is None and report.files_indexed == 1 and not report.skipped
    assert levels(aconn) == {"n.md": {"restricted"}}
    assert report.warnings == ["unparseable date in n.md: date: '2026-02-30' (indexed without a date)"]
    content = aconn.execute("select content from chunks").fetchone()["content"]
    assert content == "plan, now secret\n"


def test_new_note_with_impossible_date_is_indexed_without_it(aconn: psycopg.Connection, settings: Settings,
                                                             tmp_path: Path) -> None:
    """Item 10."""
    root = write_files(tmp_path / "v", {"d.md": "---\ndate: 2026-02-30\ntitle: T\n---\nbody\n"})
    add(aconn, "v", root)
    report = index(settings).vaults[0]
    assert report.files_indexed == 1 and not report.skipped
    assert report.warnings == ["unparseable date in d.md: date: '2026-02-30' (indexed without a date)"]
    row = aconn.execute("select title, doc_date, metadata->>'date' as raw from documents").fetchone()
    assert (row["title"], row["doc_date"], row["raw"]) == ("T", None, "2026-02-30")


def test_edit_the_parser_rejects_keeps_the_old_version_restricted(aconn: psycopg.Connection, settings: Settings,
                                                                  tmp_path: Path, monkeypatch) -> None:
    """Item 4, any other rejection: the old public text stays (the file exists) but only as restricted."""
    root = write_files(tmp_path / "v", {"n.md": "public plan\n", "other.md": "other\n"})
    add(aconn, "v", root)
    index(settings)
    (root / "n.md").write_text("---\nconfidentiality: restricted\n---\nsecret plan\n")
    real = pipeline.parse_document

    def choke(text: str, source_path: str):
        if source_path == "n.md":
            raise RecursionError("parser gave up")
        return real(text, source_path)

    monkeypatch.setattr(pipeline, "parse_document", choke)
    report = index(settings).vaults[0]
    assert [(s.path, s.reason) for s in report.skipped] == [("n.md", "parse_error")]
    assert report.warnings == ["n.md: old version kept as restricted until the new one can be parsed"]
    assert levels(aconn) == {"n.md": {"restricted"}, "other.md": {"public"}}
    monkeypatch.setattr(pipeline, "parse_document", real)
    index(settings)
    assert levels(aconn)["n.md"] == {"restricted"}
    assert aconn.execute("select content from chunks c join documents d on d.id = c.document_id "
                         "where d.source_path = 'n.md'").fetchone()["content"] == "secret plan\n"


# --- front matter in a form the parser does not take (issue 29) ----------------------------------

LOOKALIKE_NOTES = {
    "cr-only.md": "---\rconfidentiality: restricted\r---\rThe quince orchard plan, cr only.\r",
    "toml.md": "+++\nconfidentiality = 'restricted'\n+++\nThe quince orchard plan, toml.\n",
    "blank-first.md": "\n---\nconfidentiality: restricted\n---\nThe quince orchard plan, blank line.\n",
    "space-first.md": " ---\nconfidentiality: restricted\n---\nThe quince orchard plan, space.\n",
    "bom-blank.md": "\ufeff\n---\nconfidentiality: restricted\n---\nThe quince orchard plan, bom.\n",
}
OPEN_NOTE = {"open.md": "---\nconfidentiality: public\n---\nThe quince orchard plan, open to all.\n"}


@pytest.mark.security
def test_lookalike_front_matter_never_reaches_a_public_key(aconn: psycopg.Connection, settings: Settings,
                                                           tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {**LOOKALIKE_NOTES, **OPEN_NOTE})
    add(aconn, "v", root)
    report = index(settings).vaults[0]
    assert report.error is None and report.files_indexed == len(LOOKALIKE_NOTES) + 1
    assert levels(aconn) == {**{p: {"restricted"} for p in LOOKALIKE_NOTES}, "open.md": {"public"}}
    # CR-only front matter now parses (line endings are normalised first): restricted as it asked.
    assert report.files_failed_closed == len(LOOKALIKE_NOTES) - 1
    warned = sorted(w.split(" in ", 1)[1].split(":")[0] for w in report.warnings if "(treated as restricted)" in w)
    assert warned == sorted(set(LOOKALIKE_NOTES) - {"cr-only.md"})

    public = key_store.create_key(aconn, "pub", vaults=["v"], clearance="public")[1]
    restricted = key_store.create_key(aconn, "all", vaults=["v"], clearance="restricted")[1]
    runtime = Runtime.from_settings(settings, pool_max_size=pool_size_for(settings.server.concurrency))
    try:
        with TestClient(create_app(runtime), base_url=LOCAL_URL, client=LOOPBACK) as client:
            seen = served_paths(client, public)
            assert seen == {"open.md"}
            assert all(client.get(f"/v1/chunks/v/{p}/0", headers=auth(public)).status_code == 404
                       for p in LOOKALIKE_NOTES)
            assert served_paths(client, restricted) == set(LOOKALIKE_NOTES) | {"open.md"}  # they are indexed
    finally:
        runtime.close()


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def served_paths(client: TestClient, key: str) -> set[str]:
    """Every source path /v1/search, /v1/context and /v1/ask return for the orchard question."""
    search = client.post("/v1/search", json={"query": "quince orchard plan", "k": 50}, headers=auth(key))
    context = client.post("/v1/context", json={"query": "quince orchard plan", "mode": "base"}, headers=auth(key))
    ask = client.post("/v1/ask", json={"query": "what is the quince orchard plan?", "debug": True},
                      headers=auth(key))
    assert [r.status_code for r in (search, context, ask)] == [200, 200, 200], (search.text, context.text, ask.text)
    paths = {i["source_path"] for i in search.json()["items"]}
    paths |= {c["source_path"] for c in context.json()["ranked"]}
    for name in LOOKALIKE_NOTES:
        if name in ask.text or name in context.text:
            paths.add(name)
    return paths
