"""Result types shared by retrieval, ranking, context assembly and answering, and the retrieval modes.

Score names say their direction: `similarity` (cosine, higher is better), `bm25_score`
(higher is better), `rrf_score` (higher is better), `final` (higher is better).

`Record` is the base of every record a result hands to its caller and the HTTP API serialises
(the decision here, citations and evidence in `rag.context`, notes answers in `rag.notes.results`):
declared once, typed for the library's users, and the server's response models as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

# How compute_context routes after the base pass (rag.retrieval.autorag): the one list of modes,
# which profiles, the public entry points and the HTTP contract all take.
Mode = Literal["auto", "base", "hyde", "rewrite", "multi", "reverse"]
MODES: tuple[Mode, ...] = get_args(Mode)


@dataclass(frozen=True)
class ChunkSpan:
    """A chunk of a document as the index stores it: its place (ordinal, heading trail, lines and
    bytes), its text with the text's token count, and the injection flags. The chunk the indexer
    writes (`rag.ingest.store.PreparedChunk`) and the one `get_chunk` reads back
    (`rag.retrieval.chunks.ChunkRecord`) are this with their own additions. Byte offsets serve
    assembly only and never appear in JSON."""

    ordinal: int
    heading_path: str
    content: str
    token_count: int
    start_line: int | None
    end_line: int | None
    start_byte: Annotated[int | None, Field(exclude=True)]
    end_byte: Annotated[int | None, Field(exclude=True)]
    risk_flags: list[str]
    risk_score: float


@dataclass(frozen=True)
class Candidate:
    """One chunk found by some retrieval pass, before ranking."""

    chunk_id: int
    vault: str
    source_path: str
    ordinal: int
    heading_path: str
    content: str
    metadata: Mapping[str, Any]
    similarity: float | None = None
    bm25_score: float | None = None
    rrf_score: float | None = None
    vector_rank: int | None = None
    lexical_rank: int | None = None
    start_line: int | None = None
    end_line: int | None = None
    start_byte: int | None = None
    end_byte: int | None = None
    risk_score: float = 0.0
    risk_flags: tuple[str, ...] = ()
    token_count: int | None = None  # of `content`, counted at index time (rag.tokens.count_tokens)

    @property
    def ref(self) -> str:
        """The stable address of a chunk: vault/source_path#ordinal."""
        return f"{self.vault}/{self.source_path}#{self.ordinal}"


@dataclass(frozen=True)
class ScoreBreakdown:
    vector: float | None
    lexical: float | None
    fused: float
    weights_applied: Mapping[str, float] = field(default_factory=dict)
    penalty: float = 0.0
    final: float = 0.0


@dataclass(frozen=True)
class RankedChunk:
    candidate: Candidate
    scores: ScoreBreakdown
    rank: int


class Record(BaseModel):
    """A typed, immutable result record; `model_dump(mode="json")` is its JSON form."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class PassRecord(Record):
    """One retrieval pass of a request. `queries` (texts fused in one call) and `top_similarity` are
    present only for the passes that have them."""

    name: str
    count: int
    top_similarity: float | None = None
    queries: int | None = None

    @model_serializer(mode="wrap")
    def _given_fields_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}


class Decision(Record):
    """How a request's candidates were found: the Auto-RAG path (mode → route → passes → winner),
    the weak-retrieval signals that chose it, and whether anything fit the context."""

    mode: str
    route: str
    auto_triggered: bool
    weak: bool | None
    weak_signals: list[str]
    top_similarity: float | None
    share_above_threshold: float | None
    winner: str
    reason: str
    margin: float | None
    passes: list[PassRecord]
    notes: list[str]
    llm_failures: list[str]
    multi_query_ran: bool
    facets: list[str]
    insufficient: bool
    lexical_backend: str | None
    decision_signature: str
