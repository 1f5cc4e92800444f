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


def test_names_the_given_chunks_that_hold_each_word_by_postgres_analysis(conn, notes):
    """The passages are compared with the question by the analyzer that indexed them (no Python stemmer
    guessing at Postgres' lexemes): "libraries" holds "library"'s lexeme, "Synchronization" does not
    hold "sync" though it starts with it, and a chunk's heading counts."""
    [plural] = notes.note("work", "a.md", [("# Storage", "Your libraries stay on this device.")])
    [longer] = notes.note("work", "b.md", [("# Settings", "Synchronization runs hourly.")])
    [heading] = notes.note("work", "c.md", [("# Sync", "Runs hourly.")])
    stats = {s.lexeme: s.in_chunks for s in query_term_stats(conn, "sync my library", ["work"],
                                                               chunk_ids=[plural, longer, heading])}
    assert stats == {"sync": [heading], "librari": [plural]}
    assert all(s.in_chunks == [] for s in query_term_stats(conn, "sync my library", ["work"]))
