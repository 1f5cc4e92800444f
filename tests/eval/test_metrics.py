"""Metrics on tiny runs whose values are worked out by hand in the comments.

Conventions under test (rag/eval/metrics.py): must-include sources grade 2, acceptable grade 1;
recall counts grade 2 only; MRR takes the first source of grade >= 1; nDCG@10 uses trec_eval's
linear gains (2, 1) and a log2(rank + 1) discount; abstain cases only score abstention;
the split abstention rates and the answer-fact rate apply to the cases the docstring names.
"""

from __future__ import annotations

import math

import pytest

from rag.eval import ChunkRef, EvalHit, GoldenCase
from rag.eval.metrics import (
    ABSTAIN_ON_UNANSWERABLE,
    ABSTENTION_ACCURACY,
    ANSWER_FACT,
    ANSWERED_WHEN_ANSWERABLE,
    FORBIDDEN_CLAIM_FREE,
    expected_fact_hits,
    forbidden_claim_hits,
    relevance_grades,
    score_case,
    summarize,
    summarize_splits,
)


def case(case_id: str = "c", **fields: object) -> GoldenCase:
    return GoldenCase(id=case_id, query="q", index=1, **fields)  # type: ignore[arg-type]


def hit(*paths: str, answer: str | None = None, abstained: bool | None = None) -> EvalHit:
    return EvalHit.from_pairs(((p, i) for i, p in enumerate(paths)), answer=answer, abstained=abstained)


def test_grades_must_two_acceptable_one_chunk_refs_imply_must() -> None:
    c = case(must_include_source_paths=("a.md",), acceptable_source_paths=("b.md",),
             must_include_chunk_refs=(ChunkRef("c.md", 4),))
    assert relevance_grades(c) == {"a.md": 2, "b.md": 1, "c.md": 2}


def test_must_and_acceptable_in_one_ranking() -> None:
    # must a.md (grade 2), acceptable b.md (grade 1); ranking x, b, a.
    # recall@10 = 1/1 (a is in the top 10; b does not count)
    # mrr@10    = 1/2 (b at rank 2 is the first source with grade >= 1)
    # ndcg@10: DCG  = 1/log2(3) + 2/log2(4) = 0.630930 + 1.0 = 1.630930
    #          IDCG = 2/log2(2) + 1/log2(3) = 2.0 + 0.630930 = 2.630930  ->  0.619906
    result = score_case(case(must_include_source_paths=("a.md",), acceptable_source_paths=("b.md",)),
                        hit("x.md", "b.md", "a.md"), k=10, depth=10)
    assert result.metrics["recall@10"] == 1.0
    assert result.metrics["mrr@10"] == 0.5
    assert result.metrics["ndcg@10"] == pytest.approx(0.619906, abs=1e-6)
    assert result.metrics[ABSTENTION_ACCURACY] == 1.0  # answered, as expected
    assert result.expected_ranks == {"a.md": 3, "b.md": 2}
    assert result.missing_sources == () and result.passed


def test_cutoff_k_applies_to_recall_and_mrr_not_ndcg() -> None:
    # must a.md and c.md; ranking a, x, y, c; k = 3.
    # recall@3 = 1/2 (c is at rank 4, beyond k); mrr@3 = 1/1 (a at rank 1)
    # ndcg@10: DCG  = 2/log2(2) + 2/log2(5) = 2 + 0.861353 = 2.861353
    #          IDCG = 2/log2(2) + 2/log2(3) = 2 + 1.261860 = 3.261860  ->  0.877215
    result = score_case(case(must_include_source_paths=("a.md", "c.md")),
                        hit("a.md", "x.md", "y.md", "c.md"), k=3, depth=4)
    assert result.metrics["recall@3"] == 0.5
    assert result.metrics["recall@5"] == 1.0  # the fixed cutoff sees c at rank 4
    assert result.metrics["mrr@3"] == 1.0
    assert result.metrics["ndcg@10"] == pytest.approx((2 + 2 / math.log2(5)) / (2 + 2 / math.log2(3)))
    assert result.metrics["ndcg@10"] == pytest.approx(0.877215, abs=1e-6)
    assert result.missing_sources == ("c.md",) and not result.passed
    assert result.expected_ranks["c.md"] == 4


def test_document_ranking_uses_first_hit_of_each_source() -> None:
    # Chunks a#0, a#1, b#0, a#2 rank documents a (1), b (2): later chunks of a do not push b down.
    # chunk_recall@10 over refs a.md#1 and a.md#7: only a.md#1 retrieved -> 1/2.
    h = EvalHit.from_pairs([("a.md", 0), ("a.md", 1), ("b.md", 0), ("a.md", 2)])
    result = score_case(case(acceptable_source_paths=("b.md",),
                             must_include_chunk_refs=(ChunkRef("a.md", 1), ChunkRef("a.md", 7))), h, k=10, depth=10)
    assert result.sources == ("a.md", "b.md")
    assert result.metrics["chunk_recall@10"] == 0.5
    assert result.missing_chunk_refs == ("a.md#7",)
    # a.md is must-include through its chunk refs: recall 1/1, mrr 1/1, ndcg: ideal order -> 1.0
    assert result.metrics["recall@10"] == 1.0 and result.metrics["mrr@10"] == 1.0
    assert result.metrics["ndcg@10"] == pytest.approx(1.0)


def test_acceptable_only_case_has_no_recall() -> None:
    # No grade-2 source: recall is undefined and left out, MRR/nDCG still apply.
    result = score_case(case(acceptable_source_paths=("b.md",)), hit("b.md"), k=10, depth=10)
    assert "recall@10" not in result.metrics
    assert result.metrics["mrr@10"] == 1.0 and result.metrics["ndcg@10"] == 1.0


def test_empty_ranking_scores_zero_and_counts_as_abstaining() -> None:
    result = score_case(case(must_include_source_paths=("a.md",)), EvalHit(), k=10, depth=10)
    assert result.metrics == {"recall@10": 0.0, "recall@5": 0.0, "mrr@10": 0.0, "ndcg@10": 0.0,
                              ABSTENTION_ACCURACY: 0.0, ANSWERED_WHEN_ANSWERABLE: 0.0}
    assert result.abstained and not result.passed
    assert result.missing_sources == ("a.md",) and result.expected_ranks == {"a.md": None}


def test_abstain_case_scores_only_abstention() -> None:
    expected_abstain = case(expect_abstain=True)
    assert score_case(expected_abstain, hit(abstained=True), k=10, depth=10).metrics == {
        ABSTENTION_ACCURACY: 1.0, ABSTAIN_ON_UNANSWERABLE: 1.0}
    # Retrieval that returns something and does not say it abstained has answered: wrong here.
    answered = score_case(expected_abstain, hit("x.md"), k=10, depth=10)
    assert answered.metrics == {ABSTENTION_ACCURACY: 0.0, ABSTAIN_ON_UNANSWERABLE: 0.0} and not answered.passed
    # An explicit flag wins over the ranking (ask may list candidates and still abstain).
    assert score_case(expected_abstain, hit("x.md", abstained=True), k=10, depth=10).passed


def test_forbidden_claims_matching() -> None:
    claims = ("Sync is free", "credit is refundable")
    assert forbidden_claim_hits("Good news: sync   is FREE!", claims) == ("Sync is free",)
    assert forbidden_claim_hits("Sync is not free, and credit is not refundable.", claims) == ()
    assert forbidden_claim_hits("Sync is freedom", claims) == ()  # whole words only
    assert forbidden_claim_hits("Credit is refundable.", claims) == ("credit is refundable",)
    assert forbidden_claim_hits("\ufb01le is here", ("file is here",)) == ("file is here",)  # NFKC: "ﬁ" -> "fi"
    assert forbidden_claim_hits(None, claims) == () and forbidden_claim_hits("", claims) == ()


def test_forbidden_claim_metric_needs_claims_and_an_answer() -> None:
    c = case(must_include_source_paths=("a.md",), forbidden_claims=("sync is free",))
    stated = score_case(c, hit("a.md", answer="Sync is free."), k=10, depth=10)
    assert stated.metrics[FORBIDDEN_CLAIM_FREE] == 0.0 and stated.forbidden_claim_hits == ("sync is free",)
    assert not stated.passed
    assert score_case(c, hit("a.md", answer="It costs money."), k=10, depth=10).metrics[FORBIDDEN_CLAIM_FREE] == 1.0
    assert FORBIDDEN_CLAIM_FREE not in score_case(c, hit("a.md"), k=10, depth=10).metrics  # retrieval only


def test_summary_means_over_applicable_cases() -> None:
    # A: recall 1, mrr 1/2, answered (correct); B: nothing found, abstained (wrong);
    # C: expects abstention and abstains (correct).
    # recall@10 = (1 + 0) / 2 = 0.5; mrr@10 = (0.5 + 0) / 2 = 0.25; abstention = 2/3.
    a = score_case(case("A", must_include_source_paths=("a.md",), acceptable_source_paths=("b.md",)),
                   hit("x.md", "b.md", "a.md"), k=10, depth=10)
    b = score_case(case("B", must_include_source_paths=("a.md",)), EvalHit(), k=10, depth=10)
    c = score_case(case("C", expect_abstain=True), hit(abstained=True), k=10, depth=10)
    summary = summarize([a, b, c], 10, profile="notes", mode="auto")
    assert summary.metrics["recall@10"] == 0.5
    assert summary.metrics["mrr@10"] == 0.25
    assert summary.metrics["ndcg@10"] == pytest.approx(0.619906 / 2, abs=1e-6)
    assert summary.metrics[ABSTENTION_ACCURACY] == pytest.approx(2 / 3)
    assert summary.metrics[ABSTAIN_ON_UNANSWERABLE] == 1.0  # C
    assert summary.metrics[ANSWERED_WHEN_ANSWERABLE] == 0.5  # A answered, B abstained
    assert summary.counts == {ABSTAIN_ON_UNANSWERABLE: 1, ABSTENTION_ACCURACY: 3, ANSWERED_WHEN_ANSWERABLE: 2,
                              "mrr@10": 2, "ndcg@10": 2, "recall@10": 2, "recall@5": 2}
    assert summary.metric_set == (ABSTAIN_ON_UNANSWERABLE, ABSTENTION_ACCURACY, ANSWERED_WHEN_ANSWERABLE,
                                  "mrr@10", "ndcg@10", "recall@10", "recall@5")
    assert (summary.cases, summary.passed, summary.profile, summary.mode) == (3, 2, "notes", "auto")


def test_expected_facts_match_as_whole_words_like_forbidden_claims() -> None:
    facts = ("Ctrl+P", "end-to-end encryption", "10 GB")
    assert expected_fact_hits("Press CTRL + p to open it.", facts) == ("Ctrl+P",)  # punctuation -> spaces
    assert expected_fact_hits("Uses end to end encryption.", facts) == ("end-to-end encryption",)
    assert expected_fact_hits("You get 10 GB.", facts) == ("10 GB",)
    assert expected_fact_hits("You get 100 GB.", facts) == ()  # "10" is not a whole word of "100"
    assert expected_fact_hits(None, facts) == () and expected_fact_hits("", facts) == ()


def test_a_fact_named_only_by_a_citation_label_is_not_stated() -> None:
    # The label names the note a sentence came from; it says nothing about what the sentence holds.
    cited = "Select the snapshot you want. [File: File recovery.md, Section: Recover a snapshot]"
    assert expected_fact_hits(cited, ("File recovery",)) == ()
    assert expected_fact_hits(cited, ("snapshot",)) == ("snapshot",)
    assert expected_fact_hits("Use File recovery. [File: a.md, Section: b]", ("File recovery",)) == ("File recovery",)


def test_answer_fact_needs_facts_an_answer_text_and_no_abstention() -> None:
    c = case(must_include_source_paths=("a.md",), expected_facts=("Ctrl+P", "command palette"))
    stated = score_case(c, hit("a.md", answer="Open the Command Palette."), k=10, depth=10)
    assert stated.metrics[ANSWER_FACT] == 1.0 and stated.expected_fact_hits == ("command palette",)
    assert stated.passed
    missing = score_case(c, hit("a.md", answer="Use the sidebar."), k=10, depth=10)
    assert missing.metrics[ANSWER_FACT] == 0.0 and missing.fact_missing and not missing.passed
    # An abstention that happens to quote the fact is still no answer.
    abstained = score_case(c, hit("a.md", answer="Could not find it; maybe Ctrl+P?", abstained=True), k=10, depth=10)
    assert abstained.metrics[ANSWER_FACT] == 0.0 and abstained.metrics[ANSWERED_WHEN_ANSWERABLE] == 0.0
    # Plain retrieval has no answer text: the metric does not apply.
    assert ANSWER_FACT not in score_case(c, hit("a.md"), k=10, depth=10).metrics
    # Nor does it without facts to look for.
    assert ANSWER_FACT not in score_case(case(must_include_source_paths=("a.md",)),
                                         hit("a.md", answer="x"), k=10, depth=10).metrics


def test_split_abstention_rates_apply_to_their_own_cases() -> None:
    # Unanswerable U1 abstains, U2 answers; answerable A1 answers, A2 abstains, A3 answers.
    # abstain_on_unanswerable = 1/2; answered_when_answerable = 2/3; abstention_accuracy = 3/5.
    results = [
        score_case(case("U1", expect_abstain=True), hit(abstained=True), k=10, depth=10),
        score_case(case("U2", expect_abstain=True), hit("x.md", abstained=False), k=10, depth=10),
        score_case(case("A1", must_include_source_paths=("a.md",)), hit("a.md", abstained=False), k=10, depth=10),
        score_case(case("A2", must_include_source_paths=("a.md",)), hit("a.md", abstained=True), k=10, depth=10),
        score_case(case("A3", must_include_source_paths=("a.md",)), hit("b.md"), k=10, depth=10),
    ]
    summary = summarize(results, 10)
    assert summary.metrics[ABSTAIN_ON_UNANSWERABLE] == 0.5 and summary.counts[ABSTAIN_ON_UNANSWERABLE] == 2
    assert summary.metrics[ANSWERED_WHEN_ANSWERABLE] == pytest.approx(2 / 3)
    assert summary.counts[ANSWERED_WHEN_ANSWERABLE] == 3
    assert summary.metrics[ABSTENTION_ACCURACY] == pytest.approx(3 / 5)


def test_summaries_per_split() -> None:
    # dev: D1 found (recall 1); test: T1 found, T2 missed (recall 1/2).
    results = [
        score_case(case("D1", split="dev", must_include_source_paths=("a.md",)), hit("a.md"), k=10, depth=10),
        score_case(case("T1", split="test", must_include_source_paths=("a.md",)), hit("a.md"), k=10, depth=10),
        score_case(case("T2", split="test", must_include_source_paths=("a.md",)), hit("b.md"), k=10, depth=10),
    ]
    splits = summarize_splits(results, 10)
    assert list(splits) == ["dev", "test"]
    assert (splits["dev"].metrics["recall@10"], splits["dev"].cases, splits["dev"].split) == (1.0, 1, "dev")
    assert (splits["test"].metrics["recall@10"], splits["test"].cases, splits["test"].split) == (0.5, 2, "test")
    assert summarize_splits(results[1:], 10).keys() == {"test"}
    assert summarize_splits([score_case(case(must_include_source_paths=("a.md",)), hit("a.md"), k=10, depth=10)],
                            10) == {}
