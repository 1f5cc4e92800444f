"""Questions that join topics (`rag.retrieval.facets.split_facets`): which split into facets, which
stay whole. The effect on ranking is tested through notes search in tests/notes/test_pipeline.py."""

from __future__ import annotations

import pytest

from rag.retrieval.facets import MAX_FACETS, split_facets


@pytest.mark.parametrize(("question", "facets"), [
    ("How do I sync my vault across devices and how do I publish my notes as a website?",
     ["How do I sync my vault across devices", "how do I publish my notes as a website"]),
    ("install community plugins and also update the installed themes",
     ["install community plugins", "update the installed themes"]),
    ("How do I back up my vault; how do I restore deleted notes?",
     ["How do I back up my vault", "how do I restore deleted notes"]),
    ("Export the vault to PDF, then print the exported file", ["Export the vault to PDF", "print the exported file"]),
    ("How do I sync my vault versus how do I back up my vault?",
     ["How do I sync my vault", "how do I back up my vault"]),
], ids=["and", "and-also", "semicolon", "then", "versus"])
def test_two_topic_questions_split(question, facets):
    assert split_facets(question) == facets


@pytest.mark.parametrize(("question", "facets"), [
    ("Compare Obsidian Sync with Obsidian Publish", ["Obsidian Sync", "Obsidian Publish"]),
    ("compare sync pricing to publish pricing", ["sync pricing", "publish pricing"]),
    ("What is the difference between daily notes and weekly notes?", ["What is the daily notes", "weekly notes"]),
])
def test_compare_x_with_y_splits(question, facets):
    # (the removed "difference between" leaves its spaces inside a facet: compared word by word)
    assert [" ".join(f.split()) for f in split_facets(question)] == facets


@pytest.mark.parametrize("question", [
    "How are notes and folders sorted?",             # a short join: one topic with two words
    "What is salt and pepper?",
    "Compare tags and properties",                   # each side a single word
    "How do I sync my vault across devices and why?",  # the tail is too small to stand alone
    "How do I sync my vault across devices?",        # no joiner at all
    "sync vs publish",
    "",
])
def test_short_joins_and_single_topics_stay_whole(question):
    assert split_facets(question) == []


def test_min_terms_decides_what_is_substantial():
    assert split_facets("How are notes and folders sorted?", min_terms=1) == ["How are notes", "folders sorted"]
    assert split_facets("install community plugins and also update the installed themes", min_terms=4) == []


def test_a_small_side_joins_its_neighbour():
    # "then images" has one content word: it stays with the facet before it
    assert split_facets("rename linked notes and move attachment folders then images") == [
        "rename linked notes", "move attachment folders images"]
    # a small first side joins the second
    assert split_facets("links and how do I rename linked notes and move attachment folders") == [
        "links how do I rename linked notes", "move attachment folders"]


def test_at_most_max_facets():
    question = "embed audio files and embed video files and embed pdf files and embed image files"
    assert MAX_FACETS == 3
    assert split_facets(question) == ["embed audio files", "embed video files", "embed pdf files"]
    assert split_facets(question, max_facets=2) == ["embed audio files", "embed video files"]
