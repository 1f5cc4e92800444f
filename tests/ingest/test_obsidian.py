"""Obsidian markdown rendered as a reader sees it, with its links, tags and block ids (hand-checked)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rag.obsidian import LinkRef, render_note, render_text

RANDOM_NOTE = """---
permalink: plugins/random-note
---
Random note is a [[Core plugins|core plugin]] that opens a random note within your vault.

To open a random note, click **Open random note** ![[obsidian-icon-dice.svg#icon]] in the [[Ribbon]]."""


def test_the_random_note_reads_as_in_obsidian() -> None:
    note = render_note(RANDOM_NOTE)
    lines = note.text.split("\n")
    assert lines[3] == "Random note is a core plugin that opens a random note within your vault."
    assert lines[5] == "To open a random note, click Open random note (the dice icon) in the Ribbon."
    assert note.links == [
        LinkRef("Core plugins", "link", 4, "core plugin"),
        LinkRef("obsidian-icon-dice.svg", "embed", 6, "(the dice icon)", heading="icon"),
        LinkRef("Ribbon", "link", 6, "Ribbon"),
    ]
    assert [link.is_file for link in note.links] == [False, True, False]
    assert "[[" not in note.text and "]]" not in note.text


@pytest.mark.parametrize(("markup", "shown", "link"), [
    ("[[Target]]", "Target", LinkRef("Target", "link", 1, "Target")),
    ("[[Target|alias]]", "alias", LinkRef("Target", "link", 1, "alias")),
    ("[[Target#Heading]]", "Target > Heading", LinkRef("Target", "link", 1, "Target > Heading", heading="Heading")),
    ("[[Target#^b15695]]", "Target", LinkRef("Target", "link", 1, "Target", block="b15695")),
    ("[[#Local heading]]", "Local heading", LinkRef("", "link", 1, "Local heading", heading="Local heading")),
    ("[[Folder/Deep note.md]]", "Deep note", LinkRef("Folder/Deep note.md", "link", 1, "Deep note")),
    ("![[Target]]", "Target", LinkRef("Target", "embed", 1, "Target")),
    ("![[Target#Heading]]", "Target > Heading", LinkRef("Target", "embed", 1, "Target > Heading", heading="Heading")),
    ("![[Engelbart.jpg|100x145]]", "(image: Engelbart)", LinkRef("Engelbart.jpg", "embed", 1, "(image: Engelbart)")),
    ("![[Document.pdf#page=3]]", "(PDF: Document)",
     LinkRef("Document.pdf", "embed", 1, "(PDF: Document)", heading="page=3")),
    ("![[lucide-settings.svg#icon]]", "(the settings icon)",
     LinkRef("lucide-settings.svg", "embed", 1, "(the settings icon)", heading="icon")),
    ("[three laws](Projects/Three%20laws%20of%20motion.md)", "three laws",
     LinkRef("Projects/Three laws of motion.md", "link", 1, "three laws", markdown=True)),
    ("[a heading](Example.md#Some%20heading)", "a heading",
     LinkRef("Example.md", "link", 1, "a heading", heading="Some heading", markdown=True)),
    ("| [[Highlighter\\|the highlighter]] |", "| the highlighter |",
     LinkRef("Highlighter", "link", 1, "the highlighter")),
])
def test_each_link_form(markup: str, shown: str, link: LinkRef) -> None:
    note = render_note(markup)
    assert note.text == shown
    assert note.links == [link]


def test_web_links_are_shown_by_their_words_and_are_not_note_links() -> None:
    note = render_note("Read [the docs](https://help.obsidian.md/Home) or <https://x.org>.")
    assert note.text == "Read the docs or <https://x.org>."
    assert note.links == []


def test_formatting_is_rendered_and_lines_stay_where_they_were() -> None:
    text = ("# Title ^abc\n"
            "Text with ==highlight==, **bold**, __bold__, *it*, _it_, ~~gone~~ and snake_case_word.\n"
            "> [!tip]- Drag a file\n"
            "> Inside the callout.\n"
            "> plain quote\n"
            "%% a comment\n"
            "spanning lines %% after\n"
            "Inline %%hidden%% shown.\n"
            "A line with a block id ^my-list-id")
    note = render_note(text)
    assert note.text.split("\n") == [
        "# Title",
        "Text with highlight, bold, bold, it, it, gone and snake_case_word.",
        "Drag a file",
        "Inside the callout.",
        "plain quote",
        "",
        " after",
        "Inline  shown.",
        "A line with a block id",
    ]
    assert note.block_ids == ["abc", "my-list-id"]


def test_code_is_shown_as_written() -> None:
    text = "Use `[[not a link]]` and `**x**`.\n```\n[[Inside a fence]] #notatag ==x==\n```\nthen [[Real]]"
    note = render_note(text)
    assert note.text.split("\n") == ["Use `[[not a link]]` and `**x**`.", "```",
                                     "[[Inside a fence]] #notatag ==x==", "```", "then Real"]
    assert [link.target for link in note.links] == ["Real"]
    assert note.tags == []


def test_inline_and_nested_tags() -> None:
    note = render_note("Tagged #project/alpha and #todo, not #1984 or a#b or an [anchor](#heading); #y1984 is.")
    assert note.tags == ["project/alpha", "todo", "y1984"]
    assert "#project/alpha" in note.text  # a tag reads as a tag


def test_render_text_of_a_sentence() -> None:
    assert render_text("On the [[Plans and storage limits|Obsidian Sync plan]] your notes are kept.") == \
        "On the Obsidian Sync plan your notes are kept."


def test_bold_pairs_markers_without_crossing_another():
    assert render_text("**bold** and __also__, **a **b**") == "bold and also, **a b"


_HOSTILE_LINES = ("**a ", "__a ", "==a ", "~~a ", "*a ", "_a ", "`a ", "``a ", "[[a ", "![[a ", "[a](", "%%a ",
                  "<a ", "#a ", "^a ", "> [!a] ", "[a] ", "a|", "- [ ] a ", "| a ")


@pytest.mark.security
def test_rendering_a_hostile_note_takes_linear_time() -> None:
    """A line of unclosed markers, 128 KB per shape, rendered in a child process that must finish within
    60 s (a few seconds when linear; unclosed bold markers took 4 s for 32 KB, an hour for 1 MB)."""
    script = (
        "from rag.obsidian import render_note, render_text\n"
        f"for unit in {_HOSTILE_LINES!r}:\n"
        "    text = '# T\\n\\n' + unit * (131072 // len(unit)) + '\\n'\n"
        "    render_note(text); render_text(text)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
