"""rag.retrieval.documents: a note's passages read back from the index (never from disk), scoped in
SQL like a chunk fetch, and the notes a scope may list."""

from __future__ import annotations

import psycopg
import pytest

from rag.access import Scope
from rag.errors import AuthError, InputError, NotFoundError
from rag.retrieval.chunks import get_chunk
from rag.retrieval.documents import list_notes, read_passages
from tests.mcp.conftest import PUBLIC_MARK, RESTRICTED_MARK, Corpus

PUBLIC = Scope(clearance="public")


def test_passages_come_in_order_with_their_lines(conn: psycopg.Connection, corpus: Corpus) -> None:
    note = read_passages(conn, "garden", "tomatoes.md")
    assert note.title == "Tomatoes"
    assert [p.start_line for p in note.passages] == [1, 5, 9]
    assert [p.end_line for p in note.passages] == [3, 7, 11]
    assert PUBLIC_MARK in note.passages[0].content and "## Harvest" in note.passages[2].content


def test_a_line_range_keeps_only_the_passages_it_overlaps(conn: psycopg.Connection, corpus: Corpus) -> None:
    assert [p.start_line for p in read_passages(conn, "garden", "tomatoes.md", start_line=6).passages] == [5, 9]
    assert [p.start_line for p in read_passages(conn, "garden", "tomatoes.md", end_line=5).passages] == [1, 5]
    assert [p.start_line for p in read_passages(conn, "garden", "tomatoes.md", start_line=7,
                                                end_line=7).passages] == [5]
    with pytest.raises(NotFoundError, match="no note garden/tomatoes.md in lines 40-end"):
        read_passages(conn, "garden", "tomatoes.md", start_line=40)


def test_a_restricted_note_is_not_found_for_a_public_scope(conn: psycopg.Connection, corpus: Corpus) -> None:
    assert RESTRICTED_MARK in read_passages(conn, "garden", "plans/secret.md").passages[0].content
    with pytest.raises(NotFoundError) as hidden:
        read_passages(conn, "garden", "plans/secret.md", scope=PUBLIC)
    with pytest.raises(NotFoundError) as absent:
        read_passages(conn, "garden", "plans/nothing.md", scope=PUBLIC)
    # the same sentence whether the note is hidden or absent
    assert str(hidden.value).replace("secret", "X") == str(absent.value).replace("nothing", "X")


def test_a_vault_outside_the_scope_is_refused(conn: psycopg.Connection, corpus: Corpus) -> None:
    with pytest.raises(AuthError, match="may not read vault 'garden'"):
        read_passages(conn, "garden", "tomatoes.md", scope=Scope(vaults=("work",)))


@pytest.mark.parametrize(("path", "lines", "message"), [
    ("../work/meeting.md", {}, "path traversal"),
    ("/etc/passwd", {}, "relative to the vault root"),
    ("tomatoes.md", {"start_line": 0}, "start_line must be a whole number from 1 to 2147483647, got 0"),
    ("tomatoes.md", {"start_line": 5, "end_line": 2}, r"end_line \(2\) is before start_line \(5\)"),
    # issue 47: a line number beyond PostgreSQL's integer was "database error: integer out of range"
    pytest.param("tomatoes.md", {"end_line": 10**30}, "end_line must be a whole number from 1 to 2147483647, "
                 "got 'a larger number'", marks=pytest.mark.security),
    pytest.param("tomatoes.md", {"start_line": 2**31}, "start_line must be", marks=pytest.mark.security),
])
def test_bad_input(conn: psycopg.Connection, corpus: Corpus, path: str, lines: dict[str, int], message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_passages(conn, "garden", path, **lines)


def test_listing_keeps_to_the_scope_and_pages(conn: psycopg.Connection, corpus: Corpus) -> None:
    every = [(n.vault, n.source_path) for n in list_notes(conn, limit=10)]
    assert every == [("garden", "plans/roadmap.md"), ("garden", "plans/secret.md"), ("garden", "tomatoes.md"),
                     ("work", "meeting.md")]
    public = [(n.vault, n.source_path) for n in list_notes(conn, scope=PUBLIC, limit=10)]
    assert public == [("garden", "tomatoes.md"), ("work", "meeting.md")]
    first = list_notes(conn, limit=2)
    rest = list_notes(conn, limit=10, after=(first[-1].vault, first[-1].source_path))
    assert [(n.vault, n.source_path) for n in [*first, *rest]] == every
    assert [n.vault for n in list_notes(conn, scope=Scope(vaults=("work",)), limit=10)] == ["work"]
    with pytest.raises(AuthError):
        list_notes(conn, scope=Scope(vaults=("work",)), vaults=["garden"], limit=10)


@pytest.mark.security
@pytest.mark.parametrize("level", [None, "secret", ""])
def test_a_passage_whose_own_level_cannot_be_read_is_restricted(conn: psycopg.Connection, corpus: Corpus,
                                                                level: str | None) -> None:
    """The scope's check in these reads is the rule row-level security applies (`ragpg_chunk_readable`):
    a passage whose own level is missing or unknown reads as restricted, not as its note's level."""
    own = "metadata - 'confidentiality'" if level is None else "jsonb_set(metadata, '{confidentiality}', to_jsonb(%s::text))"
    conn.execute(f"update chunks set metadata = {own} where ordinal = 1 and document_id = "  # noqa: S608 - fixed text
                 "(select id from documents where source_path = 'tomatoes.md')", () if level is None else (level,))
    conn.commit()
    assert [p.ordinal for p in read_passages(conn, "garden", "tomatoes.md").passages] == [0, 1, 2]
    assert [p.ordinal for p in read_passages(conn, "garden", "tomatoes.md", scope=PUBLIC).passages] == [0, 2]
    with pytest.raises(NotFoundError):
        get_chunk(conn, "garden", "tomatoes.md", 1, scope=PUBLIC)
    assert get_chunk(conn, "garden", "tomatoes.md", 2, scope=PUBLIC).ordinal == 2
    assert get_chunk(conn, "garden", "tomatoes.md", 1).ordinal == 1  # the top clearance reads it
