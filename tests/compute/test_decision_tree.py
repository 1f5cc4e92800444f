"""Every branch of the Auto-RAG decision tree, through compute_context on real Postgres with the
real litellm client talking to the local stub (see tests/compute/corpus.py for the vault's shape)."""

from __future__ import annotations

import pytest

from rag.compute import compute_context
from tests.compute import corpus
from tests.compute.corpus import STORIES, ZORBLAX


def sources(result) -> set[str]:
    return {r.candidate.source_path for r in result.ranked}


def pass_names(result) -> list[str]:
    return [p.name for p in result.decision.passes]


def chat_kinds(stub) -> list[str]:
    return [corpus.prompt_kind(body["messages"][-1]["content"]) for body in stub.requests_to("/chat/completions")]


def test_strong_base_pass_needs_no_correction(kb, scripted):
    stub = scripted(hyde=corpus.HYDE_BAD)
    result = compute_context(corpus.STRONG_QUERY, profile="focused", runtime=kb.runtime(llm=stub))
    d = result.decision
    assert (d.weak, d.weak_signals, d.route, d.winner) == (False, [], "base", "base")
    assert d.auto_triggered is False and d.reason == "retrieval was strong"
    assert pass_names(result) == ["base"]
    assert d.top_similarity >= 0.30  # the chat threshold the focused profile inherits
    assert stub.requests == []  # a strong base pass costs no LLM call
    assert result.ranked[0].candidate.source_path == "ops/zorblax-maintenance.md"


def test_weak_base_pass_corrected_by_hyde_wins(kb, scripted):
    base = compute_context(corpus.WEAK_QUERY, profile="focused", mode="base", runtime=kb.runtime())
    assert "misc/garden.md" in sources(base)  # the weak pass let a story in

    stub = scripted(hyde=corpus.HYDE_GOOD, rewrite=corpus.WEAK_QUERY)
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=kb.runtime(llm=stub))
    d = result.decision
    assert d.weak is True and {"low_top_similarity", "low_density"} <= set(d.weak_signals)
    assert (d.route, d.winner, d.auto_triggered) == ("correct", "hyde", True)
    assert d.reason.startswith("hyde scored") and "margin" in d.reason
    assert pass_names(result) == ["base", "hyde", "rewrite"]
    assert sorted(chat_kinds(stub)) == ["hyde", "rewrite"]
    assert sources(result) == set(ZORBLAX)  # the corrected set replaced the story with the third note
    assert d.llm_failures == []


def test_decision_margin_is_a_profile_setting(kb, scripted):
    stub = scripted(hyde=corpus.HYDE_GOOD, rewrite=corpus.WEAK_QUERY)
    result = compute_context(corpus.WEAK_QUERY, profile="cautious", runtime=kb.runtime(llm=stub))
    d = result.decision
    assert (d.route, d.winner) == ("correct", "base")  # the same +0.15 win is not enough here
    assert "< margin 0.5" in d.reason


def test_weak_base_pass_kept_when_correction_is_worse(kb, scripted):
    base = compute_context(corpus.WEAK_QUERY, profile="focused", mode="base", runtime=kb.runtime())
    stub = scripted(hyde=corpus.HYDE_BAD, rewrite=corpus.HYDE_BAD)
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=kb.runtime(llm=stub))
    d = result.decision
    assert (d.weak, d.route, d.winner) == (True, "correct", "base")
    assert d.reason.count("base kept") == 2  # both corrections judged and rejected
    assert [r.candidate.ref for r in result.ranked] == [r.candidate.ref for r in base.ranked]
    assert d.decision_signature != base.decision.decision_signature


def test_forced_base_never_calls_the_llm(kb, scripted):
    stub = scripted(hyde=corpus.HYDE_GOOD)
    result = compute_context(corpus.WEAK_QUERY, profile="focused", mode="base", runtime=kb.runtime(llm=stub))
    d = result.decision
    assert (d.route, d.winner, d.reason) == ("base", "base", "base mode forced")
    assert d.weak is True and d.auto_triggered is False  # recorded, but it routes nothing
    assert pass_names(result) == ["base"] and stub.requests == []


@pytest.mark.parametrize("mode", ["hyde", "rewrite", "reverse"])
def test_forced_mode_routes_before_the_weak_check(kb, scripted, mode):
    # A strong question and a misleading LLM reply: the forced mode runs anyway and its set is used
    # (no judge), which is what forcing means.
    stub = scripted(hyde=corpus.HYDE_BAD, rewrite=corpus.HYDE_BAD, reverse=corpus.HYDE_BAD)
    result = compute_context(corpus.STRONG_QUERY, profile="focused", mode=mode, runtime=kb.runtime(llm=stub))
    d = result.decision
    assert d.weak is None and d.weak_signals == []
    assert (d.mode, d.route, d.winner) == (mode, mode, mode)
    assert pass_names(result) == ["base", mode]
    assert chat_kinds(stub) == [mode]
    assert sources(result) <= set(STORIES) | {"ops/zorblax-maintenance.md"}
    assert len(sources(result) & set(STORIES)) >= 2


@pytest.mark.parametrize("profile, mode", [("focused", "multi"), ("focused_multi", "auto")])
def test_multi_query_fusion(kb, scripted, profile, mode):
    """`mode=multi`, or a profile with ragMultiQueryMode, fuses the question with LLM variants by RRF."""
    base = compute_context(corpus.STRONG_QUERY, profile="focused", mode="base", runtime=kb.runtime())
    assert "misc/lighthouse.md" not in sources(base)

    stub = scripted(multi="lighthouse keeper storms shipwrecks gulls\nlighthouse children cliffs waves")
    result = compute_context(corpus.STRONG_QUERY, profile=profile, mode=mode, runtime=kb.runtime(llm=stub))
    d = result.decision
    assert (d.route, d.winner, d.multi_query_ran) == ("multi", "multi", True)
    last = d.passes[-1]
    assert (last.name, last.count, last.queries) == ("multi", 3, 3)
    assert isinstance(last.top_similarity, float)
    assert "fused by reciprocal rank fusion" in d.reason
    assert chat_kinds(stub) == ["multi"] and "Give 3 different" in stub.requests[0]["messages"][-1]["content"]
    found = sources(result)
    assert "misc/lighthouse.md" in found  # only the variants match it
    assert "ops/zorblax-maintenance.md" in found  # the question's own best note survives the fusion
    assert all(r.candidate.rrf_score is not None for r in result.ranked)


def test_no_llm_auto_rewrites_by_prf_and_skips_hyde(kb):
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=kb.runtime())
    d = result.decision
    assert (d.weak, d.route, d.auto_triggered) == (True, "prf", True)
    assert "no LLM configured: rewrite by pseudo-relevance feedback, HyDE skipped" in d.notes
    assert pass_names(result) == ["base", "rewrite"]
    assert d.winner in ("base", "rewrite") and "margin" in d.reason


@pytest.mark.parametrize("mode, reason", [("hyde", "HyDE skipped: no LLM configured"),
                                          ("reverse", "reverse skipped: no LLM configured")])
def test_forced_llm_modes_without_llm_use_base(kb, mode, reason):
    result = compute_context(corpus.WEAK_QUERY, profile="focused", mode=mode, runtime=kb.runtime())
    assert (result.decision.winner, result.decision.reason) == ("base", reason)
    assert pass_names(result) == ["base"]


def test_forced_rewrite_and_multi_without_llm_use_prf(kb):
    rt = kb.runtime()
    rewrite = compute_context(corpus.WEAK_QUERY, profile="focused", mode="rewrite", runtime=rt).decision
    assert rewrite.winner == "rewrite"
    assert rewrite.notes == ["rewrite by pseudo-relevance feedback (no LLM configured)"]
    multi = compute_context(corpus.WEAK_QUERY, profile="focused", mode="multi", runtime=rt).decision
    assert multi.notes == ["multi-query variants from pseudo-relevance feedback"]
    assert multi.passes[-1].queries == 2 and multi.multi_query_ran is True


def test_llm_error_falls_back_to_base_and_is_recorded(kb, llm_stub):
    base = compute_context(corpus.WEAK_QUERY, profile="focused", mode="base", runtime=kb.runtime())
    llm_stub.fail_status = 500
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=kb.runtime(llm=llm_stub))
    d = result.decision
    assert (d.route, d.winner, d.reason) == ("correct", "base", "LLM correction failed: base pass used")
    # HyDE and rewrite are asked at once (one wait, not two), so both failures are on record
    failed = sorted(d.llm_failures)
    assert [f.split(": ", 1)[0] for f in failed] == ["hyde", "rewrite"]
    assert all(f.split(": ", 1)[1].startswith("LLM call to openai/stub failed") for f in failed)
    assert len(llm_stub.requests_to("/chat/completions")) == 2
    assert [r.candidate.ref for r in result.ranked] == [r.candidate.ref for r in base.ranked]
    assert result.context == base.context


def test_llm_timeout_costs_one_timeout_and_base_is_used(kb, llm_stub):
    llm_stub.delay_s = 2.5
    rt = kb.runtime(llm=llm_stub, timeout_s=1.0)
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=rt)
    d = result.decision
    assert d.winner == "base" and len(d.llm_failures) == 2
    assert all("timeout" in f.lower() for f in d.llm_failures)
    # HyDE and rewrite were asked at once: the slow LLM was waited on once, then the base pass was used
    assert len(llm_stub.requests_to("/chat/completions")) == 2
    assert result.ranked and not result.insufficient


def test_step_timings_are_reported_and_nest(kb, scripted):
    result = compute_context(corpus.STRONG_QUERY, profile="focused", mode="base", runtime=kb.runtime())
    t = result.timings_ms
    assert set(t) == {"embed_ms", "base_pass_ms", "retrieval_ms", "assembly_ms", "total_ms"}
    assert 0 < t["embed_ms"] <= t["base_pass_ms"] <= t["retrieval_ms"] <= t["total_ms"]
    assert t["retrieval_ms"] + t["assembly_ms"] <= t["total_ms"] + 1e-6
    assert "timings_ms" not in result.to_dict()  # the HTTP contract is unchanged
