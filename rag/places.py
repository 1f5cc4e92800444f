"""Where a passage is, as its reader sees it: the one place every surface (the CLI, JSON, the web page,
MCP, the chat context's headers) turns a stored heading path and line span into words.

The stored `heading_path` keeps the chunker's trail (`# Project Heron > ## Timeline`: what is embedded,
what BM25 and SQL read); a reader sees `Project Heron › Timeline` (`shown_heading`). A PDF is converted
with one `## Page N` section per page and a canvas with one `## Card: <words> (node <id>)` section per
card (rag.ingest.pdf, rag.ingest.canvas), so their heading paths say the page and the card: a PDF
passage is cited by its page (`p. 3`), never by the lines of the converted text, and a canvas passage by
its card (`card "Launch plan"`); other notes by their lines (`lines 3-9`) — `location`. `obsidian_target`
is what Obsidian opens a passage at: the note's last heading (`Note#Heading`, the Obsidian URI's form),
a PDF's page (`#page=N`, Obsidian's link form for a PDF page).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

HEADING_SEPARATOR = " › "
_HEADING_SPLIT = re.compile(r"\s+>\s+|\n")  # the chunker writes "# A > ## B"
_PAGE = re.compile(r"^Page (\d+)$")  # rag.ingest.pdf's section per page
_NOT_IN_LINKS = re.compile(r"[#|^\[\]]+")  # what an Obsidian link cannot hold in a heading's name
_CARD = re.compile(r"^(Card|Group): (.*) \(node [^()]*\)$", re.DOTALL)  # rag.ingest.canvas's section per card
# The file kinds converted to one section per page or card (rag.ingest.walk reads them by these suffixes).
PDF_SUFFIX, CANVAS_SUFFIX = ".pdf", ".canvas"


def heading_parts(heading_path: str) -> list[str]:
    """The headings of a stored trail, outermost first, without their `#` markers."""
    return [p.strip().lstrip("#").strip() for p in _HEADING_SPLIT.split(heading_path or "") if p.strip().lstrip("#")]


def _suffix(source_path: str) -> str:
    return posixpath.splitext(source_path)[1].lower()


def _page(part: str) -> int | None:
    m = _PAGE.match(part)
    return int(m.group(1)) if m else None


def _card(part: str) -> tuple[str, str] | None:
    """("Card" or "Group", the words naming it) of a canvas section heading."""
    m = _CARD.match(part)
    return (m.group(1), m.group(2)) if m else None


def shown_heading(source_path: str, heading_path: str) -> str:
    """The heading trail as a reader sees it: `Project Heron › Timeline`. A PDF's page and a canvas's
    card are the passage's `location`, not part of its heading; a canvas group is shown by its label."""
    parts = heading_parts(heading_path)
    kind = _suffix(source_path)
    if kind == PDF_SUFFIX and parts and _page(parts[0]) is not None:
        parts = parts[1:]
    elif kind == CANVAS_SUFFIX:
        cards = [_card(p) for p in parts]
        parts = [c[1] if c else p for p, c in zip(parts, cards, strict=True) if not (c and c[0] == "Card")]
    return HEADING_SEPARATOR.join(parts)


def _lines(start_line: int | None, end_line: int | None) -> str | None:
    if start_line is None:
        return None
    end = end_line if end_line is not None else start_line
    return f"lines {start_line}-{end}" if end != start_line else f"line {start_line}"


def _pages(heading_paths: Sequence[str]) -> str | None:
    pages = sorted({p for hp in heading_paths for p in [_page(next(iter(heading_parts(hp)), ""))] if p is not None})
    if not pages:
        return None
    return f"p. {pages[0]}" if len(pages) == 1 else f"pp. {pages[0]}-{pages[-1]}"


def _cards(heading_paths: Sequence[str]) -> str | None:
    names = [c[1] for hp in heading_paths for c in map(_card, heading_parts(hp)) if c and c[0] == "Card"]
    unique = list(dict.fromkeys(names))
    if not unique:
        return None
    return ("card " if len(unique) == 1 else "cards ") + ", ".join(f'"{n}"' for n in unique)


def location(source_path: str, heading_paths: str | Sequence[str], start_line: int | None,
             end_line: int | None) -> str | None:
    """Where in the file a passage (or a block of consecutive passages, each heading path given) is:
    `p. 3` (`pp. 3-4`) in a PDF, `card "Launch plan"` in a canvas, else `lines 3-9` / `line 3`; None
    when nothing is known (a PDF or canvas passage without its section falls back to its lines)."""
    trails = [heading_paths] if isinstance(heading_paths, str) else list(heading_paths)
    kind = _suffix(source_path)
    found = _pages(trails) if kind == PDF_SUFFIX else _cards(trails) if kind == CANVAS_SUFFIX else None
    return found or _lines(start_line, end_line)


def place(source_path: str, heading_path: str, start_line: int | None, end_line: int | None) -> str:
    """The heading and the location in one phrase (`Project Heron › Timeline, lines 3-9`; `p. 3`), '' when
    neither is known: what a line naming a passage shows after the note's name."""
    return ", ".join(p for p in (shown_heading(source_path, heading_path),
                                 location(source_path, heading_path, start_line, end_line)) if p)


def obsidian_target(source_path: str, heading_path: str) -> str:
    """The `file` an Obsidian URI opens the passage at: the path, with `#Heading` (its last heading) for a
    note, `#page=N` for a PDF page; a canvas, or a passage above the first heading, opens the file."""
    parts = heading_parts(heading_path)
    kind = _suffix(source_path)
    if kind == PDF_SUFFIX:
        page = _page(parts[0]) if parts else None
        return f"{source_path}#page={page}" if page is not None else source_path
    if kind == CANVAS_SUFFIX or not parts:
        return source_path
    heading = " ".join(_NOT_IN_LINKS.sub(" ", parts[-1]).split())
    return f"{source_path}#{heading}" if heading else source_path
