"""What `compute_context` returns (`ContextResult`) and its JSON form (`ContextPayload`, the body of
POST /v1/context): the records are declared here once, and the server uses them as they are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from rag.context.assemble import Citation
from rag.context.evidence import EvidenceFull, EvidenceLlm
from rag.places import location, shown_heading
from rag.types import Decision, RankedChunk, Record, ScoreBreakdown


class ContextChunk(Record):
    """A ranked chunk as the JSON names it: where it is and how it scored (its text is in `context`
    when it was used)."""

    rank: int
    ref: str
    vault: str
    source_path: str
    ordinal: int
    heading_path: str
    start_line: int | None
    end_line: int | None
    scores: ScoreBreakdown
    heading: str = Field(description="The heading path as the reader sees it: `Project Heron › Timeline`.")
    location: str | None = Field(description="`p. 3` in a PDF, `card \"...\"` in a canvas, else `lines 3-9`.")

    @classmethod
    def of(cls, r: RankedChunk) -> ContextChunk:
        c = r.candidate
        return cls(rank=r.rank, ref=c.ref, vault=c.vault, source_path=c.source_path, ordinal=c.ordinal,
                   heading_path=c.heading_path, start_line=c.start_line, end_line=c.end_line, scores=r.scores,
                   heading=shown_heading(c.source_path, c.heading_path),
                   location=location(c.source_path, c.heading_path, c.start_line, c.end_line))


class ContextPayload(Record):
    """The JSON form of a `ContextResult`."""

    context: str
    citations: list[Citation]
    decision: Decision
    used: list[ContextChunk] = Field(description="The chunks whose text is in `context`, in context order.")
    ranked: list[ContextChunk] = Field(description="Every ranked candidate, best first.")
    insufficient: bool
    used_tokens: int
    evidence_full: EvidenceFull
    evidence_llm: EvidenceLlm


@dataclass(frozen=True)
class ContextResult:
    """What `compute_context` returns.

    `used` are the chunks whose text is in `context`, in the order they appear there; `ranked` is
    every ranked candidate, best first (most are left out by the budget or as duplicates). Both hold
    the chunks themselves (text, metadata, scores); the JSON form names them (`payload`).
    """

    context: str
    citations: list[Citation]
    ranked: list[RankedChunk]
    decision: Decision
    evidence_full: EvidenceFull
    evidence_llm: EvidenceLlm
    insufficient: bool
    used_tokens: int
    # Wall time of the steps, for benchmarks and logs: embed_ms (the query's embedding), base_pass_ms
    # (embedding + base retrieval pass), retrieval_ms (every pass), assembly_ms (ranking, context,
    # evidence), total_ms. Not part of the payload: the HTTP contract stays as it is.
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    used: list[RankedChunk] = field(default_factory=list)

    def payload(self) -> ContextPayload:
        return ContextPayload(
            context=self.context, citations=self.citations, decision=self.decision,
            used=[ContextChunk.of(r) for r in self.used], ranked=[ContextChunk.of(r) for r in self.ranked],
            insufficient=self.insufficient, used_tokens=self.used_tokens, evidence_full=self.evidence_full,
            evidence_llm=self.evidence_llm)

    def to_dict(self) -> dict[str, Any]:
        """The payload as JSON-ready data."""
        return self.payload().model_dump(mode="json")
