from __future__ import annotations

import pytest

from rag.errors import InputError
from rag.ingest.chunk import Chunk, chunk_markdown, chunk_plain_text
from rag.ingest.parse import normalise_line_endings, parse_document


def assert_slices_back(file_text: str, chunks: list[Chunk]) -> None:
    data = normalise_line_endings(file_text).encode()  # positions are in the normalised text
    for c in chunks:
        assert data[c.start_byte:c.end_byte].decode() == c.text
        assert c.start_line == data[:c.start_byte].count(b"\n") + 1
        assert c.end_line == data[:c.end_byte - 1].count(b"\n") + 1


def chunk_file(file_text: str, **kw: int) -> list[Chunk]:
    doc = parse_document(file_text, "x.md")
    result = chunk_markdown(doc.body(file_text), body_start_line=doc.body_start_line,
                            body_start_byte=doc.body_start_byte, **kw)
    assert_slices_back(file_text, result.chunks)
    return result.chunks


DOC = """---
title: Demo
tags: [a]
---
Preamble before any heading.

# Alpha

Alpha text.

## Beta

```python
# a comment, not a heading
print("hi")
```

### Gamma
Gamma text.

## Delta

Delta text.

# Epsilon
Setext
------
last line"""


def test_heading_paths_and_offsets_relative_to_whole_file() -> None:
    chunks = chunk_file(DOC)
    assert [(c.heading_path, c.text.split("\n")[0]) for c in chunks] == [
        ("", "Preamble before any heading."),
        ("# Alpha", "# Alpha"),
        ("# Alpha > ## Beta", "## Beta"),
        ("# Alpha > ## Beta > ### Gamma", "### Gamma"),
        ("# Alpha > ## Delta", "## Delta"),
        ("# Epsilon", "# Epsilon"),
        ("# Epsilon > ## Setext", "Setext"),
    ]
    assert [c.ordinal for c in chunks] == list(range(7))
    assert chunks[0].start_line == 5  # after 4 frontmatter lines
    assert chunks[0].text == "Preamble before any heading.\n"  # trailing blank line trimmed
    assert "# a comment, not a heading" in chunks[2].text
    assert chunks[-1].text == "Setext\n------\nlast line"


def test_small_soft_limit_packs_blocks_within_a_section() -> None:
    text = "# H\n\n" + "\n\n".join(f"para {i} " + "x" * 20 for i in range(6)) + "\n"
    chunks = chunk_file(text, soft_bytes=70, hard_bytes=200)
    assert all(c.heading_path == "# H" for c in chunks)
    assert chunks[0].text.startswith("# H\n\npara 0")
    assert all(len(c.text.encode()) <= 70 for c in chunks[1:])
    assert len(chunks) > 2
    joined = "".join(c.text for c in chunks)
    for i in range(6):
        assert joined.count(f"para {i} ") == 1


def test_heading_takes_the_next_block_along_up_to_hard() -> None:
    text = "# Title\n\n" + "y" * 60 + "\n"
    [chunk] = chunk_file(text, soft_bytes=40, hard_bytes=100)
    assert chunk.text == text


def test_oversized_block_split_at_lines_and_long_line_at_char_boundaries() -> None:
    para = "\n".join("é" * 30 for _ in range(10))  # 61-byte lines, one 610-byte paragraph
    long_line = "漢😀" * 100  # 700 bytes, no newline
    text = f"{para}\n\n{long_line}\n"
    chunks = chunk_file(text, soft_bytes=128, hard_bytes=256)
    assert all(len(c.text.encode()) <= 256 for c in chunks)
    para_chunks = [c for c in chunks if c.text.startswith("é")]
    assert all(c.text.endswith("\n") for c in para_chunks)  # cut at line ends
    assert "".join(c.text for c in chunks if "漢" in c.text or "😀" in c.text).rstrip("\n") == long_line


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_cr_documents(newline: str) -> None:
    text = "# A\n\nline one\n\n## B\n\nline two\n".replace("\n", newline)
    chunks = chunk_file(text)
    assert [c.heading_path for c in chunks] == ["# A", "# A > ## B"]
    assert chunks[0].text == "# A\n\nline one\n"  # stored with line endings normalised
    assert (chunks[1].start_line, chunks[1].end_line) == (5, 7)  # the lines an editor shows


def test_overlap_shares_bytes_within_a_section_only() -> None:
    lines = [f"line {i:02d} " + "z" * 10 for i in range(12)]
    text = "# S\n" + "\n".join(lines) + "\n# T\nnext section\n"
    plain = chunk_file(text, soft_bytes=60, hard_bytes=100)
    over = chunk_file(text, soft_bytes=60, hard_bytes=100, overlap_bytes=25)
    assert len(plain) == len(over)
    s_chunks = [c for c in over if c.heading_path == "# S"]
    for prev, cur in zip(s_chunks, s_chunks[1:], strict=False):
        assert cur.start_byte < prev.end_byte  # shared range
        assert prev.end_byte - cur.start_byte <= 25
        assert cur.text.split("\n")[0] in prev.text
    assert all(len(c.text.encode()) <= 100 for c in over)
    t_chunk = next(c for c in over if c.heading_path == "# T")
    assert t_chunk.text == "# T\nnext section\n"  # never reaches back into "# S"


def test_max_chunks_truncates_and_flags() -> None:
    text = "\n\n".join(f"# H{i}\nbody {i}" for i in range(10))
    result = chunk_markdown(text, max_chunks=4)
    assert result.truncated and result.total == 10
    assert [c.heading_path for c in result.chunks] == ["# H0", "# H1", "# H2", "# H3"]
    assert not chunk_markdown(text, max_chunks=10).truncated


def test_whitespace_only_and_empty_documents() -> None:
    assert chunk_markdown("").chunks == []
    assert chunk_markdown("  \n\n\t\n").chunks == []
    assert chunk_plain_text("\n \n").chunks == []


def test_nested_heading_in_blockquote_and_list_is_not_a_section() -> None:
    text = "# Top\n\n> # quoted\n\n- # listed\n- item\n"
    chunks = chunk_markdown(text).chunks
    assert [c.heading_path for c in chunks] == ["# Top"]


def test_reference_definitions_are_kept() -> None:
    text = "# A\n\n[ref]: https://example.com\n\ntext\n"
    assert "[ref]: https://example.com" in "".join(c.text for c in chunk_markdown(text).chunks)


def test_plain_text_blank_line_blocks() -> None:
    text = "first para\nstill first\n\n\nsecond # not heading\n\nthird\n"
    chunks = chunk_plain_text(text, soft_bytes=25, hard_bytes=60, body_start_line=2, body_start_byte=7)
    assert [c.text for c in chunks.chunks] == ["first para\nstill first\n", "second # not heading\n", "third\n"]
    assert all(c.heading_path == "" for c in chunks.chunks)
    assert [(c.start_line, c.start_byte) for c in chunks.chunks] == [(3, 7), (7, 7 + 25), (9, 7 + 47)]
    assert_slices_back("x\n" + "abcd\n" + text, chunks.chunks)


def test_hard_limit_must_fit_one_character() -> None:
    with pytest.raises(InputError, match="hard_bytes"):
        chunk_markdown("x", hard_bytes=3)
