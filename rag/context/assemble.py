"""Context assembly: ranked chunks → one prompt context under a token budget, with citations.

Chunks are taken greedily in rank order. Each one either
- joins a block of its own document it overlaps or touches (byte offsets decide when both sides
  have offsets that match their text; otherwise consecutive ordinals do, and the longest
  suffix/prefix text overlap is spliced out) — one continuous block, no repeated text; a chunk
  can bridge two blocks into one;
- is dropped as a duplicate when the same normalised text from another place is already in;
- or starts a new block.
The change is kept only if the whole rendered context (headers, separators and all) still counts
at most `budget_tokens` with `rag.tokens.count_tokens` — exactly, from per-block counts that add
up (see `_Fill.total`), with each chunk's text counted once at index time; otherwise the chunk is
dropped as over budget and later, smaller chunks may still fit. Blocks appear in the order of their best rank.
A dropped chunk whose text ends up inside a block of its own document anyway (neighbours grew the
block later) is cited after all, so "text in the context" and "cited" stay the same thing.

Every chunk in a block is cited (one Citation per block; the marker `S<n>` names the document,
so blocks of one document share it). A block's first line renders its citation: `[S1] Title — Heading ›
Path (lines 3-9)` for a chat backend (a PDF's block says its page, `(p. 3)`, a canvas's its card; rag.places), or the notes prompt's `[File: name.md, Section: ...]` (`header`). `insufficient` is true when no block fits (or nothing was
ranked): an empty context is a result, not an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag.arguments import token_budget
from rag.obsidian import render_text
from rag.places import location, shown_heading
from rag.tokens import count_tokens, framed_counts, tokenizer
from rag.types import RankedChunk, Record

BLOCK_SEPARATOR = "\n\n"
GAP_JOIN = "\n\n"  # a blank line between consecutive chunks whose text does not touch (layout only)
MIN_TEXT_OVERLAP_CHARS = 16  # shorter suffix/prefix matches are taken as coincidence, not overlap
MARKER_PREFIX = "S"
TITLE_KEY = "title"
URL_KEY = "url"

DROP_OVER_BUDGET = "over_budget"
DROP_DUPLICATE = "duplicate"
DROP_EMPTY = "empty"


class Citation(Record):
    """One block of the context: the document it quotes (`marker` names the document), where in it
    (the first chunk's heading path, stored and as the reader sees it in `heading`; the lines; `location`,
    the page of a PDF, the card of a canvas, else the lines, in words), and every chunk whose text the
    block holds."""

    marker: str
    vault: str
    source_path: str
    title: str | None
    url: str | None
    heading_path: str
    heading: str
    start_line: int | None
    end_line: int | None
    location: str | None
    chunk_refs: tuple[str, ...]
    ordinals: tuple[int, ...]


@dataclass(frozen=True)
class Block:
    marker: str
    header: str
    text: str
    chunks: tuple[RankedChunk, ...]  # document order
    citation: Citation

    @property
    def rendered(self) -> str:
        return f"{self.header}\n{self.text}"


@dataclass(frozen=True)
class Dropped:
    chunk: RankedChunk
    reason: str  # DROP_OVER_BUDGET | DROP_DUPLICATE | DROP_EMPTY
    duplicate_of: str | None = None  # ref of the kept chunk with the same text


@dataclass(frozen=True)
class AssembledContext:
    text: str
    blocks: tuple[Block, ...]
    citations: tuple[Citation, ...]
    used_tokens: int
    insufficient: bool
    dropped: tuple[Dropped, ...]
    budget_tokens: int

    def block_of(self, ref: str) -> Block | None:
        return next((b for b in self.blocks if any(r.candidate.ref == ref for r in b.chunks)), None)


# -- spans: a run of one document's text built from one or more chunks ------------------------------

@dataclass(frozen=True)
class _Span:
    vault: str
    source_path: str
    chunks: tuple[RankedChunk, ...]
    text: str
    start_byte: int | None  # None once the text no longer equals one byte range of the source
    end_byte: int | None
    lo: int  # smallest ordinal
    hi: int  # largest ordinal
    first_rank: int

    @property
    def doc(self) -> tuple[str, str]:
        return (self.vault, self.source_path)


def _has_offsets(r: RankedChunk) -> bool:
    c = r.candidate
    return (c.start_byte is not None and c.end_byte is not None
            and len(c.content.encode("utf-8")) == c.end_byte - c.start_byte)


def _single(r: RankedChunk) -> _Span:
    c, offsets = r.candidate, _has_offsets(r)
    return _Span(c.vault, c.source_path, (r,), c.content, c.start_byte if offsets else None,
                 c.end_byte if offsets else None, c.ordinal, c.ordinal, r.rank)


def text_overlap(a: str, b: str, min_chars: int = MIN_TEXT_OVERLAP_CHARS) -> int:
    """Length of the longest suffix of `a` that is a prefix of `b` (0 below `min_chars`)."""
    if min(len(a), len(b)) < min_chars:
        return 0
    probe = b[:min_chars]
    pos = a.find(probe, max(0, len(a) - len(b)))
    while pos != -1:
        if b.startswith(a[pos:]):
            return len(a) - pos
        pos = a.find(probe, pos + 1)
    return 0


def _gap_join(a: str, b: str) -> str:
    """`a`, then `b` after a blank line (no more newlines than that: chunks often end with one)."""
    trailing = len(a) - len(a.rstrip("\n"))
    return a + GAP_JOIN[min(trailing, len(GAP_JOIN)):] + b


def _splice_bytes(a: _Span, b: _Span) -> str | None:
    """`a` starts first and `b` overlaps or touches it: a's text plus b's bytes past a's end."""
    assert a.start_byte is not None and a.end_byte is not None and b.start_byte is not None
    assert b.end_byte is not None
    tail = b.text.encode("utf-8")[a.end_byte - b.start_byte:] if b.end_byte > a.end_byte else b""
    try:
        return a.text + tail.decode("utf-8")
    except UnicodeDecodeError:  # offsets that do not cut at character boundaries are not trusted
        return None


def _combined(a: _Span, b: _Span, text: str, offsets: bool) -> _Span:
    chunks = tuple(sorted((*a.chunks, *b.chunks), key=lambda r: (r.candidate.ordinal, r.rank)))
    return _Span(a.vault, a.source_path, chunks, text,
                 a.start_byte if offsets else None,
                 max(a.end_byte or 0, b.end_byte or 0) if offsets else None,
                 min(a.lo, b.lo), max(a.hi, b.hi), min(a.first_rank, b.first_rank))


def _join_by_bytes(a: _Span, b: _Span) -> _Span | None:
    assert a.start_byte is not None and b.start_byte is not None
    if b.start_byte < a.start_byte:
        a, b = b, a
    assert a.end_byte is not None and b.start_byte is not None  # the swap forgets the check above
    if b.start_byte <= a.end_byte:
        text = _splice_bytes(a, b)
        return _combined(a, b, text, offsets=True) if text is not None else None
    if b.lo == a.hi + 1:  # consecutive chunks with a layout gap between them
        return _combined(a, b, _gap_join(a.text, b.text), offsets=False)
    return None


def _join_by_ordinals(a: _Span, b: _Span) -> _Span | None:
    if b.lo < a.lo:
        a, b = b, a
    if b.lo == a.hi + 1:
        cut = text_overlap(a.text, b.text)
        return _combined(a, b, a.text + b.text[cut:] if cut else _gap_join(a.text, b.text), offsets=False)
    if b.lo <= a.hi and b.text in a.text:  # already inside (e.g. a chunk without offsets in a spliced block)
        return replace(_combined(a, b, a.text, offsets=False), start_byte=a.start_byte, end_byte=a.end_byte)
    return None


def _join(a: _Span, b: _Span) -> _Span | None:
    """One span when `a` and `b` (same document) overlap or are adjacent, else None."""
    if a.doc != b.doc:
        return None
    if a.start_byte is not None and b.start_byte is not None:
        return _join_by_bytes(a, b)
    return _join_by_ordinals(a, b)


def _absorb(spans: Sequence[_Span], new: _Span) -> tuple[list[_Span], _Span | None]:
    """Merge `new` into the spans of its document, bridging as needed (repeat until nothing joins).
    Returns the new list and the first span it joined (None when it starts a span of its own)."""
    merged, joined, rest = new, None, list(spans)
    changed = True
    while changed:
        changed, keep = False, []
        for span in rest:
            combined = _join(merged, span)
            if combined is None:
                keep.append(span)
            else:
                merged, joined, changed = combined, joined or span, True
        rest = keep
    return sorted([*rest, merged], key=lambda s: s.first_rank), joined


# -- rendering ----------------------------------------------------------------------------------

def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def _meta(span: _Span) -> Mapping[str, Any]:
    return span.chunks[0].candidate.metadata or {}


def _lines(span: _Span) -> tuple[int | None, int | None]:
    starts = [r.candidate.start_line for r in span.chunks if r.candidate.start_line is not None]
    ends = [r.candidate.end_line for r in span.chunks if r.candidate.end_line is not None]
    return (min(starts) if starts else None, max(ends) if ends else None)


def _citation(span: _Span, marker: str) -> Citation:
    meta, (start, end) = _meta(span), _lines(span)
    title = _one_line(meta[TITLE_KEY]) if meta.get(TITLE_KEY) else None
    url = str(meta[URL_KEY]) if meta.get(URL_KEY) else None
    first = span.chunks[0].candidate
    return Citation(marker=marker, vault=span.vault, source_path=span.source_path, title=title, url=url,
                    heading_path=first.heading_path, heading=shown_heading(span.source_path, first.heading_path),
                    start_line=start, end_line=end,
                    location=location(span.source_path, [r.candidate.heading_path for r in span.chunks], start, end),
                    chunk_refs=tuple(r.candidate.ref for r in span.chunks),
                    ordinals=tuple(r.candidate.ordinal for r in span.chunks))


Header = Callable[[Citation], str]  # a block's first line, naming its source; starts with "[" (see _Fill.total)


def marker_header(cit: Citation) -> str:
    """`[S1] Title — Heading › Path (lines 3-9)`: the chat context's header (`(p. 3)` in a PDF)."""
    head = f"[{cit.marker}] {cit.title or cit.source_path}"
    if cit.heading.strip():
        head += f" — {_one_line(cit.heading)}"
    if cit.location:
        head += f" ({cit.location})"
    return head


def _block(span: _Span, marker: str, header: Header) -> Block:
    cit = _citation(span, marker)
    # the passage as its reader sees it (links by their words, markup gone); lines are the note's
    return Block(cit.marker, header(cit), render_text(span.text), span.chunks, cit)



def _render(blocks: Sequence[Block]) -> str:
    return BLOCK_SEPARATOR.join(b.rendered for b in blocks)


# -- greedy fill ----------------------------------------------------------------------------------

def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass
class _Fill:
    budget: int
    header: Header
    spans: list[_Span] = field(default_factory=list)
    markers: dict[tuple[str, str], str] = field(default_factory=dict)
    kept_text: dict[str, str] = field(default_factory=dict)  # normalised content → ref of the kept chunk
    dropped: list[Dropped] = field(default_factory=list)
    block_tokens: dict[str, tuple[int, int]] = field(default_factory=dict)  # rendered block → counts
    block_cache: dict[tuple[int, str], tuple[_Span, Block]] = field(default_factory=dict)  # keeps its spans alive

    def block_counts(self, b: Block) -> tuple[int, int]:
        """Exact tokens of the block alone and of the block followed by the separator. A block
        that is one chunk's unchanged text reuses the count made at index time: only its edges
        are encoded again (rag.tokens.count_framed)."""
        counts = self.block_tokens.get(b.rendered)
        if counts is None:
            c = b.chunks[0].candidate if len(b.chunks) == 1 else None
            known = c is not None and bool(c.token_count) and b.text == c.content
            body_tokens = c.token_count if known and c is not None and c.token_count else count_tokens(b.text)
            head = b.header + "\n"
            alone, followed = framed_counts(head, b.text, body_tokens, ("", BLOCK_SEPARATOR))
            counts = (alone, followed)
            self.block_tokens[b.rendered] = counts
        return counts

    def total(self, blocks: Sequence[Block]) -> int:
        """count_tokens(_render(blocks)), exactly, from per-block counts: every header starts with
        "[", where no tokenizer piece begins before the separator, so the counts add up."""
        if not blocks:
            return 0
        if tokenizer().encoding is None or not all(b.header.startswith("[") for b in blocks):
            return count_tokens(_render(blocks))  # the byte estimate rounds up per text: it does not add up
        return sum(self.block_counts(b)[1] for b in blocks[:-1]) + self.block_counts(blocks[-1])[0]

    def fits(self, spans: Sequence[_Span], markers: Mapping[tuple[str, str], str]) -> bool:
        return self.total(self.blocks(spans, markers)) <= self.budget

    def blocks(self, spans: Sequence[_Span], markers: Mapping[tuple[str, str], str]) -> tuple[Block, ...]:
        # Every try re-renders the whole context; a span that did not change keeps its block.
        out = []
        for span in spans:
            key = (id(span), markers[span.doc])
            hit = self.block_cache.get(key)
            if hit is None or hit[0] is not span:
                hit = self.block_cache[key] = (span, _block(span, key[1], self.header))
            out.append(hit[1])
        return tuple(out)

    def try_add(self, r: RankedChunk) -> None:
        norm = _normalised(r.candidate.content)
        if not norm:
            self.dropped.append(Dropped(r, DROP_EMPTY))
            return
        spans, joined = _absorb(self.spans, _single(r))
        inside = joined is not None and r.candidate.content in joined.text
        if not inside and norm in self.kept_text:
            self.dropped.append(Dropped(r, DROP_DUPLICATE, self.kept_text[norm]))
            return
        doc, markers = (r.candidate.vault, r.candidate.source_path), self.markers
        if doc not in markers:
            markers = {**markers, doc: f"{MARKER_PREFIX}{len(markers) + 1}"}
        if not self.fits(spans, markers):
            self.dropped.append(Dropped(r, DROP_OVER_BUDGET))
            return
        self.spans, self.markers = spans, markers
        self.kept_text.setdefault(norm, r.candidate.ref)

    def sweep(self) -> None:
        """Cite dropped chunks whose whole text ended up inside a block of their own document anyway
        (blocks grown later by neighbours): their text is in the context, so they must be cited."""
        remaining = []
        for d in self.dropped:
            if d.reason == DROP_EMPTY or not self._attach_if_inside(d.chunk):
                remaining.append(d)
        self.dropped = remaining

    def _attach_if_inside(self, r: RankedChunk) -> bool:
        for i, span in enumerate(self.spans):
            combined = _join(span, _single(r))
            if combined is None or combined.text != span.text:
                continue
            # The block keeps its place: only chunks that brought text decide the order.
            spans = [*self.spans[:i], replace(combined, first_rank=span.first_rank), *self.spans[i + 1:]]
            if self.fits(spans, self.markers):
                self.spans = spans
                return True
        return False


def _fill(ranked: Sequence[RankedChunk], budget: int, header: Header) -> _Fill:
    fill = _Fill(budget, header)
    for r in sorted(ranked, key=lambda item: item.rank):
        fill.try_add(r)
    fill.sweep()
    return fill


def assemble_context(ranked: Sequence[RankedChunk], *, budget_tokens: int,
                     header: Header = marker_header) -> AssembledContext:
    """Blocks are the candidates' text, stored secret-masked by the indexer. `header` renders each
    block's citation as its first line (the chat context's `[S1] ...`, or the notes prompt's
    `[File: name.md, Section: ...]`); the budget counts it."""
    token_budget("assemble_context", "budget_tokens", budget_tokens)
    fill = _fill(ranked, budget_tokens, header)
    blocks = fill.blocks(fill.spans, fill.markers)
    text, used = _render(blocks), fill.total(blocks)
    return AssembledContext(text=text, blocks=blocks, citations=tuple(b.citation for b in blocks),
                            used_tokens=used, insufficient=not blocks, dropped=tuple(fill.dropped),
                            budget_tokens=budget_tokens)
