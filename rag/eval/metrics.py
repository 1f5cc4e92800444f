"""Scores one case and summarises a run.

Relevance grades, one convention for every metric:
  * must_include_source_paths, and the source path of each must_include_chunk_ref: grade 2
  * acceptable_source_paths: grade 1

Per case, over the document ranking (each source path at its first hit), k = the run's k:
  * recall@k       share of grade-2 sources within the top k; acceptable ones do not count
  * recall@5       the same at a fixed cutoff of 5 (what a short answer draws on), reported
                   for every k so runs at different depths still share one number
  * mrr@k          1 / rank of the first source of grade >= 1 within the top k (0 if none)
  * ndcg@10        graded nDCG with trec_eval's linear gains (2, 1) and log2 discount
  * chunk_recall@k share of must_include_chunk_refs among the top-k chunks
  * abstention_accuracy   1 when the system abstained iff the case expects it
  * abstain_on_unanswerable   expect_abstain cases only: 1 when the system abstained
  * answered_when_answerable  the other cases: 1 when it did not abstain (the report also
                              prints "wrongly abstained", 1 minus this)
  * answer_fact           answerable cases that list expected_facts and got an answer text
                          (hit.answer is not None): 1 when the system did not abstain and
                          the answer's words (its `[File: ...]` citation labels taken out)
                          contain one of the facts
  * forbidden_claim_free  1 when the answer states none of the forbidden claims
Claims and facts are matched as whole words after casefolding, with punctuation turned into
spaces (`rag.eval.text.normalise`). Cases with expect_abstain are scored only for abstention
(and forbidden claims). A metric
applies to a case only when the case defines what it needs (e.g. recall needs a grade-2
source); the summary is the mean over the cases each metric applies to. Every metric is
higher-is-better, so one baseline rule covers all of them.

The IR numbers come from ir_measures through its pytrec_eval provider (trec_eval semantics),
pinned to that one provider so results do not depend on which optional backends exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import ir_measures
from ir_measures import RR, Measure, Qrel, R, ScoredDoc, nDCG

from rag.eval.golden import ALL_SPLITS, SPLITS, GoldenCase
from rag.eval.results import CaseResult, EvalHit, EvalSummary
from rag.eval.text import phrase_hits
from rag.notes.citations import without_citations

GRADE_MUST_INCLUDE = 2
GRADE_ACCEPTABLE = 1
NDCG_CUTOFF = 10
RECALL_FIXED_CUTOFF = 5
DEFAULT_K = 10
ABSTENTION_ACCURACY = "abstention_accuracy"
ABSTAIN_ON_UNANSWERABLE = "abstain_on_unanswerable"
ANSWERED_WHEN_ANSWERABLE = "answered_when_answerable"
ANSWER_FACT = "answer_fact"
FORBIDDEN_CLAIM_FREE = "forbidden_claim_free"
_QUERY_ID = "q"  # ir_measures scores one case at a time


def recall_name(k: int) -> str:
    return f"recall@{k}"


def mrr_name(k: int) -> str:
    return f"mrr@{k}"


def ndcg_name() -> str:
    return f"ndcg@{NDCG_CUTOFF}"


def chunk_recall_name(k: int) -> str:
    return f"chunk_recall@{k}"


def relevance_grades(case: GoldenCase) -> dict[str, int]:
    grades = dict.fromkeys(case.acceptable_source_paths, GRADE_ACCEPTABLE)
    grades.update(dict.fromkeys(must_include_paths(case), GRADE_MUST_INCLUDE))
    return grades


def must_include_paths(case: GoldenCase) -> tuple[str, ...]:
    """Must-include sources: those listed, plus the source of every must-include chunk."""
    return _unique([*case.must_include_source_paths, *(ref.source_path for ref in case.must_include_chunk_refs)])


def _unique(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v is not None))


def source_ranking(hit: EvalHit) -> tuple[str, ...]:
    return _unique(item.source_path for item in hit.items)


def chunk_ranking(hit: EvalHit) -> tuple[str, ...]:
    return _unique(item.chunk_ref for item in hit.items)


def ir_scores(grades: Mapping[str, int], ranking: Sequence[str], measures: Mapping[str, Measure]) -> dict[str, float]:
    """Scores one ranking with ir_measures; `measures` maps our metric names to ir_measures measures."""
    values = dict.fromkeys(measures, 0.0)
    if not ranking or not grades:
        return values  # trec_eval skips queries without a run or judgements; both mean 0 here
    qrels = [Qrel(_QUERY_ID, doc, grade) for doc, grade in grades.items()]
    # Strictly decreasing scores: trec_eval orders by score, and ties would reorder by doc id.
    run = [ScoredDoc(_QUERY_ID, doc, float(len(ranking) - i)) for i, doc in enumerate(ranking)]
    by_measure = {measure: name for name, measure in measures.items()}
    for metric in ir_measures.pytrec_eval.iter_calc(list(measures.values()), qrels, run):
        values[by_measure[metric.measure]] = float(metric.value)
    return values


def retrieval_metrics(case: GoldenCase, hit: EvalHit, k: int) -> dict[str, float]:
    if case.expect_abstain:
        return {}
    grades = relevance_grades(case)
    measures: dict[str, Measure] = {}
    if GRADE_MUST_INCLUDE in grades.values():
        measures[recall_name(k)] = R(rel=GRADE_MUST_INCLUDE) @ k
        measures[recall_name(RECALL_FIXED_CUTOFF)] = R(rel=GRADE_MUST_INCLUDE) @ RECALL_FIXED_CUTOFF
    if grades:
        measures[mrr_name(k)] = RR(rel=GRADE_ACCEPTABLE) @ k
        measures[ndcg_name()] = nDCG @ NDCG_CUTOFF
    values = ir_scores(grades, source_ranking(hit), measures)
    if case.must_include_chunk_refs:
        chunk_grades = {str(ref): GRADE_ACCEPTABLE for ref in case.must_include_chunk_refs}
        values |= ir_scores(chunk_grades, chunk_ranking(hit), {chunk_recall_name(k): R @ k})
    return values


def forbidden_claim_hits(answer: str | None, claims: Iterable[str]) -> tuple[str, ...]:
    """The claims the answer states, matched as whole words after normalisation."""
    return phrase_hits(answer, tuple(claims))


def expected_fact_hits(answer: str | None, facts: Iterable[str]) -> tuple[str, ...]:
    """The expected facts the answer's own words contain, matched exactly as forbidden claims are. Its
    citation labels do not count: "[File: File recovery.md, ...]" names a note, not what was said."""
    return phrase_hits(without_citations(answer) if answer else answer, tuple(facts))


def answer_metrics(case: GoldenCase, hit: EvalHit, fact_hits: tuple[str, ...]) -> dict[str, float]:
    """Abstention split by what the case expects, and whether an answer carries a fact.

    Both abstention rates are kept higher-is-better ("answered when answerable" rather than
    "wrongly abstained") so the one baseline rule, "must not drop", covers them too.
    """
    if case.expect_abstain:
        return {ABSTAIN_ON_UNANSWERABLE: float(hit.did_abstain)}
    values = {ANSWERED_WHEN_ANSWERABLE: float(not hit.did_abstain)}
    if case.expected_facts and hit.answer is not None:
        values[ANSWER_FACT] = float(not hit.did_abstain and bool(fact_hits))
    return values


def score_case(case: GoldenCase, hit: EvalHit, k: int, depth: int) -> CaseResult:
    sources, chunks = source_ranking(hit), chunk_ranking(hit)
    rank = {path: i + 1 for i, path in enumerate(sources)}
    must = must_include_paths(case)
    expected = must + case.acceptable_source_paths
    top_chunks = set(chunks[:k])
    metrics = retrieval_metrics(case, hit, k)
    metrics[ABSTENTION_ACCURACY] = float(hit.did_abstain == case.expect_abstain)
    facts = expected_fact_hits(hit.answer, case.expected_facts)
    metrics |= answer_metrics(case, hit, facts)
    hits = forbidden_claim_hits(hit.answer, case.forbidden_claims)
    if case.forbidden_claims and hit.answer is not None:
        metrics[FORBIDDEN_CLAIM_FREE] = float(not hits)
    return CaseResult(
        case=case,
        k=k,
        depth=depth,
        sources=sources,
        chunk_refs=chunks,
        expected_ranks={path: rank.get(path) for path in expected},
        missing_sources=tuple(p for p in must if rank.get(p, k + 1) > k),
        missing_chunk_refs=tuple(str(r) for r in case.must_include_chunk_refs if str(r) not in top_chunks),
        metrics=metrics,
        abstained=hit.did_abstain,
        forbidden_claim_hits=hits,
        answer=hit.answer,
        expected_fact_hits=facts,
    )


def summarize(results: Sequence[CaseResult], k: int, *, profile: str | None = None,
              mode: str | None = None, split: str = ALL_SPLITS) -> EvalSummary:
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for result in results:
        for name, value in result.metrics.items():
            totals[name] = totals.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    return EvalSummary(
        metrics={name: totals[name] / counts[name] for name in sorted(totals)},
        counts=dict(sorted(counts.items())),
        k=k,
        cases=len(results),
        passed=sum(r.passed for r in results),
        forbidden_claim_hits=sum(len(r.forbidden_claim_hits) for r in results),
        profile=profile,
        mode=mode,
        split=split,
    )


def summarize_splits(results: Sequence[CaseResult], k: int, *, profile: str | None = None,
                     mode: str | None = None) -> dict[str, EvalSummary]:
    """One summary per split present among the results (none when the cases carry no split)."""
    return {
        split: summarize(chosen, k, profile=profile, mode=mode, split=split)
        for split in SPLITS
        if (chosen := [r for r in results if r.case.split == split])
    }
