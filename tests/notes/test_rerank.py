"""Lexical rerank, blend, folder weights, auto-K and confidence bands, against hand-computed values."""

from __future__ import annotations

import pytest

from rag.errors import InputError
from rag.notes.rerank import (
    Scored,
    blend,
    choose_k,
    confidence,
    folder_weights,
    lexical_score,
    query_terms,
    rerank,
)
from rag.notes.settings import NotesSettings
from rag.types import Candidate

S = NotesSettings()


def cand(cid: int, content: str, heading: str = "", path: str = "a.md") -> Candidate:
    return Candidate(chunk_id=cid, vault="v", source_path=path, ordinal=cid, heading_path=heading, content=content,
                     metadata={})


def test_defaults_match_the_design():
    assert (S.candidates_per_scope, S.pool_cap, S.vector_floor, S.final_floor) == (15, 200, 0.3, 0.4)
    assert (S.vector_weight, S.lexical_weight, S.max_lexical, S.heading_bonus, S.lexical_scale) == (0.7, 0.3, 0.4,
                                                                                                  0.1, 10.0)
    assert (S.k_min, S.k_max, S.k_brief, S.k_normal, S.k_detailed) == (3, 8, 3, 5, 8)
    assert (S.confidence_filter_below, S.confidence_low_below) == (0.20, 0.30)
    assert S.first_stage == "vector"


def test_query_terms_drop_stopwords_and_repeats():
    assert query_terms("How do I rotate the backup keys? Backup keys!") == ["rotate", "backup", "keys"]


def test_phrasal_verbs_also_match_their_one_word_form():
    assert query_terms("How do I back up and log in?") == ["back", "log", "backup", "login"]
    # "back up my vault" finds a passage that only says "backup": 1 match in 20 tokens -> 0.5 -> capped
    text = "Use a backup tool to keep copies. " + " ".join(["filler"] * 13)
    assert lexical_score(query_terms("How do I back up my vault?"), text, "", S) == pytest.approx(0.4)
    assert lexical_score(query_terms("How do I back my vault?"), text, "", S) == 0.0


def test_lexical_score_normalised_by_chunk_length():
    terms = ["rotate", "backup", "keys"]
    # 50 tokens, 1 match: 1/50*10 = 0.2 (under the 0.4 cap), no heading bonus
    text = "we rotate " + " ".join(["filler"] * 48)
    assert lexical_score(terms, text, "", S) == pytest.approx(0.2)
    # 40 tokens, 3 matches (backup twice, keys once): 3/40*10 = 0.75 -> capped at 0.4; heading bonus +0.1
    text = "backup backup keys " + " ".join(["filler"] * 37)
    assert lexical_score(terms, text, "# Ops > ## Key rotation", S) == pytest.approx(0.4)  # exact tokens only
    assert lexical_score(terms, text, "# Ops > ## Backup", S) == pytest.approx(0.5)
    # no term at all: 0; the heading alone still earns the bonus
    assert lexical_score(terms, "nothing relevant here", "# Keys", S) == pytest.approx(0.1)
    assert lexical_score([], "backup keys", "# Keys", S) == 0.0


def test_blend_and_folder_weight():
    # 0.7*0.8 + 0.3*0.2 = 0.62, then x 0.9 for the second folder
    assert blend(0.8, 0.2, 1.0, S) == pytest.approx(0.62)
    assert blend(0.8, 0.2, 0.9, S) == pytest.approx(0.558)


def test_folder_weights_step_down_to_the_minimum():
    assert folder_weights(12, S) == [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1]
    assert folder_weights(0, S) == []


def test_rerank_floors_order_and_k():
    q = "rotate backup keys"
    pool = [
        Scored(cand(1, "rotate " + "x " * 49), "v/a", 1.0, vector=0.8),          # 0.56 + 0.06 = 0.62
        Scored(cand(2, "unrelated words only"), "v/a", 1.0, vector=0.25),        # below the vector floor
        Scored(cand(3, "unrelated words only"), "v/a", 1.0, vector=0.5),         # 0.35 < final floor 0.4
        Scored(cand(4, "backup keys", "# Backup"), "v/b", 0.9, vector=0.6),     # (0.42 + 0.15) * 0.9 = 0.513
        Scored(cand(5, "rotate " + "x " * 49), "v/b", 0.9, vector=0.75),        # (0.525 + 0.06) * 0.9 = 0.5265
    ]
    kept = rerank(q, pool, 2, S)
    assert [i.candidate.chunk_id for i in kept] == [1, 5]
    assert kept[0].final == pytest.approx(0.62) and kept[1].final == pytest.approx(0.5265)
    assert pool[3].final == pytest.approx(0.513) and pool[3].dropped == "beyond_k"
    assert pool[1].dropped == "below_vector_floor" and pool[2].dropped == "below_final_floor"
    assert [i.rank for i in pool] == [1, None, None, None, 2]


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


def test_explicit_k_is_clamped_and_noted():
    high = choose_k("q", detail="normal", k=50, user_folders=False, s=S)
    low = choose_k("q", detail="normal", k=0, user_folders=False, s=S)
    assert (high.k, low.k) == (8, 3)
    assert "clamped to 8" in high.reasons[0] and "clamped to 3" in low.reasons[0]


def test_bad_detail_and_k_are_input_errors():
    with pytest.raises(InputError, match="detail must be one of: brief, normal, detailed"):
        choose_k("q", detail="verbose", k=None, user_folders=False, s=S)
    with pytest.raises(InputError, match="whole number"):
        choose_k("q", detail="normal", k="5", user_folders=False, s=S)  # type: ignore[arg-type]


def test_confidence_bands():
    assert confidence(None, S) == "filtered"
    assert confidence(0.19, S) == "filtered"
    assert confidence(0.2, S) == "low"
    assert confidence(0.29, S) == "low"
    assert confidence(0.3, S) == "normal"


def test_settings_reject_inconsistent_values():
    with pytest.raises(ValueError):
        NotesSettings(k_min=9)
    with pytest.raises(ValueError):
        NotesSettings(first_stage="bm25")
