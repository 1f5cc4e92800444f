"""The one decision record of `ask` (`rag.notes.decision`): judged within the evidence's own vault,
names the notes never mention abstain with a message saying so, and reasons that agree with the outcome."""

from __future__ import annotations

import pytest

from rag.notes.ask import ask
from rag.notes.decision import explanation
from rag.notes.question import asked_names
from rag.notes.results import AnswerDecision
from rag.notes.signals import PORTABLE_SIGNALS
from tests.notes.conftest import use_settings

NOTES = {
    "sync/history.md": [("# Version history", "Version history keeps older versions of every note synced. "
                         "On the Plus plan older versions are retained for 12 months.")],
    "account/2fa.md": [("# Two-factor authentication", "Two-factor authentication protects your account with a "
                        "second step: a six digit code from an authenticator app when you log in.")],
    "billing/refunds.md": [("# Refund policy", "We offer full refunds within 7 days of purchase for Sync.")],
}
PAPERS = [(f"paper{i}.md", f"# Study {i}", f"Older patients synced with a second cohort; version {i} of the "
           f"protocol retained samples for {i} months and refunds of study costs were offered.") for i in range(40)]
QUESTIONS = ["How long are older versions retained on the Plus plan?", "Can I get a refund within 7 days?",
             "Can I use a YubiKey as the second step when I log in?", "What does a six digit code protect?",
             "How do I bake sourdough bread?"]


def fingerprint(d: AnswerDecision | None) -> tuple[object, ...]:
    assert d is not None
    words = {k: v for k, v in d.signals.items() if k in PORTABLE_SIGNALS}
    return d.abstain, d.rule, d.p_answerable, tuple(sorted(words.items())), tuple(d.names_missing)


# The default model's kind: signals that read words (rag.notes.signals.PORTABLE_SIGNALS), here with
# round weights; the final scores the others read are the shared ranking's, fused over every vault searched.
WORDS_MODEL = {"abstain_weights": {"term_coverage": 3.0, "unknown_share": -4.0, "passage_coverage": -1.0},
               "abstain_bias": 0.5, "abstain_threshold": 0.5, "abstain_low_confidence": 0.5}


def test_an_unrelated_vault_changes_no_decision(notes, runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_settings(monkeypatch, **WORDS_MODEL)
    for path, sections in NOTES.items():
        notes.note("notes", path, sections)
    alone = {q: ask(q, runtime=runtime).decision for q in QUESTIONS}
    for path, heading, text in PAPERS:
        notes.note("papers", path, [(heading, text)])
    beside = {q: ask(q, runtime=runtime).decision for q in QUESTIONS}
    judged_in_notes = [q for q in QUESTIONS if beside[q] is not None and beside[q].evidence_vault == "notes"]
    assert len(judged_in_notes) >= 3
    for q in judged_in_notes:
        assert fingerprint(beside[q]) == fingerprint(alone[q]), q


def test_a_name_the_notes_never_mention_is_said_and_abstained_on(notes, runtime, monkeypatch) -> None:
    use_settings(monkeypatch)
    for path, sections in NOTES.items():
        notes.note("notes", path, sections)
    resp = ask("Can I use a YubiKey as the second step when I log in?", runtime=runtime)
    assert resp.abstained and resp.decision is not None and resp.decision.rule == "names_missing"
    assert resp.decision.names_missing == ["YubiKey"]
    assert "Your notes mention" in resp.answer and resp.answer.endswith("but not YubiKey.")
    assert resp.references == []
    answered = ask("On the Plus plan, how long are older versions retained?", runtime=runtime)
    assert answered.decision is not None and answered.decision.rule != "names_missing"


def test_a_name_that_only_sets_the_scene_is_not_required() -> None:
    assert asked_names("Can I sync my notes on my PC located in Europe with a YubiKey?") == ["YubiKey"]
    assert asked_names("Does the Joplin importer keep attachments?") == ["Joplin"]


def test_an_answer_names_what_a_weak_signal_was_outweighed_by() -> None:
    d = AnswerDecision(abstain=False, rule="model", evidence_vault="v", p_answerable=0.8, threshold=0.7,
                       reasons=["a sentence of the best passages is close in meaning to the question",
                                "the best passages contain only 20% of the question's distinctive words "
                                "(outweighed by: a sentence of the best passages is close in meaning to the question)"])
    text = explanation(d)
    assert text.startswith("answered: the evidence is strong enough (confidence 0.80 ≥ 0.70)")
    assert "only 20%" in text and "outweighed by" in text
