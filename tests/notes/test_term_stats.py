"""`ragpg_query_term_stats` (via rag.retrieval.terms): how common the question's words are, and that a
caller below the top clearance learns nothing about notes it may not read."""

from __future__ import annotations

from rag.access import Scope
from rag.retrieval.terms import query_term_stats


def by_lexeme(stats):
    return {s.lexeme: (s.chunk_frequency, s.chunk_count) for s in stats}


def test_counts_chunks_holding_each_query_word(conn, notes):
    notes.note("work", "a.md", [("# A", "Zebras graze near the river.")])
    notes.note("work", "b.md", [("# B", "The river floods in spring.")])
    stats = by_lexeme(query_term_stats(conn, "Where do zebras and giraffes live by the river?", ["work"]))
    assert stats == {"zebra": (1, 2), "giraff": (0, 2), "river": (2, 2), "live": (0, 2)}


def test_restricted_notes_do_not_count_for_a_caller_without_clearance(conn, notes):
    notes.note("work", "open.md", [("# Open", "The river floods in spring.")])
    notes.note("work", "secret.md", [("# Secret", "Project zebra merges with the river team.")],
               confidentiality="restricted")
    question = "what is project zebra"
    everyone = by_lexeme(query_term_stats(conn, question, ["work"]))
    public = by_lexeme(query_term_stats(conn, question, ["work"], Scope(clearance="public").readable_levels()))
    assert everyone["zebra"] == (1, 2)  # the full-clearance view sees the restricted note
    assert public["zebra"] == (0, 1) and public["project"] == (0, 1)  # the public one does not, even its size
    assert Scope(clearance="restricted").readable_levels() is None
