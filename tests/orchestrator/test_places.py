"""Where a passage is, as its reader sees it (rag.places): one wording of headings and locations for
every surface — heading trails without their markers, a PDF's page and a canvas's card instead of the
lines of the converted text, and the place Obsidian opens."""

from __future__ import annotations

import pytest

from rag.context.assemble import assemble_context
from rag.places import location, obsidian_target, place, shown_heading
from tests.orchestrator.factory import cand, ranked

CARD = "## Group: Launch (node g1) > ### Card: Rollout checklist (node card-7f3a)"


@pytest.mark.parametrize(("path", "trail", "shown"), [
    ("Projects/Project Heron.md", "# Project Heron > ## Timeline", "Project Heron › Timeline"),
    ("a.md", "# A > ## B > ### C", "A › B › C"),
    ("a.md", "", ""),
    ("a.txt", "Intro > Details", "Intro › Details"),
    ("r.pdf", "## Page 3", ""),  # the page is the location, not a heading
    ("r.pdf", "## Page 3 > ### Totals", "Totals"),
    ("b.canvas", "## Card: Rollout checklist (node card-7f3a)", ""),
    ("b.canvas", CARD, "Launch"),
    ("notes/Page 3.md", "## Page 3", "Page 3"),  # a note's own "Page 3" heading is a heading
])
def test_headings_are_shown_without_their_markers(path: str, trail: str, shown: str) -> None:
    assert shown_heading(path, trail) == shown


@pytest.mark.parametrize(("path", "trails", "lines", "where"), [
    ("a.md", "# A", (3, 9), "lines 3-9"),
    ("a.md", "# A", (4, 4), "line 4"),
    ("a.md", "# A", (None, None), None),
    ("Report.PDF", "## Page 3", (5, 9), "p. 3"),
    ("r.pdf", ["## Page 3", "## Page 4"], (5, 30), "pp. 3-4"),
    ("r.pdf", "", (5, 9), "lines 5-9"),  # no page known: the lines are all there is
    ("b.canvas", CARD, (1, 8), 'card "Rollout checklist"'),
    ("b.canvas", ["## Card: One (node 1)", "## Card: Two (node 2)"], (1, 8), 'cards "One", "Two"'),
])
def test_pdfs_are_located_by_page_canvases_by_card_notes_by_lines(
        path: str, trails: str | list[str], lines: tuple[int | None, int | None], where: str | None) -> None:
    assert location(path, trails, *lines) == where


def test_a_place_joins_heading_and_location() -> None:
    assert place("a.md", "# Project Heron > ## Timeline", 3, 9) == "Project Heron › Timeline, lines 3-9"
    assert place("r.pdf", "## Page 2", 4, 6) == "p. 2"
    assert place("a.md", "", None, None) == ""


@pytest.mark.parametrize(("path", "trail", "target"), [
    ("Projects/Project Heron.md", "# Project Heron > ## Timeline", "Projects/Project Heron.md#Timeline"),
    ("a.md", "", "a.md"),
    ("a.md", "# A > ## Q&A #2 | [draft]", "a.md#Q&A 2 draft"),  # what a link cannot hold is dropped
    ("r.pdf", "## Page 3", "r.pdf#page=3"),
    ("b.canvas", CARD, "b.canvas"),
])
def test_obsidian_opens_a_passage_at_its_heading_or_page(path: str, trail: str, target: str) -> None:
    assert obsidian_target(path, trail) == target


def test_the_chat_context_cites_a_pdf_block_by_its_pages() -> None:
    pages = [cand("r.pdf", 0, "first page text", heading_path="## Page 1", start_line=1, end_line=3),
             cand("r.pdf", 1, "second page text", heading_path="## Page 2", start_line=5, end_line=7)]
    out = assemble_context(ranked(pages), budget_tokens=10_000)
    (cit,) = out.citations
    assert (cit.location, cit.heading) == ("pp. 1-2", "")
    assert out.text.startswith("[S1] r.pdf (pp. 1-2)\n")
