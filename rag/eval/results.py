"""What a search returns to the evaluation, and what the evaluation reports."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rag.eval.golden import ALL_SPLITS, CHUNK_REF_SEPARATOR, GoldenCase


@dataclass(frozen=True)
class RankedHit:
    """One retrieved chunk (or document, when `ordinal` is None), in rank order."""

    source_path: str
    ordinal: int | None = None

    @property
    def chunk_ref(self) -> str | None:
        if self.ordinal is None:
            return None
        return f"{self.source_path}{CHUNK_REF_SEPARATOR}{self.ordinal}"


@dataclass(frozen=True)
class EvalHit:
    """The result of running one case: a ranking, optionally an answer and an abstention flag.

    `abstained=None` means the system has no notion of abstaining (plain retrieval); it then
    counts as abstaining exactly when it returned nothing.
    """

    items: tuple[RankedHit, ...] = ()
    answer: str | None = None
    abstained: bool | None = None

    @classmethod
    def from_pairs(
        cls,
        pairs: Iterable[tuple[str, int | None]],
        *,
        answer: str | None = None,
        abstained: bool | None = None,
    ) -> EvalHit:
        items = tuple(RankedHit(path, ordinal) for path, ordinal in pairs)
        return cls(items=items, answer=answer, abstained=abstained)

    @property
    def did_abstain(self) -> bool:
        return self.abstained if self.abstained is not None else not self.items


@dataclass(frozen=True)
class CaseResult:
    case: GoldenCase
    k: int  # metric cutoff (the run's k)
    depth: int  # results asked of the search (the case's k, else the run's)
    sources: tuple[str, ...]  # document ranking: each source path at its first hit
    chunk_refs: tuple[str, ...]
    expected_ranks: Mapping[str, int | None]  # must-include and acceptable paths -> 1-based rank
    missing_sources: tuple[str, ...]  # must-include paths not within the top k
    missing_chunk_refs: tuple[str, ...]
    metrics: Mapping[str, float]
    abstained: bool
    forbidden_claim_hits: tuple[str, ...] = ()
    answer: str | None = None
    expected_fact_hits: tuple[str, ...] = ()  # the case's expected facts the answer contains

    @property
    def abstention_correct(self) -> bool:
        return self.abstained == self.case.expect_abstain

    @property
    def fact_missing(self) -> bool:
        """An answer text was scored for expected facts and contains none of them."""
        return bool(self.case.expected_facts) and self.answer is not None and not self.expected_fact_hits

    @property
    def passed(self) -> bool:
        return (
            self.abstention_correct
            and not self.missing_sources
            and not self.missing_chunk_refs
            and not self.forbidden_claim_hits
            and not self.fact_missing
        )


@dataclass(frozen=True)
class EvalSummary:
    metrics: Mapping[str, float]  # mean over the cases each metric applies to
    counts: Mapping[str, int]  # how many cases each metric averages
    k: int
    cases: int
    passed: int
    forbidden_claim_hits: int = 0
    profile: str | None = None
    mode: str | None = None
    split: str = ALL_SPLITS  # which cases were selected: dev, test or all

    @property
    def metric_set(self) -> tuple[str, ...]:
        return tuple(sorted(self.metrics))


@dataclass(frozen=True)
class EvalReport:
    golden_path: Path
    results: tuple[CaseResult, ...]
    summary: EvalSummary  # over every selected case
    # One summary per split among the selected cases; empty when the cases carry no split.
    splits: Mapping[str, EvalSummary] = field(default_factory=dict)
