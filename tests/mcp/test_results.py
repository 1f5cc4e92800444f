"""The adapter from the library's results to the tools' output: note URIs, a note's text laid out
from its stored passages, and where a long note is cut."""

from __future__ import annotations

import pytest

from rag.errors import InputError
from rag.retrieval.documents import NotePassages, Passage
from ragpg_server.mcp_results import joined_text, note_text, note_uri, parse_note_uri


@pytest.mark.parametrize("path", ["a.md", "deep/er/note.md", "with space #1?.md", "ünïcode/ñ.md", "100%.md"])
def test_a_note_uri_round_trips(path: str) -> None:
    uri = note_uri("my-vault.2", path)
    assert uri.startswith("ragpg://my-vault.2/") and " " not in uri and "#" not in uri and "?" not in uri
    assert parse_note_uri(uri) == ("my-vault.2", path)


@pytest.mark.parametrize("uri", ["ragpg://vault", "ragpg://vault/", "file:///etc/passwd", "ragpg:///a.md",
                                 "ragpg://vault/a.md?x=1", "ragpg://vault/a.md#top", "https://vault/a.md"])
def test_anything_else_is_not_a_note_uri(uri: str) -> None:
    with pytest.raises(InputError, match="not a note URI"):
        parse_note_uri(uri)


def _p(ordinal: int, text: str, start: int, end: int, heading: str = "# A") -> Passage:
    return Passage(ordinal, heading, text, start, end)


def test_the_text_keeps_the_file_s_blank_lines_and_reads_an_overlap_once() -> None:
    gap = [_p(0, "# A\n\nintro\n", 1, 3), _p(1, "## B\n\nbody", 6, 8)]
    assert joined_text(gap) == "# A\n\nintro\n\n\n## B\n\nbody\n"
    overlap = [_p(0, "one\ntwo\nthree\n", 1, 3), _p(1, "three\nfour\n", 3, 4)]
    assert joined_text(overlap) == "one\ntwo\nthree\nfour\n"


def test_a_long_note_is_cut_between_whole_passages_never_before_the_first() -> None:
    note = NotePassages("v", "n.md", "N", [_p(0, "x" * 50, 1, 1), _p(1, "y" * 50, 3, 3), _p(2, "z" * 10, 5, 5)])
    cut = note_text(note, max_chars=60)
    assert (cut.text, cut.truncated, cut.next_start_line, cut.end_line) == ("x" * 50 + "\n", True, 3, 1)
    assert note_text(note, max_chars=10).text == "x" * 50 + "\n"  # one passage even when it is longer
    whole = note_text(note, max_chars=1000)
    assert not whole.truncated and whole.next_start_line is None and [s.ordinal for s in whole.sections] == [0, 1, 2]
