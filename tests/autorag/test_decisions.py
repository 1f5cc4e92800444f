"""Weak-retrieval signals, mode routing, the decision rule and PRF expansion (hand-checked)."""

from __future__ import annotations

import pytest

from rag.errors import InputError
from rag.retrieval.autorag import (
    is_weak_retrieval,
    prf_expansion_terms,
    resolve_auto_mode,
    score_decision,
    score_result_set,
)

KW = dict(similarity_threshold=0.4, min_matches=3, density_min_share=0.3, flat_spread_max=0.02, top_k=5)


def test_strong_retrieval_fires_nothing():
    check = is_weak_retrieval([0.82, 0.7, 0.55, 0.41, 0.3], **KW)
    assert not check.weak and check.signals == ()
    assert check.share_above_threshold == pytest.approx(4 / 5)
    assert check.spread == pytest.approx(0.82 - 0.3)


@pytest.mark.parametrize(
    ("sims", "signal"),
    [
        ([0.35, 0.3, 0.2, 0.1], "low_top_similarity"),
        ([0.9, 0.8], "few_matches"),
        ([0.45, 0.2, 0.19, 0.18, 0.17], "low_density"),
        ([0.5, 0.495, 0.49, 0.49, 0.485], "flat_scores"),
    ],
)
def test_each_weak_signal(sims, signal):
    check = is_weak_retrieval(sims, **KW)
    assert check.weak and signal in check.signals


def test_forced_modes_route_before_the_weak_check():
    assert resolve_auto_mode("hyde", weak=False, llm_available=True, multi_query=False) == "hyde"
    assert resolve_auto_mode("base", weak=True, llm_available=True, multi_query=True) == "base"
    assert resolve_auto_mode("auto", weak=False, llm_available=True, multi_query=False) == "base"
    assert resolve_auto_mode("auto", weak=True, llm_available=True, multi_query=False) == "correct"
    assert resolve_auto_mode("auto", weak=True, llm_available=False, multi_query=False) == "prf"
    assert resolve_auto_mode("auto", weak=False, llm_available=False, multi_query=True) == "multi"
    with pytest.raises(InputError, match="unknown mode 'fast'"):
        resolve_auto_mode("fast", weak=None, llm_available=False, multi_query=False)


def test_score_result_set_and_decision_margin():
    query = "rotate backup keys weekly"  # content terms: rotate, backup, keys, weekly
    base = score_result_set([(0.6, "backup keys"), (0.4, "unrelated")], query, top_k=2)
    # mean sim 0.5; coverage (2/4 + 0)/2 = 0.25 → 0.5*0.5 + 0.5*0.25 = 0.375
    assert base.score == pytest.approx(0.375)
    better = score_result_set([(0.6, "rotate backup keys weekly"), (0.5, "backup keys")], query, top_k=2)
    # mean sim 0.55; coverage (1 + 0.5)/2 = 0.75 → 0.275 + 0.375 = 0.65
    assert better.score == pytest.approx(0.65)
    assert score_decision(base, better, corrected_name="rewrite", margin=0.02).winner == "rewrite"
    near = score_result_set([(0.6, "backup keys"), (0.41, "unrelated")], query, top_k=2)
    decision = score_decision(base, near, corrected_name="hyde", margin=0.02)
    assert decision.winner == "base" and "margin" in decision.reason
    empty = score_result_set([], query, top_k=2)
    assert score_decision(base, empty, corrected_name="hyde", margin=0.02).reason == "hyde returned nothing"


def test_prf_terms_come_from_top_results_not_the_query():
    terms = prf_expansion_terms(
        "how to sync notes",
        ["Sync uses end-to-end encryption; encryption keys stay on device.", "Vault encryption and devices."],
        max_terms=3)
    assert terms[0] == "encryption"
    assert "sync" not in terms and "notes" not in terms and len(terms) == 3
