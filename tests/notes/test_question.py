"""The question's side of notes answering (`rag.notes.question`): content terms, folder position
weights, the detail hint and auto-K, and the settings' own consistency checks."""

from __future__ import annotations

import pytest

from rag.config import NotesSettings
from rag.errors import InputError
from rag.notes.question import (
    choose_k,
    folder_weights,
    match_terms,
    query_terms,
    read_question,
    validate_detail,
)

S = NotesSettings()


def test_k_defaults_match_the_design():
    assert (S.k_min, S.k_max, S.k_brief, S.k_normal, S.k_detailed) == (3, 8, 3, 5, 8)
    assert (S.answer_sentences, S.answer_sources) == ({"brief": 1, "normal": 2, "detailed": 3},
                                                      {"brief": 1, "normal": 3, "detailed": 8})
    assert S.profile == "notes" and S.folder_weight_min == 0.1


def test_query_terms_drop_stopwords_and_repeats():
    assert query_terms("How do I rotate the backup keys? Backup keys!") == ["rotate", "backup", "keys"]


def test_phrasal_verbs_also_match_their_one_word_form():
    assert query_terms("How do I back up and log in?") == ["back", "log", "backup", "login"]
    assert match_terms("Which notes are linked?") == ["note", "link"]


def test_folder_weights_step_down_to_the_minimum():
    assert folder_weights(12, S) == [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1]
    assert folder_weights(0, S) == []
    steep = NotesSettings(folder_weight_step=0.45, folder_weight_min=0.05)
    assert folder_weights(4, steep) == [1.0, 0.55, 0.1, 0.05]


@pytest.mark.parametrize(("question", "detail", "folders", "k", "expected"), [
    ("what is alpha", "brief", False, None, 3),
    ("what is alpha", "normal", False, None, 5),
    ("what is alpha", "detailed", False, None, 8),
    ("give me an overview of alpha", "normal", False, None, 7),           # breadth word +2
    ("compare alpha and beta", "brief", False, None, 5),
    ("what is alpha? and beta?", "normal", False, None, 7),               # two question marks
    (" ".join(["word"] * 21), "normal", False, None, 7),                  # more than 20 words
    ("everything about alpha", "detailed", False, None, 8),               # 10 clamped to 8
    ("what is alpha", "normal", True, None, 4),                           # a user folder narrows: -1
    ("what is alpha", "brief", True, None, 3),                            # 2 clamped to 3
    ("all notes on alpha", "normal", True, None, 6),                      # +2 -1
    ("what is alpha", "normal", False, 6, 6),                             # explicit
])
def test_auto_k(question, detail, folders, k, expected):
    assert choose_k(question, detail=detail, k=k, user_folders=folders, s=S).k == expected


def test_auto_k_says_why():
    choice = choose_k("give me an overview of alpha", detail="normal", k=None, user_folders=True, s=S)
    assert choice.reasons == ("detail 'normal': 5", "broad question (asks for 'overview'): +2", "folders named: -1")


def test_explicit_k_out_of_range_is_an_error_naming_the_range():
    for bad in (99, 0, 2, 9):
        with pytest.raises(InputError, match=f"k must be between 3 and 8, got {bad}"):
            choose_k("q", detail="normal", k=bad, user_folders=False, s=S)
    assert choose_k("q", detail="normal", k=8, user_folders=False, s=S).k == 8
    assert choose_k("q", detail="brief", k=5, user_folders=True, s=S).reasons == ("explicit k",)


def test_bad_detail_and_k_are_input_errors():
    with pytest.raises(InputError, match="detail must be one of: brief, normal, detailed"):
        choose_k("q", detail="verbose", k=None, user_folders=False, s=S)
    with pytest.raises(InputError, match=r"detail must be one of: brief, normal, detailed \(got 'Brief'\)"):
        validate_detail("Brief")
    with pytest.raises(InputError, match="whole number"):
        choose_k("q", detail="normal", k="5", user_folders=False, s=S)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="whole number"):
        choose_k("q", detail="normal", k=True, user_folders=False, s=S)


def test_settings_reject_inconsistent_values():
    with pytest.raises(ValueError, match="k_min"):
        NotesSettings(k_min=9)
    with pytest.raises(ValueError, match="abstain_low_confidence"):
        NotesSettings(abstain_threshold=0.7, abstain_low_confidence=0.6)
    with pytest.raises(ValueError, match="answer_sentences"):
        NotesSettings(answer_sentences={"brief": 1, "normal": 2})
    with pytest.raises(ValueError, match="answer_sources"):
        NotesSettings(answer_sources={"brief": 0, "normal": 3, "detailed": 8})
    with pytest.raises(ValueError):
        NotesSettings(first_stage="vector")  # the seed's setting is gone: unknown keys are rejected


def test_a_question_is_read_once_into_what_the_later_steps_need():
    q = read_question("How do I turn on 2FA with a YubiKey, and what if I lose my phone?", S)
    assert q.terms[:3] == ("turn", "2fa", "yubikey") and "turnon" in q.terms
    assert q.match_terms == tuple(match_terms(q.text))
    assert q.names == ("YubiKey",) and q.wants_steps and q.shape is not None  # "on 2FA" sets the scene
    assert [p.text for p in q.parts] == ["How do I turn on 2FA with a YubiKey", "what if I lose my phone?"]
    assert q.parts[1].match_terms == tuple(match_terms("what if I lose my phone?"))
    simple = read_question("When does project alpha ship?", S)
    assert len(simple.parts) == 1 and not simple.wants_steps and simple.names == ()
