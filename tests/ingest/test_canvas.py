"""A JSON Canvas file as markdown: one section per card named by its node, file nodes as wikilinks,
groups holding their cards, and card text that cannot leak out of its section."""

from __future__ import annotations

import json

import pytest

from rag.ingest.canvas import CanvasError, canvas_markdown
from rag.ingest.chunk import chunk_markdown


def canvas(*nodes: dict[str, object], edges: list[dict[str, object]] | None = None) -> str:
    return json.dumps({"nodes": list(nodes), "edges": edges or []})


def text_node(node_id: str, text: str, x: int = 0, y: int = 0, w: int = 200, h: int = 100) -> dict[str, object]:
    return {"id": node_id, "type": "text", "text": text, "x": x, "y": y, "width": w, "height": h}


def sections(markdown: str) -> dict[str, str]:
    """heading path -> the text of that section's passages."""
    out: dict[str, str] = {}
    for c in chunk_markdown(markdown).chunks:
        out[c.heading_path] = (out.get(c.heading_path, "") + c.text).strip()
    return out


def test_cards_are_sections_named_by_node_in_reading_order() -> None:
    data = canvas(
        text_node("b2", "Second card **below**", y=300),
        text_node("a1", "# Launch plan\nShip it on [[Release dates|the date]].", y=0),
        {"id": "f1", "type": "file", "file": "Projects/Road map.md", "subpath": "#Q3", "x": 400, "y": 0,
         "width": 200, "height": 100},
        {"id": "l1", "type": "link", "url": "https://example.org/x", "x": 0, "y": 600, "width": 10, "height": 10},
        edges=[{"id": "e1", "fromNode": "a1", "toNode": "b2", "label": "then"}],
    )
    md = canvas_markdown(data, "Boards/Plan.canvas", max_nodes=100)
    assert md.warnings == []
    assert md.text == (
        "## Card: Launch plan (node a1)\n\n### Launch plan\nShip it on [[Release dates|the date]].\n\n"
        "→ Second card below: then\n\n"
        "## Card: Road map > Q3 (node f1)\n\n[[Projects/Road map.md#Q3]]\n\n"
        "## Card: Second card below (node b2)\n\nSecond card **below**\n\n"
        "## Card: https://example.org/x (node l1)\n\nhttps://example.org/x\n")
    found = sections(md.text)
    assert "## Card: Launch plan (node a1) > ### Launch plan" in found
    assert "[[Projects/Road map.md#Q3]]" in found["## Card: Road map > Q3 (node f1)"]


def test_a_group_holds_the_cards_inside_it() -> None:
    data = canvas(
        {"id": "g1", "type": "group", "label": "Ideas", "x": 0, "y": 0, "width": 1000, "height": 1000},
        {"id": "g2", "type": "group", "label": "Small", "x": 0, "y": 0, "width": 300, "height": 300},
        text_node("in-small", "tiny idea", x=10, y=10, w=50, h=50),
        text_node("in-big", "big idea", x=500, y=500),
        text_node("outside", "loose idea", x=2000, y=2000),
    )
    found = sections(canvas_markdown(data, "b.canvas", max_nodes=100).text)
    assert found["## Group: Small (node g2) > ### Card: tiny idea (node in-small)"].endswith("tiny idea")
    assert found["## Group: Ideas (node g1) > ### Card: big idea (node in-big)"].endswith("big idea")
    assert found["## Card: loose idea (node outside)"].endswith("loose idea")


@pytest.mark.parametrize("hostile", [
    "## Card: forged (node x)\nwords",           # a heading at the card's own level
    "Forged\n===\nwords",                         # a setext heading
    "```\nan open fence swallowing the rest",     # an unclosed fence
    "<!-- an open comment\n\n## Card: forged (node x)",  # an open HTML block
])
def test_card_text_cannot_forge_or_swallow_the_next_card(hostile: str) -> None:
    data = canvas(text_node("h", hostile, y=0), text_node("next", "the next card", y=500))
    found = sections(canvas_markdown(data, "b.canvas", max_nodes=100).text)
    assert found["## Card: the next card (node next)"].endswith("the next card")
    cards = {part for path in found for part in path.split(" > ") if part.startswith("## ")}
    assert {card.rsplit(" ", 2)[-1] for card in cards} == {"h)", "next)"}  # only the real nodes are cards


def test_names_cannot_open_links_or_break_headings() -> None:
    data = canvas({"id": "x]]\n# evil", "type": "file", "file": "a]] [[b|c.md", "x": 0, "y": 0,
                   "width": 1, "height": 1})
    text = canvas_markdown(data, "b.canvas", max_nodes=10).text
    assert text.splitlines()[0] == "## Card: a b c (node x # evil)"
    assert text.count("[[") == 1 and text.count("]]") == 1


def test_over_the_node_limit_the_first_nodes_are_indexed_and_the_report_says_so() -> None:
    data = canvas(*(text_node(f"n{i}", f"card {i}", y=i) for i in range(5)))
    md = canvas_markdown(data, "b.canvas", max_nodes=3)
    assert "(node n2)" in md.text and "(node n3)" not in md.text
    assert md.warnings == ["b.canvas: 5 canvas nodes, only the first 3 indexed (ingest.max_canvas_nodes)"]


def test_an_empty_canvas_is_empty_and_a_bad_one_is_an_error() -> None:
    assert canvas_markdown("", "New.canvas", max_nodes=10).text == ""
    assert canvas_markdown("{}", "New.canvas", max_nodes=10).text == ""
    with pytest.raises(CanvasError, match="not JSON"):
        canvas_markdown("{nodes: [", "b.canvas", max_nodes=10)
    with pytest.raises(CanvasError, match="not a JSON Canvas"):
        canvas_markdown('{"nodes": {}}', "b.canvas", max_nodes=10)
