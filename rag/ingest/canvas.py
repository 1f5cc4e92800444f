"""A JSON Canvas file (`.canvas`, https://jsoncanvas.org) as the markdown the rest of ingestion reads.

One section per card, whose heading names the card and its node id (`## Card: <first words> (node
<id>)`), so a passage's heading path — what a citation shows — says which card it came from:
- a text node's markdown is the section's body (its own headings moved below the card's);
- a file node is a wikilink to its file (`[[Folder/Note.md#Heading]]`), a link like any in a note;
- a link node's body is its URL;
- a group is a section (`## Group: <label> (node <id>)`) holding the cards whose centres lie inside it
  (the smallest such group), one level down;
- an edge is a line under the card it leaves: `→ <the other card>` and its label.
Cards are read top to bottom, then left to right, as a reader scans the board. Pure functions: no
file access; a file that is not a canvas raises `CanvasError` (the index reports it as a parse error).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from rag.ingest.sections import heading_line, plain_words, section_body
from rag.obsidian import render_text

# A card is named by the first words a reader sees on it: enough to tell cards apart in a citation.
_TITLE_WORDS = 8
_CARD_TYPES = frozenset({"text", "file", "link"})


class CanvasError(ValueError):
    """The file is not a JSON Canvas document."""


@dataclass(frozen=True)
class _Node:
    id: str
    type: str
    raw: dict[str, Any]
    x: float
    y: float
    width: float
    height: float

    @property
    def centre(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y + self.height / 2

    def holds(self, other: _Node) -> bool:
        cx, cy = other.centre
        return other is not self and self.x <= cx <= self.x + self.width and self.y <= cy <= self.y + self.height


@dataclass(frozen=True)
class CanvasMarkdown:
    text: str
    warnings: list[str]


def canvas_markdown(data: str, source_path: str, *, max_nodes: int) -> CanvasMarkdown:
    """The canvas in `data` as markdown, its cards one section each (see the module doc)."""
    nodes, edges, warnings = _read(data, source_path, max_nodes)
    titles = {n.id: _title(n) for n in nodes}
    groups = [n for n in nodes if n.type == "group"]
    cards = [n for n in nodes if n.type in _CARD_TYPES]
    owner = {c.id: _smallest_holder(c, groups) for c in cards}
    lines: list[str] = []  # no title heading: the note's title is then its file name (rag.ingest.parse)
    for item in _reading_order([*groups, *(c for c in cards if owner[c.id] is None)]):
        if item.type == "group":
            lines += [heading_line(2, f"Group: {titles[item.id]} (node {item.id})"), ""]
            inside = [c for c in cards if owner[c.id] is item]
            for card in _reading_order(inside):
                lines += _card(card, 3, titles, edges)
        else:
            lines += _card(item, 2, titles, edges)
    skipped = sum(1 for n in nodes if n.type not in _CARD_TYPES and n.type != "group")
    if skipped:
        warnings.append(f"{source_path}: {skipped} canvas nodes of unknown types not indexed")
    text = "\n".join(lines).rstrip("\n")
    return CanvasMarkdown(text + "\n" if text else "", warnings)


def _read(data: str, source_path: str,
          max_nodes: int) -> tuple[list[_Node], dict[str, list[tuple[str, str]]], list[str]]:
    if not data.strip():
        return [], {}, []  # a canvas Obsidian just created is an empty file
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise CanvasError(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes", []), list) \
            or not isinstance(doc.get("edges", []), list):
        raise CanvasError("not a JSON Canvas document (an object with lists of nodes and edges)")
    raw_nodes = [n for n in doc.get("nodes", []) if isinstance(n, dict) and isinstance(n.get("id"), str)]
    warnings: list[str] = []
    if len(raw_nodes) > max_nodes:
        warnings.append(f"{source_path}: {len(raw_nodes)} canvas nodes, only the first {max_nodes} indexed "
                        "(ingest.max_canvas_nodes)")
        raw_nodes = raw_nodes[:max_nodes]
    nodes = [_Node(n["id"], str(n.get("type", "")), n, _number(n, "x"), _number(n, "y"),
                   _number(n, "width"), _number(n, "height")) for n in raw_nodes]
    known = {n.id for n in nodes}
    edges: dict[str, list[tuple[str, str]]] = {}
    for e in doc.get("edges", []):
        if isinstance(e, dict) and e.get("fromNode") in known and e.get("toNode") in known:
            edges.setdefault(e["fromNode"], []).append((e["toNode"], _string(e, "label")))
    return nodes, edges, warnings


def _number(node: dict[str, Any], key: str) -> float:
    value = node.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0  # a card without a usable position still counts; it only sorts first
    return float(value)


def _string(node: dict[str, Any], key: str) -> str:
    value = node.get(key)
    return value if isinstance(value, str) else ""


def _smallest_holder(card: _Node, groups: list[_Node]) -> _Node | None:
    holders = [g for g in groups if g.holds(card)]
    return min(holders, key=lambda g: g.width * g.height) if holders else None


def _reading_order(nodes: list[_Node]) -> list[_Node]:
    return sorted(nodes, key=lambda n: (n.y, n.x))


def _title(node: _Node) -> str:
    if node.type == "text":
        seen = render_text(_string(node.raw, "text"))
        first = next((line.strip(" \t#>-*") for line in seen.splitlines() if line.strip(" \t#>-*")), "")
        return " ".join(plain_words(first).split()[:_TITLE_WORDS]) or "text"
    if node.type == "file":
        path = PurePosixPath(_string(node.raw, "file"))
        name = path.stem if path.suffix.lower() == ".md" else path.name
        return plain_words(name + _string(node.raw, "subpath").replace("#", " > ")) or "file"
    if node.type == "link":
        return plain_words(_string(node.raw, "url")) or "link"
    return plain_words(_string(node.raw, "label")) or node.type or "node"


def _card(node: _Node, level: int, titles: dict[str, str], edges: dict[str, list[tuple[str, str]]]) -> list[str]:
    lines = [heading_line(level, f"Card: {titles[node.id]} (node {node.id})"), ""]
    body = _body(node, level)
    if body:
        lines += [body, ""]
    for target, label in edges.get(node.id, []):
        lines.append(f"→ {titles[target]}" + (f": {plain_words(label)}" if label.strip() else ""))
    if node.id in edges:
        lines.append("")
    return lines


def _body(node: _Node, level: int) -> str:
    if node.type == "text":
        return section_body(_string(node.raw, "text"), level)
    if node.type == "file":
        target = plain_words(_string(node.raw, "file"))
        subpath = plain_words(_string(node.raw, "subpath"))
        return f"[[{target}{subpath if subpath.startswith('#') else ''}]]" if target else ""
    return plain_words(_string(node.raw, "url"))
