"""The sentence that holds the fact (`rag.notes.shapes`, `rag.notes.extractive.favour_shape`): for each
question form, on notes written for it, the quoted sentence is the hand-checked one, not a general
sentence on the same topic that shares as many of the question's words."""

from __future__ import annotations

import pytest

from rag.notes.extractive import extractive_answer, favour_shape, score_sentences
from rag.notes.shapes import answer_shape, asks_for_steps
from rag.types import Candidate

SHARE = 0.5


def cand(content: str, heading: str = "# Note") -> Candidate:
    return Candidate(chunk_id=1, vault="v", source_path="note.md", ordinal=0, heading_path=heading,
                     content=content, metadata={})


def first_quoted(question: str, content: str, rule: bool = True) -> str:
    chunks = [cand(content)]
    sentences = score_sentences(question, chunks)
    if rule:
        sentences = favour_shape(sentences, answer_shape(question), asks_for_steps(question), SHARE)
    text, _ = extractive_answer(sentences, chunks, count=1, min_share_of_best=0.5, fallback_chars=280)
    return text.split(" [File:")[0]


CASES = [
    ("duration", "How long does the Plus plan keep old versions of my notes?",
     "Old versions of your notes appear in the version history of the Plus plan.\n\n"
     "On the Plus plan old notes are retained for 12 months.",
     "On the Plus plan old notes are retained for 12 months."),
    ("amount", "How much storage does one published site get?",
     "Storage of a published site is shown in the site settings.\n\nEach published site has 4 GB.",
     "Each published site has 4 GB."),
    ("key combination", "Which key combination opens the command palette?",
     "The command palette opens a list of every command.\n\nPress Ctrl+P to open the palette.",
     "Press Ctrl+P to open the palette."),
    ("setting path", "Where is the setting to turn on spell check?",
     "Spell check underlines words and can be turned on in the editor.\n\nTo turn on spell check, go to Settings → Editor.",
     "To turn on spell check, go to Settings → Editor."),
]


@pytest.mark.parametrize(("form", "question", "content", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_sentence_of_the_answer_shape_is_quoted(form: str, question: str, content: str, expected: str) -> None:
    shape = answer_shape(question)
    assert shape is not None and shape.name == form
    assert first_quoted(question, content) == expected
    assert first_quoted(question, content, rule=False) != expected  # without the rule the general sentence wins


def test_a_how_to_question_quotes_the_steps_in_order() -> None:
    question = "How do I ask for my money back after buying a refund plan?"
    content = ("A refund plan can be refunded after buying it, and the money goes back to the card.\n\n"
               "To ask for a refund:\n\n1. Log in to your account.\n2. Open Billing.\n3. Select Get money back.")
    assert asks_for_steps(question) and not asks_for_steps("Can I get my money back?")
    assert first_quoted(question, content) == (
        "To ask for a refund: Log in to your account; Open Billing; Select Get money back.")


def test_a_general_question_has_no_shape() -> None:
    assert answer_shape("What is a canvas?") is None
    assert answer_shape("Can I get my money back a few days after paying?").name == "duration"
