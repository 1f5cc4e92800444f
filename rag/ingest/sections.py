"""Markdown sections built from text that was not written as one note: a canvas card, a PDF page.

`section_body(text, level)` returns the text to put under a heading of `level` so that it stays
inside that section: its own headings (ATX or setext) move below `level`, and a body that would still
swallow what follows (an unclosed code fence, an HTML block or comment left open) is shown as an
indented code block instead. So each card or page stays one section, and the section's heading —
what a citation names — cannot be forged or hidden by the text under it.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

# The chunker's own block parser (rag.ingest.chunk): what it calls a heading is what is demoted here.
_MARKDOWN = MarkdownIt("commonmark").enable("table").disable("inline")
_ATX = re.compile(r"^(?P<indent> {0,3})#{1,6}(?=\s|$)")
_PROBE = "# section end probe"
_MAX_LEVEL = 6


def heading_line(level: int, words: str) -> str:
    """One ATX heading line whose words cannot break out of the line or open a link."""
    return "#" * min(level, _MAX_LEVEL) + " " + plain_words(words)


def plain_words(words: str) -> str:
    """`words` on one line, without the characters that would make them a link or an embed."""
    return " ".join(re.sub(r"[\[\]|]", " ", words).split())


def section_body(text: str, level: int) -> str:
    """`text` demoted below a heading of `level`, and closed so the next heading is still a heading."""
    body = _demote(text.replace("\r\n", "\n").replace("\r", "\n").strip("\n"), level)
    if _stays_inside(body):
        return body
    return "\n".join("    " + line if line.strip() else "" for line in body.split("\n"))


def _demote(text: str, level: int) -> str:
    lines = text.split("\n")
    replaced: dict[int, tuple[int, str]] = {}  # first line -> (end line, new heading line)
    tokens = _MARKDOWN.parse(text)
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None or token.level != 0:
            continue
        start, end = token.map
        new_level = min(_MAX_LEVEL, int(token.tag[1]) + level)
        replaced[start] = (end, _demoted_line(token, tokens[i + 1], lines[start], new_level))
    out: list[str] = []
    line = 0
    while line < len(lines):
        if line in replaced:
            end, heading = replaced[line]
            out.append(heading)
            line = end
        else:
            out.append(lines[line])
            line += 1
    return "\n".join(out)


def _demoted_line(token: Token, inline: Token, first_line: str, new_level: int) -> str:
    if token.markup.startswith("#"):
        if m := _ATX.match(first_line):
            return m["indent"] + "#" * new_level + first_line[m.end():]
    # A setext heading (text over === or ---) becomes one ATX line of its words.
    return "#" * new_level + " " + " ".join(inline.content.split())


def _stays_inside(body: str) -> bool:
    tokens = _MARKDOWN.parse(body + "\n\n" + _PROBE + "\n")
    last_heading = [t for t in tokens if t.type == "heading_open" and t.level == 0]
    probe_line = body.count("\n") + 2
    return bool(last_heading) and last_heading[-1].map is not None and last_heading[-1].map[0] == probe_line
