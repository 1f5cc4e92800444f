"""Canvas and PDF files in a real vault, indexed into the real database and searched through the CLI:
cards and pages are cited by their node and page, file nodes are links in the stored text, a shown
passage has no link markup, and PDFs that cannot be read are skipped with their reason while
everything else is indexed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from rag.config import Settings
from tests.ingest_db.helpers import add, index, with_settings
from tests.support.files import write_files
from tests.support.pdf_files import encrypted_pdf, pdf_bytes

BOARD = json.dumps({
    "nodes": [
        {"id": "card-7f3a", "type": "text", "x": 0, "y": 0, "width": 300, "height": 200,
         "text": "Rollout checklist\n\nThe zeppelin hangar opens after [[Safety review|the safety review]]."},
        {"id": "file-2b", "type": "file", "file": "Notes/Safety review.md", "x": 400, "y": 0,
         "width": 300, "height": 200},
    ],
    "edges": [{"id": "e1", "fromNode": "card-7f3a", "toNode": "file-2b", "label": "depends on"}],
})
NOTE = "# Safety review\n\nEvery hangar is inspected twice.\n"
REPORT = pdf_bytes([["Annual report", "Revenue grew in every region."],
                    ["Outlook", "The marmalade factory opens in spring."]])


def chunks_of(conn: psycopg.Connection, source_path: str) -> list[dict[str, Any]]:
    return conn.execute("select c.heading_path, c.content from chunks c join documents d on d.id = c.document_id "
                        "where d.source_path = %s order by c.ordinal", (source_path,)).fetchall()


def search(cli: Any, query: str) -> list[dict[str, Any]]:
    code, out, err = cli("search", query, "--json")
    assert code == 0, err
    return list(json.loads(out)["items"])


def test_canvas_cards_are_searchable_cited_by_node_and_link_their_files(
        cli: Any, aconn: psycopg.Connection, tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {"Boards/Launch.canvas": BOARD, "Notes/Safety review.md": NOTE})
    assert cli("vault", "add", "v", str(root))[0] == 0
    code, out, err = cli("index", "v", "--json")
    assert code == 0 and json.loads(out)["files_indexed"] == 2, (out, err)

    stored = {c["heading_path"]: c["content"] for c in chunks_of(aconn, "Boards/Launch.canvas")}
    assert set(stored) == {"## Card: Rollout checklist (node card-7f3a)",
                           "## Card: Safety review (node file-2b)"}
    assert "[[Notes/Safety review.md]]" in stored["## Card: Safety review (node file-2b)"]
    assert "→ Safety review: depends on" in stored["## Card: Rollout checklist (node card-7f3a)"]

    top = search(cli, "zeppelin hangar")[0]
    assert top["source_path"] == "Boards/Launch.canvas"
    assert top["heading_path"].endswith("Card: Rollout checklist (node card-7f3a)")
    assert (top["location"], top["heading"]) == ('card "Rollout checklist"', "")  # cited by its card
    assert top["open_at"] == "Boards/Launch.canvas"  # Obsidian opens a canvas, not a card
    shown = json.dumps(top)
    assert "zeppelin hangar opens after the safety review" in shown
    assert "[[" not in shown and "]]" not in shown

    code, out, err = cli("ask", "When does the zeppelin hangar open?", "--json")  # no LLM: quoted sentences
    assert code == 0, err
    answer = json.loads(out)
    assert "[File: Launch.canvas, Section: Card: Rollout checklist (node card-7f3a)]" in answer["answer"]
    assert "[[" not in json.dumps(answer) and "]]" not in json.dumps(answer)


def test_pdf_pages_are_cited_by_page_number(cli: Any, aconn: psycopg.Connection, tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", {"Attachments/Report 2024.pdf": REPORT, "a.md": "# A\n\nplain note\n"})
    assert cli("vault", "add", "v", str(root))[0] == 0
    assert cli("index", "v")[0] == 0
    paths = [c["heading_path"] for c in chunks_of(aconn, "Attachments/Report 2024.pdf")]
    assert paths == ["## Page 1", "## Page 2"]
    doc = aconn.execute("select title, size_bytes from documents where source_path = 'Attachments/Report 2024.pdf'"
                        ).fetchone()
    assert doc == {"title": "Report 2024", "size_bytes": len(REPORT)}

    top = search(cli, "marmalade factory")[0]
    assert top["source_path"] == "Attachments/Report 2024.pdf" and top["heading_path"].endswith("Page 2")
    # cited by its page, never by the lines of the converted text (issue 48), on each surface
    assert (top["location"], top["heading"], top["open_at"]) == ("p. 2", "", "Attachments/Report 2024.pdf#page=2")
    code, out, err = cli("search", "marmalade factory")
    assert code == 0 and "   - (p. 2)" in out.splitlines(), (out, err)
    code, out, err = cli("ask", "When does the marmalade factory open?", "--json")
    assert code == 0, err
    pdf_refs = [r for r in json.loads(out)["references"] if r["source_path"] == "Attachments/Report 2024.pdf"]
    assert pdf_refs and {r["location"] for r in pdf_refs} == {"p. 2"}
    code, out, err = cli("ask", "When does the marmalade factory open?")
    assert code == 0 and "Attachments/Report 2024.pdf (p. 2)" in out, out
    assert "line" not in "".join(line for line in out.splitlines() if "Report 2024.pdf" in line)


def test_unreadable_pdfs_are_skipped_with_reasons_and_nothing_else_is_lost(
        aconn: psycopg.Connection, settings: Settings, tmp_path: Path) -> None:
    three_pages = pdf_bytes([["one"], ["two"], ["three"]])
    root = write_files(tmp_path / "v", {
        "good.pdf": REPORT,
        "open-to-all.pdf": encrypted_pdf(REPORT, user_password=""),  # only its permissions are locked
        "locked.pdf": encrypted_pdf(REPORT, user_password="s3cret"),
        "broken.pdf": b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog",
        "long.pdf": three_pages,
        "huge.pdf": pdf_bytes([["big"]], padding_bytes=20_000),
        "board.canvas": "{not json",
        "note.md": NOTE,
    })
    add(aconn, "v", root)
    report = index(with_settings(settings, ingest={"max_pdf_pages": 2, "max_pdf_bytes": 10_000}))
    assert not report.failed
    skipped = {s.path: (s.reason, s.detail) for s in report.vaults[0].skipped}
    assert skipped["locked.pdf"] == ("encrypted", "protected by a password")
    assert skipped["broken.pdf"][0] == "broken" and skipped["broken.pdf"][1].startswith("not a readable PDF: ")
    assert skipped["long.pdf"] == ("too_many_pages", "3 pages > limit 2 (ingest.max_pdf_pages)")
    assert skipped["huge.pdf"][0] == "too_large" and skipped["huge.pdf"][1].endswith("> limit 10000")
    assert skipped["board.canvas"][0] == "parse_error" and "CanvasError: not JSON" in skipped["board.canvas"][1]
    assert len(skipped) == 5
    indexed = {r["source_path"] for r in aconn.execute("select source_path from documents")}
    assert indexed == {"good.pdf", "open-to-all.pdf", "note.md"}
    assert [c["heading_path"] for c in chunks_of(aconn, "open-to-all.pdf")] == [
        "## Page 1", "## Page 2"]


def test_without_the_pdf_extra_pdfs_are_skipped_with_the_install_hint_and_kept(
        aconn: psycopg.Connection, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_files(tmp_path / "v", {"report.pdf": REPORT, "note.md": NOTE})
    add(aconn, "v", root)
    assert index(settings).vaults[0].files_indexed == 2
    (root / "later.pdf").write_bytes(REPORT)
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as if the extra were not installed: import fails

    report = index(settings)
    assert not report.failed
    skipped = {s.path: (s.reason, s.detail) for s in report.vaults[0].skipped}
    hint = "PDF support is an optional extra: install ragpg[pdf]"
    assert skipped == {"report.pdf": ("needs_extra", hint), "later.pdf": ("needs_extra", hint)}
    indexed = {r["source_path"] for r in aconn.execute("select source_path from documents")}
    assert indexed == {"report.pdf", "note.md"}  # what an earlier run read from the PDF stays


@pytest.mark.security
def test_a_pdf_is_stored_at_the_attachment_level(aconn: psycopg.Connection, settings: Settings,
                                                 tmp_path: Path) -> None:
    """A PDF cannot say its level (no front matter): it is stored at `ingest.pdf_confidentiality`,
    restricted unless set lower, so a restricted note's attachment is never public by default; a
    change of the setting reaches every PDF at the next run."""
    root = write_files(tmp_path / "v", {
        "HR/salaries.pdf": pdf_bytes([["Salaries", "The CEO salary is confidential."]]),
        "HR/Salaries.md": "---\nconfidentiality: restricted\n---\n# Salaries\n\n![[salaries.pdf]]\n",
        "open.md": NOTE})
    add(aconn, "v", root)
    assert not index(settings).failed

    def levels() -> dict[str, tuple[str, set[str]]]:
        return {r["source_path"]: (r["confidentiality"], set(r["chunk_levels"])) for r in aconn.execute(
            "select d.source_path, d.confidentiality, array_agg(distinct c.metadata ->> 'confidentiality') as "
            "chunk_levels from documents d join chunks c on c.document_id = d.id group by 1, 2")}

    assert levels() == {"HR/salaries.pdf": ("restricted", {"restricted"}),
                        "HR/Salaries.md": ("restricted", {"restricted"}), "open.md": ("public", {"public"})}
    # the setting changed, the file not: the next run stores the PDF at the new level, and only the PDF
    report = index(with_settings(settings, ingest={"pdf_confidentiality": "public"}))
    assert report.vaults[0].files_indexed == 1 and report.vaults[0].files_unchanged == 2
    assert levels()["HR/salaries.pdf"] == ("public", {"public"})
