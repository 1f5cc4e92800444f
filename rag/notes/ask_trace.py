"""The record of how notes `ask` reached its answer: what `--debug`, `--explain`, the web page's "Why
this answer" and the Langfuse trace read, field by field.

Each stage of `ask` (rag.notes.ask) hands its part over as a typed value; `AskTrace` is built once
from them at the end and returned as `AskResponse.debug` when asked for. A renamed field is a type
error in every reader, not an empty explanation.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rag.types import Decision, Record

Detail = Literal["brief", "normal", "detailed"]
FoundBy = Literal["both", "lexical", "vector", "neither"]


RuleName = Literal["nothing_found", "names_missing", "model", "llm_declined", "only_flagged_text"]


class AnswerDecision(Record):
    """Why `ask` answered or abstained: the rule that decided, the named signals it read and plain-words
    reasons that agree with the outcome (`rag.notes.decision`). `message` is what the reader is told
    when the notes cover the topic but not the thing asked about."""

    abstain: bool
    rule: RuleName
    evidence_vault: str | None
    p_answerable: float | None = None
    threshold: float | None = None
    signals: dict[str, float] = Field(default_factory=dict)
    names: list[str] = Field(default_factory=list, description="The names and numbers the question asks about.")
    names_missing: list[str] = Field(default_factory=list)
    mentioned: list[str] = Field(default_factory=list, description="Words of the question the passages do use.")
    message: str | None = None
    reasons: list[str] = Field(default_factory=list)


class KTrace(Record):
    """How many passages the answer draws on, and why."""

    value: int
    requested: int | None
    reasons: list[str]


class SelectedFolder(Record):
    folder: str
    vault: str
    source: str
    weight: float


class FolderTrace(Record):
    """The folders searched and how they were weighted (`method`: llm, centroid, user, all or none)."""

    searched: list[str]
    prior_weight: float
    restricted_to: list[str]
    method: str
    selected: list[SelectedFolder] = Field(default_factory=list)
    available: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    llm_answer: str | None = None


class ScopeTrace(Record):
    """Where the question was searched: vaults, folders, and the one metadata filter they made."""

    vaults: list[str]
    folders: FolderTrace
    filter: dict[str, Any]


class CandidateTrace(Record):
    """One ranked passage: where it is, which search found it, its scores (higher is better)."""

    rank: int
    chunk_id: int
    vault: str
    path: str
    ordinal: int
    heading: str
    folder: str
    folder_prior: float
    found_by: FoundBy
    vector_rank: int | None
    lexical_rank: int | None
    vector: float | None
    lexical: float | None
    final: float
    lines: tuple[int | None, int | None]
    text: str


class LLMTrace(Record):
    """The language model's part: the context it was given and what became of the call."""

    model: str
    context_tokens: int
    passages: int
    left_out: int
    skipped: str | None = None
    error: str | None = None


class CitationTrace(Record):
    """Which passages (1-based, as shown) the answer's citations named; citations naming none."""

    matched_chunks: list[int]
    unmatched_citations: list[str] = Field(default_factory=list)
    matched_by_file_only: list[str] = Field(default_factory=list)


class AskTrace(Record):
    """Everything `ask` weighed, in the order it happened."""

    question: str
    detail: Detail
    k: KTrace
    scope: ScopeTrace | None = None
    retrieval: Decision | None = None
    candidates: list[CandidateTrace] = Field(default_factory=list)
    best_score: float | None = None
    sentences_scored: int = Field(0, description="Sentences embedded and scored (0 when nothing needed them).")
    decision: AnswerDecision | None = None
    confidence: Literal["normal", "low"] | None = None
    llm: LLMTrace | None = None
    citations: CitationTrace | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
