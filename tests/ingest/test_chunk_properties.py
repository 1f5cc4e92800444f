"""Property tests: whatever the markdown, chunks slice back exactly and respect the limits."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.ingest.chunk import Chunk, chunk_markdown, chunk_plain_text
from rag.ingest.parse import normalise_line_endings, parse_document

WORD_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789éßçø漢字語😀🎉"
FENCE_MARK = "fence-comment"


@dataclass
class Doc:
    text: str
    headings: list[str] = field(default_factory=list)  # "## name" as it must appear in heading_path
    all_fences_closed: bool = True


words = st.text(alphabet=WORD_CHARS, min_size=1, max_size=12)
lines = st.lists(words, min_size=1, max_size=8).map(" ".join)


@st.composite
def documents(draw: st.DrawFn) -> Doc:
    doc = Doc("")
    parts: list[str] = []
    if draw(st.booleans()):
        parts += ["---", f"title: {draw(words)}", "tags: [a, b]", "---"]
    for n in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["heading", "para", "fence", "long", "blank"]))
        if kind == "heading":
            heading = f"{'#' * draw(st.integers(1, 6))} H{n} {draw(words)}"
            doc.headings.append(heading)
            parts.append(heading)
        elif kind == "para":
            parts += draw(st.lists(lines, min_size=1, max_size=4))
        elif kind == "fence":
            marker = draw(st.sampled_from(["```", "~~~", "````"]))
            parts.append(marker + draw(st.sampled_from(["", "python", "sh"])))
            body = draw(st.lists(st.one_of(lines, st.just(f"# {FENCE_MARK} {n}"),
                                           st.just(f"## {FENCE_MARK} deeper {n}")), max_size=6))
            parts += body + [f"# {FENCE_MARK} {n}"]
            if draw(st.integers(0, 9)) == 0:  # occasionally never closed: swallows the rest
                doc.all_fences_closed = False
                break  # (a later fence line would close it)
            parts.append(marker)
        elif kind == "long":
            parts.append(draw(st.text(alphabet=WORD_CHARS + " ", min_size=50, max_size=900)).strip() or "x")
        else:
            parts.append(draw(st.sampled_from(["", "   ", "\t"])))
        if draw(st.booleans()):
            parts.append("")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    doc.text = newline.join(parts) + draw(st.sampled_from(["", newline]))
    return doc


limits = st.tuples(st.integers(4, 300), st.integers(0, 300)).map(lambda t: (t[0], t[0] + t[1]))


def chunk_doc(doc: Doc, soft: int, hard: int, overlap: int) -> tuple[list[Chunk], int]:
    parsed = parse_document(doc.text, "p.md")
    result = chunk_markdown(parsed.body(doc.text), body_start_line=parsed.body_start_line,
                            body_start_byte=parsed.body_start_byte, soft_bytes=soft, hard_bytes=hard,
                            overlap_bytes=overlap, max_chunks=1_000_000)
    assert not result.truncated and result.total == len(result.chunks)
    return result.chunks, parsed.body_start_byte


def check_exact_and_bounded(data: bytes, chunks: list[Chunk], hard: int) -> None:
    newlines = [i for i, b in enumerate(data) if b == 0x0A]
    for i, c in enumerate(chunks):
        assert c.ordinal == i
        assert data[c.start_byte:c.end_byte].decode("utf-8") == c.text
        # line n (1-based) holds the bytes after the (n-1)th newline, up to and including the nth
        assert c.start_line == bisect_left(newlines, c.start_byte) + 1
        assert c.end_line == bisect_left(newlines, c.end_byte - 1) + 1
        assert len(c.text.encode()) <= hard
        assert c.text.strip()
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.start_byte < b.start_byte and a.end_byte < b.end_byte


def check_covers_content(data: bytes, chunks: list[Chunk], body_start: int) -> None:
    covered = bytearray(len(data))
    for c in chunks:
        covered[c.start_byte:c.end_byte] = b"\x01" * (c.end_byte - c.start_byte)
    offset = 0
    for ch in data.decode():
        size = len(ch.encode())
        if offset >= body_start and not ch.isspace():
            assert covered[offset], f"content at byte {offset} ({ch!r}) is in no chunk"
        offset += size


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), lim=limits)
def test_chunks_partition_the_document(doc: Doc, lim: tuple[int, int]) -> None:
    soft, hard = lim
    data = normalise_line_endings(doc.text).encode()  # positions are in the text with line endings normalised
    chunks, body_start = chunk_doc(doc, soft, hard, overlap=0)
    check_exact_and_bounded(data, chunks, hard)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.end_byte <= b.start_byte  # no overlap
    check_covers_content(data, chunks, body_start)
    assert not any(FENCE_MARK in c.heading_path for c in chunks)
    if doc.all_fences_closed:
        for heading in doc.headings:
            # the section's first chunk starts with its heading line (or a piece of it, if it is too long)
            assert any(c.heading_path.endswith(heading) and (c.text.startswith(heading) or heading.startswith(c.text))
                       for c in chunks), heading


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), lim=limits, overlap=st.integers(1, 400))
def test_overlapping_chunks_still_slice_back(doc: Doc, lim: tuple[int, int], overlap: int) -> None:
    soft, hard = lim
    data = normalise_line_endings(doc.text).encode()
    chunks, body_start = chunk_doc(doc, soft, hard, overlap)
    check_exact_and_bounded(data, chunks, hard)
    check_covers_content(data, chunks, body_start)
    plain, _ = chunk_doc(doc, soft, hard, overlap=0)
    assert len(plain) == len(chunks)
    for with_overlap, without in zip(chunks, plain, strict=True):
        assert with_overlap.end_byte == without.end_byte
        assert without.start_byte - overlap <= with_overlap.start_byte <= without.start_byte
        assert with_overlap.heading_path == without.heading_path


@settings(max_examples=80, deadline=None)
@given(doc=documents(), lim=limits, prefix_lines=st.integers(0, 3))
def test_plain_text_chunks(doc: Doc, lim: tuple[int, int], prefix_lines: int) -> None:
    soft, hard = lim
    prefix = "héader\n" * prefix_lines
    data = (prefix + doc.text).encode()
    result = chunk_plain_text(doc.text, body_start_line=prefix_lines, body_start_byte=len(prefix.encode()),
                              soft_bytes=soft, hard_bytes=hard, max_chunks=1_000_000)
    check_exact_and_bounded(data, result.chunks, hard)
    check_covers_content(data, result.chunks, len(prefix.encode()))
    assert all(c.heading_path == "" for c in result.chunks)
