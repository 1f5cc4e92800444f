"""The answer without a language model (`rag.notes.extractive`): readable sentences of the passages,
scored by term overlap and meaning, quoted in reading order with a citation each.

The last tests index two small notes on disk with the real pipeline and check, sentence by
sentence, what `ask` quotes for questions whose answers were worked out by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from rag.notes.ask import ask
from rag.notes.extractive import (
    Sentence,
    _sentences,
    extractive_answer,
    plain,
    score_sentences,
    sentence_context,
    term_weights,
    weigh_by_passage,
)
from rag.types import Candidate
from tests.notes.conftest import index_vault
from tests.support.files import write_files


def cand(cid: int, path: str, heading: str, content: str) -> Candidate:
    return Candidate(chunk_id=cid, vault="work", source_path=path, ordinal=cid, heading_path=heading,
                     content=content, metadata={})


def extract(question, chunks, *, count=2, similarity=None, passage_scores=None, min_share=0.5):
    sentences = score_sentences(question, chunks, similarity=similarity)
    if passage_scores is not None:
        sentences = weigh_by_passage(sentences, passage_scores)
    return extractive_answer(sentences, chunks, count=count, min_share_of_best=min_share, fallback_chars=280)


def quote(sentences, chunks, count, *, min_share, short_words=12):
    """The quoted answer of `extractive_answer` with the notes defaults for the rules (text only)."""
    return extractive_answer(sentences, chunks, count=count, min_share_of_best=min_share, fallback_chars=80,
                             short_words=short_words)[0]


# -- sentences --------------------------------------------------------------------------------------

def test_markup_becomes_plain_text_but_inline_code_stays():
    text = ("See [[Settings#Excluded files|Excluded files]], [[Embed files]] and [[#Aliases]] "
            "![[icon.svg#icon]]![alt](img.png) for **bold**, _italic_, ==marked== and [the site](https://x.org). "
            "Type `[[` twice; snake_case stays.\n> [!tip] Callouts read as text.")
    assert plain(text) == ("See Excluded files, Embed files and Aliases (an icon)(image: alt) for bold, italic, marked "
                           "and the site. Type `[[` twice; snake_case stays.\nCallouts read as text.")


def test_sentences_keep_lists_with_their_introduction_and_skip_headings_in_bold():
    content = ("Obsidian supports the following file types:\n\n- **Markdown**: `.md`\n- **PDF**: `.pdf`\n\n"
               "**Why back up your data?**\n\nBackups protect your notes from loss.\n\n"
               "To link using an alias:\n\n```md\n[[Note|alias]]\n```\n\n- a stray item on its own line")
    assert _sentences(content) == [
        "Obsidian supports the following file types: Markdown: `.md`; PDF: `.pdf`.",
        "Backups protect your notes from loss.",  # the bold pseudo-heading is not a sentence
        "a stray item on its own line",            # the dangling introduction of a code block is dropped
    ]


def test_headings_link_lines_list_stubs_code_and_callout_titles_are_not_sentences():
    content = ("# Sync settings\n\nSee also: [[Publish]], [[Backups|backing up]]\n\n- [[Conflict files and edits]]\n"
               "- Offline edits\n\n> [!warning] Sync deletes remote files\n> Deleting a file deletes it everywhere.\n\n"
               "```bash\nsync --delete all remote files now\n```\n\n~~~\nmore code in tildes here\n~~~\n\n"
               "Sync runs in the background.")
    assert _sentences(content) == ["Deleting a file deletes it everywhere.", "Sync runs in the background."]


# -- scoring and choosing ---------------------------------------------------------------------------

def test_extractive_answer_quotes_best_sentences_with_citations():
    chunks = [
        cand(0, "ops/backup.md", "# Backups > ## Keys",
             "# Keys\nBackup keys rotate every Monday. The office plant needs water. "
             "Old backup keys are destroyed after rotation."),
        cand(1, "ops/misc.md", "# Misc", "Lunch is at noon every day. Nobody likes Mondays."),
    ]
    answer, used = extract("When do backup keys rotate?", chunks)
    assert answer.splitlines() == [
        "Backup keys rotate every Monday. [File: backup.md, Section: Keys]",
        "Old backup keys are destroyed after rotation. [File: backup.md, Section: Keys]",
    ]
    assert used == [0]


def test_extractive_answer_falls_back_to_first_sentence():
    chunks = [cand(0, "a.md", "", "The deploy token is rotated every week for prod.")]
    answer, used = extract("zebra migration", chunks)
    assert answer.startswith("The deploy token is rotated every week for prod.")
    assert answer.endswith("[File: a.md, Section: (top of the note)]") and used == [0]


def test_chosen_sentences_are_quoted_in_reading_order_not_score_order():
    chunks = [cand(0, "a.md", "# A", "x"), cand(1, "b.md", "# B > ## Bee", "y")]
    sentences = [Sentence(0, 0, "First of a.", 0.5), Sentence(0, 1, "Second of a.", 0.9),
                 Sentence(1, 0, "First of b.", 0.6), Sentence(1, 1, "Second of b.", 0.95)]
    answer, used = extractive_answer(sentences, chunks, count=3, min_share_of_best=0.5, fallback_chars=80)
    # the best three are 0.95, 0.9, 0.6: passage rank first, then position in the passage
    assert answer.splitlines() == ["Second of a. [File: a.md, Section: A]", "First of b. [File: b.md, Section: Bee]",
                                   "Second of b. [File: b.md, Section: Bee]"]
    assert used == [0, 1]
    one, used = extractive_answer(sentences, chunks, count=1, min_share_of_best=0.5, fallback_chars=80)
    assert one == "Second of b. [File: b.md, Section: Bee]" and used == [1]


def test_sentences_far_below_the_best_are_not_quoted_even_when_the_count_allows():
    chunks = [cand(0, "a.md", "# A", "x")]
    sentences = [Sentence(0, 0, "Strong.", 0.8), Sentence(0, 1, "Half.", 0.4), Sentence(0, 2, "Weak.", 0.39)]
    answer, _ = extractive_answer(sentences, chunks, count=3, min_share_of_best=0.5, fallback_chars=80)
    assert [line.split(" [File")[0] for line in answer.splitlines()] == ["Strong.", "Half."]


def test_a_question_in_the_notes_is_replaced_by_the_sentence_that_answers_it():
    chunks = [cand(0, "faq.md", "# FAQ", "x")]
    sentences = [Sentence(0, 0, "Why do I get a hash error when I publish?", 0.9),
                 Sentence(0, 1, "The file's modified time changed while it uploaded.", 0.3),
                 Sentence(0, 2, "Publishing is free for one site.", 0.2)]
    answer, used = extractive_answer(sentences, chunks, count=1, min_share_of_best=0.5, fallback_chars=80)
    assert answer == "The file's modified time changed while it uploaded. [File: faq.md, Section: FAQ]"
    # a question with nothing after it in its passage is not quoted at all
    last = [Sentence(0, 0, "Can I pay by card?", 0.9), Sentence(1, 0, "Invoices go out monthly.", 0.6)]
    answer, used = extractive_answer(last, [chunks[0], cand(1, "b.md", "# B", "y")], count=1,
                                     min_share_of_best=0.5, fallback_chars=80)
    assert answer == "Invoices go out monthly. [File: b.md, Section: B]" and used == [1]


def test_a_faq_prompt_in_bold_is_answered_by_what_follows_it_even_a_question():
    chunks = [cand(0, "publish.md", "# Troubleshoot > ## Publishing notes",
                   "**I am receiving a hash error when trying to publish a note.**\n\n"
                   "Are you using a plugin that edits the file's modified time upon update? If so, this plugin may"
                   " conflict with Publish.\n\n**I am receiving an odd network error.**\n\n"
                   "We may need to examine your database.")]
    sentences = score_sentences("Why do I get a hash error when I publish a note?", chunks)
    assert [x.text for x in sentences if x.prompt] == [
        "I am receiving a hash error when trying to publish a note.", "I am receiving an odd network error."]
    answer, _ = extractive_answer(sentences, chunks, count=2, min_share_of_best=0.5, fallback_chars=80)
    assert answer == ("Are you using a plugin that edits the file's modified time upon update? If so, this plugin"
                      " may conflict with Publish. [File: publish.md, Section: Publishing notes]")


def test_numbered_steps_stay_with_their_introduction_and_table_rows_read_as_sentences():
    content = ("Instead of a separate tab, backlinks can sit at the bottom of the note.\n\n"
               "To show backlinks in a note:\n\n1. Open the [[Command palette]].\n"
               "2. Select **Backlinks: Toggle backlinks in document**.\n\n"
               "| Action | Shortcut |\n|-|-|\n| Paste without formatting | `Ctrl+Shift+V` |\n| Undo | `Ctrl+Z` |\n"
               "| Redo | `Ctrl+Shift+Z` or `Ctrl+Y` |\n")
    assert _sentences(content) == [
        "Instead of a separate tab, backlinks can sit at the bottom of the note.",
        "To show backlinks in a note: Open the Command palette; Select Backlinks: Toggle backlinks in document.",
        "Paste without formatting: `Ctrl+Shift+V`.",
        "Redo: `Ctrl+Shift+Z` or `Ctrl+Y`."]  # "Undo: Ctrl+Z" and the header row are under 3 words
    chunks = [cand(0, "backlinks.md", "# Backlinks", content)]
    # the best sentence is the how-to's preamble: its procedure comes with it
    answer, _ = extract("Can backlinks sit at the bottom of the note instead of a separate tab?", chunks, count=2)
    assert answer == ("Instead of a separate tab, backlinks can sit at the bottom of the note. To show backlinks in a"
                      " note: Open the Command palette; Select Backlinks: Toggle backlinks in document."
                      " [File: backlinks.md, Section: Backlinks]")
    # a table row is whole: short as it is, it brings no neighbour (a sentence that short would)
    sentences = score_sentences("paste without formatting shortcut", chunks)
    assert [x.kind for x in sentences] == ["sentence", "procedure", "row", "row"]
    row = sentences[2]
    quoted = quote([*sentences[:2], replace(row, score=9.0), sentences[3]], chunks, 2, min_share=0.9)
    assert quoted == "Paste without formatting: `Ctrl+Shift+V`. [File: backlinks.md, Section: Backlinks]"
    as_sentence = quote([*sentences[:2], replace(row, score=9.0, kind="sentence"), sentences[3]], chunks, 2,
                        min_share=0.9)
    assert as_sentence.startswith("Paste without formatting: `Ctrl+Shift+V`. Redo: ")


# The sentences of one passage (sync.md's "Status icon" or table.md's "Row height"), with their scores.
POINTS_BACK = ("sync.md", "# Sync > ## Status icon", [
    ("Disconnected: the plugin is on but not connected to a remote vault.", 0.3),
    ("This icon is typically red.", 0.9),
    ("Clicking the icon opens a menu with Pause, Version history and Sync log.", 0.35)])
SHORT_FIRST = ("table.md", "# Table > ## Row height", [
    ("Row height shows more.", 0.9),
    ("Choose short, medium, tall or extra tall in the view menu.", 0.2),
    ("Columns can be resized by dragging their edge in the header.", 0.5)])


@pytest.mark.parametrize(("passage", "count", "min_share", "short_words", "expected"), [
    pytest.param(POINTS_BACK, 2, 0.3, 12, "Disconnected: the plugin is on but not connected to a remote vault. This icon"
                 " is typically red. [File: sync.md, Section: Status icon]",
                 id="a sentence that points back brings the one before it"),
    pytest.param(POINTS_BACK, 1, 0.3, 12, "This icon is typically red. [File: sync.md, Section: Status icon]",
                 id="no room for the one before"),
    pytest.param(SHORT_FIRST, 2, 0.1, 12, "Row height shows more. Choose short, medium, tall or extra tall in the view"
                 " menu. [File: table.md, Section: Row height]",
                 id="a short sentence brings the next one within the count"),
    pytest.param(SHORT_FIRST, 1, 0.1, 12, "Row height shows more. [File: table.md, Section: Row height]",
                 id="one sentence allowed: the short one alone"),
    pytest.param(SHORT_FIRST, 2, 0.1, 0, "Row height shows more. [File: table.md, Section: Row height]\n"
                 "Columns can be resized by dragging their edge in the header. [File: table.md, Section: Row height]",
                 id="short_words 0 turns the rule off"),
])
def test_a_sentence_brings_the_neighbour_it_needs(passage, count, min_share, short_words, expected):
    path, heading, scored = passage
    sentences = [Sentence(0, i, text, score) for i, (text, score) in enumerate(scored)]
    assert quote(sentences, [cand(0, path, heading, "x")], count, min_share=min_share,
                 short_words=short_words) == expected


def test_a_word_found_in_every_passage_weighs_less():
    chunks = [cand(0, "a.md", "", "Obsidian stores notes as files."),
              cand(1, "b.md", "", "Obsidian syncs your vault."),
              cand(2, "c.md", "", "Obsidian can publish a site.")]
    w = term_weights(["obsidian", "vault"], chunks)
    assert w["obsidian"] == pytest.approx(math.log(2)) and w["vault"] == pytest.approx(math.log(4))
    answer, used = extract("Where does Obsidian keep the vault?", chunks, count=3)
    # "vault" (one passage) outweighs "obsidian" (all three): only b.md's sentence reaches half the best
    assert answer == "Obsidian syncs your vault. [File: b.md, Section: (top of the note)]" and used == [1]


def test_a_word_of_the_notes_title_does_not_pick_its_sentences():
    """A question word that a passage's note title holds says which note, not which of its sentences:
    those sentences are matched on the question's other words (all of them when the title holds every one)."""
    chunks = [cand(0, "Import from Google Keep.md", "", "Scroll down and select Keep from the list of Google "
                                                         "services. Then export."),
              cand(1, "Publish/Search engines.md", "", "The site is public. You can disallow crawlers from "
                                                       "indexing your site in the site options.")]
    scored = {x.text: x.score for x in score_sentences("How do I keep Google crawlers from indexing my site?", chunks)}
    keep = scored["Scroll down and select Keep from the list of Google services."]
    disallow = scored["You can disallow crawlers from indexing your site in the site options."]
    assert disallow > keep and keep == 0.0  # "keep" and "google" are the first note's title
    # a title that holds every question word: its sentences are matched on all of them
    alone = [cand(0, "Google Keep.md", "", "Google Keep notes export as one archive. Other text here.")]
    assert score_sentences("google keep", alone)[0].score == pytest.approx(1.0)


def test_sentence_similarity_picks_an_answer_in_other_words():
    chunks = [cand(0, "f.md", "# Formats", "Obsidian supports the following file types: markdown and PDF. "
                                            "Obsidian formats dates in settings.")]
    lexical, _ = extract("Which formats can I open?", chunks, count=1)
    assert lexical.startswith("Obsidian formats dates")

    def similarity(texts):  # the embedder's view: the first sentence answers the question
        return [0.9 if "file types" in t else 0.1 for t in texts]

    semantic, _ = extract("Which formats can I open?", chunks, count=1, similarity=similarity)
    # "formats" and "open" weigh the same (log 2; "open" is in no passage): 0.5 * 0 + 0.5 * 0.9 = 0.45
    # for the list beats 0.5 * 1/2 + 0.5 * 0.1 = 0.30 for the sentence sharing the word "formats"
    assert semantic.startswith("Obsidian supports the following file types")
    scored = score_sentences("Which formats can I open?", chunks, similarity=similarity)
    assert [(round(x.score, 6), x.similarity) for x in scored] == [(0.45, 0.9), (0.3, 0.1)]



def test_sentences_are_embedded_with_their_note_and_section():
    """Alone, "It requires Node.js 22 or later." says nothing of what needs it; embedded after its note's
    name and section, its meaning matches a question about that tool's runtime."""
    chunks = [cand(0, "Tools/Obsidian Headless.md", "## Install", "It requires Node.js 22 or later."),
              cand(1, "Tools/Obsidian CLI.md", "", "The desktop app must be running for the command line.")]
    seen: list[str] = []

    def similarity(texts):  # an embedder that knows which tool a text is about
        seen.extend(texts)
        return [0.8 if "Headless" in t else 0.2 for t in texts]

    question = "Which runtime does the headless client need?"
    plain_scored = score_sentences(question, chunks, similarity=similarity)
    assert seen == ["It requires Node.js 22 or later.", "The desktop app must be running for the command line."]
    assert [x.similarity for x in plain_scored] == [0.2, 0.2]
    seen.clear()
    scored = score_sentences(question, chunks, similarity=similarity, with_context=True)
    assert seen == ["Obsidian Headless Install: It requires Node.js 22 or later.",
                    "Obsidian CLI: The desktop app must be running for the command line."]
    assert [x.similarity for x in scored] == [0.8, 0.2]
    assert [x.text for x in scored] == ["It requires Node.js 22 or later.",  # the quoted text stays the sentence
                                        "The desktop app must be running for the command line."]
    answer, _ = extractive_answer(scored, chunks, count=1, min_share_of_best=0.5, fallback_chars=80)
    assert answer == "It requires Node.js 22 or later. [File: Obsidian Headless.md, Section: Install]"


def test_sentence_context_reads_the_indexed_title_once():
    headless = cand(0, "Tools/Obsidian Headless.md", "## Install", "x")
    assert sentence_context(headless) == "Obsidian Headless Install"
    titled = replace(headless, source_path="2024/202401010945.md", metadata={"title": "Headless client"})
    assert sentence_context(titled) == "Headless client Install"  # the front matter's title, not the file name
    h1 = replace(headless, heading_path="# Headless client > ## Install", metadata={"title": "Headless client"})
    assert sentence_context(h1) == "Headless client Install"  # the H1 that is the title is not repeated
    top = replace(headless, heading_path="", metadata={"title": "  "})
    assert sentence_context(top) == "Obsidian Headless"  # a blank title falls back to the file name
    leaky = replace(headless, heading_path="## Key AKIAIOSFODNN7EXAMPLE")
    assert "AKIAIOSFODNN7EXAMPLE" not in sentence_context(leaky)  # masked, as the passages are

def test_sentences_of_weaker_passages_need_more():
    chunks = [cand(0, "a.md", "# A", "Backups run every night on the server."),
              cand(1, "b.md", "# B", "Backups keep seven copies.")]
    _, used = extract("How do backups work?", chunks)
    assert used == [0, 1]
    scaled, used = extract("How do backups work?", chunks, passage_scores=[0.8, 0.35])
    assert used == [0] and scaled == "Backups run every night on the server. [File: a.md, Section: A]"


# -- fixed notes, indexed from disk, answered by `ask` ----------------------------------------------

SYNC = """# Sync

Sync keeps your vault the same on every device you use.

See also: [[Publish]], [[Backups]]

## Conflicts

- [[Conflict files and offline edits]]
- Offline edits

> [!tip] Two devices editing the same note offline
> Merge the conflict file into the note by hand, then delete the conflict file.

When two devices edit the same note offline, Sync keeps both versions and writes a conflict file.

```bash
sync --when two devices edit the same note offline --merge conflict file
```

Sync history keeps every version of a note for twelve months.
"""
BACKUPS = """# Backups

## Restore

To restore a note, open the version history and pick an older version.

Backups run every night on your own machine.
"""
CONFLICT_Q = "How do I merge the conflict file when two devices edit the same note offline?"
MAIN = ("When two devices edit the same note offline, Sync keeps both versions and writes a conflict file. "
        "[File: sync.md, Section: Conflicts]")
CALLOUT = "Merge the conflict file into the note by hand, then delete the conflict file. [File: sync.md, Section: Conflicts]"
NEVER = ["#", "```", "sync --", "Two devices editing", "Conflict files and offline edits", "Offline edits.",
         "See also", "[[", "> "]


@pytest.fixture
def fixed_notes(cli_env, tmp_path, capsys, notes_config):
    index_vault(capsys, "notes", write_files(tmp_path / "vault", {"sync.md": SYNC, "backup/backups.md": BACKUPS}))


def lines_of(answer: str) -> list[str]:
    lines = answer.splitlines()
    for line in lines:
        assert line.endswith("]") and " [File: " in line, line  # every line carries its citation
        quoted = line.split(" [File: ")[0]
        assert not any(bad in quoted for bad in NEVER), line
    return lines


def test_fixed_notes_brief_quotes_the_one_sentence_that_answers(fixed_notes, runtime):
    # Question terms: merge, conflict, file, devices, edit, same, note, offline. MAIN holds seven of
    # them, CALLOUT four (merge, conflict, file, note); "Sync history ..." only "note". The code
    # line, the callout's title and the link line hold five to seven of them but are not sentences.
    resp = ask(CONFLICT_Q, detail="brief", runtime=runtime)
    assert not resp.abstained and resp.answered_by == "extractive"
    assert lines_of(resp.answer) == [MAIN]
    assert [(r.source_path, r.heading_path) for r in resp.references] == [("sync.md", "# Sync > ## Conflicts")]


def test_fixed_notes_normal_quotes_two_sentences_in_the_order_of_the_note(fixed_notes, runtime):
    resp = ask(CONFLICT_Q, detail="normal", runtime=runtime)
    # CALLOUT scores lower than MAIN but comes first in the note
    assert lines_of(resp.answer) == [CALLOUT, MAIN]


def test_fixed_notes_detailed_adds_no_filler(fixed_notes, runtime):
    # a third sentence is allowed, but none other reaches half the best sentence's score
    assert lines_of(ask(CONFLICT_Q, detail="detailed", runtime=runtime).answer) == [CALLOUT, MAIN]


def test_fixed_notes_the_answer_comes_from_the_note_that_has_it(fixed_notes, runtime):
    resp = ask("How do I restore an older version of a note from the version history?", detail="brief",
               runtime=runtime)
    assert lines_of(resp.answer) == [
        "To restore a note, open the version history and pick an older version. [File: backups.md, Section: Restore]"]
    assert resp.references[0].source_path == "backup/backups.md"


@pytest.mark.security
def test_reading_sentences_of_a_hostile_passage_takes_linear_time() -> None:
    """Blank lines, spaces and link-like lines, 64 KB each, read into sentences in a child process that
    must finish within 60 s (a line-only rule that crossed line breaks took 3 s for 8 KB of blank lines)."""
    import subprocess
    import sys

    script = ("from rag.notes.extractive import _sentence_parts\n"
              "for unit in ('\\n\\n', ' \\n', '\\n ', '[[a]]\\n', 'a: [[b]]\\n\\n', '- [[a]]\\n', '**a**\\n', '|a|\\n'):\n"
              "    _sentence_parts(unit * (65536 // len(unit)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
