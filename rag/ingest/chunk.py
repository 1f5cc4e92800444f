"""Split a document body into retrieval chunks that slice back exactly from the file bytes.

Blocks come from markdown-it's token line maps (headings, paragraphs, fences, list items, ...),
so a `# comment` inside a fenced code block is never a heading. Blocks are packed greedily up to
`soft_bytes` within one heading section; anything larger than `hard_bytes` is split at line
boundaries, and a single over-long line at UTF-8 character boundaries.

Conventions (both chunkers):
- `text` is the document *body*: the file text from `body_start_byte` (= line `body_start_line`,
  0-based) onward, e.g. `ParsedDocument.body(file_text)`, which normalises line endings (and the
  indexer masks secrets keeping every line). Chunk positions are in whole-text terms, so
  `text_bytes[c.start_byte:c.end_byte].decode("utf-8") == c.text`, and lines are the file's lines.
- Lines are "\\n"-terminated (a CRLF line keeps its "\\r"); `start_line`/`end_line` are 1-based and
  inclusive, `end_line` being the line that holds the chunk's last byte.
- Whitespace-only lines are trimmed from chunk edges; whitespace-only chunks are dropped.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypedDict, Unpack

from markdown_it import MarkdownIt

from rag.config import ChunkingSettings
from rag.errors import InputError

_CHUNKING = ChunkingSettings()
_MIN_HARD_BYTES = 4  # the longest UTF-8 character; a smaller limit could not always be met

# Only block structure matters; inline parsing is skipped (a heading's raw text is still in .content).
_MARKDOWN = MarkdownIt("commonmark").enable("table").disable("inline")

Span = tuple[int, int]  # byte range [start, end) within the body


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    heading_path: str  # e.g. "# A > ## B"; "" before the first heading and for plain text
    text: str
    start_line: int  # 1-based, inclusive, whole-file line numbers
    end_line: int  # 1-based, inclusive
    start_byte: int  # whole-file byte offset
    end_byte: int  # exclusive


@dataclass(frozen=True)
class ChunkResult:
    """The chunks, and whether the document produced more than `max_chunks` (only the first kept)."""

    chunks: list[Chunk]
    truncated: bool
    total: int  # chunks produced before truncation


@dataclass(frozen=True)
class _Section:
    heading_path: str
    blocks: list[Span]  # contiguous, in order; the first is the heading block (if any)
    has_heading: bool


@dataclass(frozen=True)
class _Limits:
    soft: int
    hard: int
    overlap: int
    max_chunks: int


class _Body:
    """The body as UTF-8 bytes with a line index."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.line_starts = [0] + [m.end() for m in re.finditer(b"\n", self.data)]

    def span_of_lines(self, first: int, stop: int) -> Span:
        end = self.line_starts[stop] if stop < len(self.line_starts) else len(self.data)
        return self.line_starts[first], end

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset) - 1


class ChunkOptions(TypedDict, total=False):
    """Where the body starts in the file (default 0, 0) and the size limits (default
    `ChunkingSettings`: soft_bytes, hard_bytes, overlap_bytes, max_chunks_per_document)."""

    body_start_line: int
    body_start_byte: int
    soft_bytes: int
    hard_bytes: int
    overlap_bytes: int
    max_chunks: int


def chunk_markdown(text: str, **options: Unpack[ChunkOptions]) -> ChunkResult:
    """Markdown: sections by heading, blocks from markdown-it's line maps."""
    return _chunk(text, _markdown_sections, options)


def chunk_plain_text(text: str, **options: Unpack[ChunkOptions]) -> ChunkResult:
    """Plain text: blocks are separated by blank lines; one section, heading_path ""."""
    return _chunk(text, _plain_sections, options)


def _chunk(text: str, sections_of: Callable[[str, _Body], list[_Section]], options: ChunkOptions) -> ChunkResult:
    limits = _limits(options.get("soft_bytes", _CHUNKING.soft_bytes), options.get("hard_bytes", _CHUNKING.hard_bytes),
                     options.get("overlap_bytes", _CHUNKING.overlap_bytes),
                     options.get("max_chunks", _CHUNKING.max_chunks_per_document))
    body = _Body(text)
    return _emit(body, sections_of(text, body), limits, options.get("body_start_line", 0),
                 options.get("body_start_byte", 0))


def _plain_sections(text: str, body: _Body) -> list[_Section]:
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() and (i == 0 or not lines[i - 1].strip())]
    return [_Section("", _blocks_from_line_starts(body, starts, len(lines)), False)]


def _limits(soft: int, hard: int, overlap: int, max_chunks: int) -> _Limits:
    if hard < _MIN_HARD_BYTES:
        raise InputError(f"chunking.hard_bytes must be at least {_MIN_HARD_BYTES}, got {hard}")
    # A soft limit above the hard one would let packed chunks break the hard guarantee.
    return _Limits(min(soft, hard), hard, max(overlap, 0), max_chunks)


# --- block structure ---------------------------------------------------------------------------

def _markdown_sections(text: str, body: _Body) -> list[_Section]:
    # markdown-it treats a lone "\r" as a line break; blanking "\r" keeps its line numbers equal
    # to our "\n"-only lines without changing block structure.
    tokens = _MARKDOWN.parse(text.replace("\r", " "))
    headings: dict[int, tuple[int, str]] = {}
    starts: set[int] = {0}
    for i, tok in enumerate(tokens):
        if tok.map is None or tok.nesting == -1:
            continue
        if tok.level == 0 or (tok.level == 1 and tok.type == "list_item_open"):
            starts.add(tok.map[0])
        if tok.level == 0 and tok.type == "heading_open":
            headings[tok.map[0]] = (int(tok.tag[1:]), tokens[i + 1].content.strip())
    n_lines = len(body.line_starts)
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    ordered = sorted(starts)
    for line, span in zip(ordered, _blocks_from_line_starts(body, ordered, n_lines), strict=True):
        if line in headings:
            level, title = headings[line]
            stack = [h for h in stack if h[0] < level] + [(level, title)]
            path = " > ".join(f"{'#' * lvl} {t}".rstrip() for lvl, t in stack)
            sections.append(_Section(path, [span], True))
        elif sections:
            sections[-1].blocks.append(span)
        else:
            sections.append(_Section("", [span], False))
    return sections


def _blocks_from_line_starts(body: _Body, starts: list[int], n_lines: int) -> list[Span]:
    """Each block runs from its start line to the next block's start (trailing blank lines and
    token-less lines such as link reference definitions stay with the block above)."""
    bounds = [*starts, n_lines]
    return [body.span_of_lines(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


# --- packing -----------------------------------------------------------------------------------

def _emit(body: _Body, sections: list[_Section], limits: _Limits, line0: int, byte0: int) -> ChunkResult:
    chunks: list[Chunk] = []
    for section in (s for s in sections if s.blocks):
        prev_start: int | None = None  # of the previous chunk in this section
        for span in _pack_section(body, section, limits):
            start, end = _trim(body.data, *span)
            if start >= end or not body.data[start:end].decode("utf-8").strip():
                continue
            if prev_start is not None and limits.overlap:
                start = _overlap_start(body, start, end, prev_start + 1, limits)
            prev_start = start
            chunks.append(Chunk(
                ordinal=len(chunks), heading_path=section.heading_path,
                text=body.data[start:end].decode("utf-8"),
                start_line=line0 + body.line_of(start) + 1, end_line=line0 + body.line_of(end - 1) + 1,
                start_byte=byte0 + start, end_byte=byte0 + end,
            ))
    total = len(chunks)
    return ChunkResult(chunks[: limits.max_chunks], total > limits.max_chunks, total)


def _pack_section(body: _Body, section: _Section, limits: _Limits) -> list[Span]:
    units: list[Span] = []
    for block in section.blocks:
        if block[1] - block[0] <= limits.hard:
            units.append(block)
        else:
            units.extend(_pack(list(_line_pieces(body, block, limits.soft)), limits.soft))
    # A heading alone makes a poor chunk: let it take the next unit along, up to the hard limit.
    return _pack(units, limits.soft, first_limit=limits.hard if section.has_heading else None)


def _pack(pieces: list[Span], limit: int, first_limit: int | None = None) -> list[Span]:
    """Greedily merge contiguous pieces while the merged span stays within `limit`."""
    out: list[Span] = []
    for start, end in pieces:
        if out:
            cur_start = out[-1][0]
            allowed = first_limit if first_limit is not None and len(out) == 1 and out[0] == pieces[0] else limit
            if end - cur_start <= allowed:
                out[-1] = (cur_start, end)
                continue
        out.append((start, end))
    return out


def _line_pieces(body: _Body, span: Span, limit: int) -> Iterator[Span]:
    """The lines of `span`, with lines longer than `limit` cut at UTF-8 character boundaries."""
    first = body.line_of(span[0])
    for i in range(first, len(body.line_starts)):
        start = body.line_starts[i]
        if start >= span[1]:
            break
        end = min(body.line_starts[i + 1] if i + 1 < len(body.line_starts) else len(body.data), span[1])
        while end - start > limit:
            cut = start + limit
            while (body.data[cut] & 0xC0) == 0x80:  # continuation byte: step back to a char start
                cut -= 1
            yield start, cut
            start = cut
        yield start, end


def _trim(data: bytes, start: int, end: int) -> Span:
    """Drop whitespace-only lines at both edges, keeping the newline of the last content line."""
    while start < end:
        nl = data.find(b"\n", start, end)
        line_end = end if nl == -1 else nl + 1
        if data[start:line_end].strip():
            break
        start = line_end
    if start >= end:
        return start, start
    last = start + len(data[start:end].rstrip())
    nl = data.find(b"\n", last, end)
    return start, end if nl == -1 else nl + 1


def _overlap_start(body: _Body, start: int, end: int, lowest: int, limits: _Limits) -> int:
    """Start up to `overlap` bytes earlier, at a line start, within the hard limit and not before
    `lowest` (just after the previous chunk's start, so the section and chunk order are kept)."""
    floor = max(start - limits.overlap, end - limits.hard, lowest)
    i = bisect_left(body.line_starts, floor)
    if i < len(body.line_starts) and body.line_starts[i] < start:
        new_start, _ = _trim(body.data, body.line_starts[i], end)
        return min(new_start, start)
    return start
