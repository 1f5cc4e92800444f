"""Builders for Candidates and RankedChunks (the orchestrator pieces are pure Python)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag.types import Candidate, RankedChunk, ScoreBreakdown

_ids = iter(range(1, 10**9))


def cand(source_path: str = "a.md", ordinal: int = 0, content: str = "text", *, vault: str = "v",
         heading_path: str = "", metadata: dict[str, Any] | None = None, **fields: Any) -> Candidate:
    return Candidate(chunk_id=next(_ids), vault=vault, source_path=source_path, ordinal=ordinal,
                     heading_path=heading_path, content=content, metadata=metadata or {}, **fields)


def ranked(candidates: Sequence[Candidate]) -> list[RankedChunk]:
    """Rank in the given order, with a descending final score."""
    n = len(candidates)
    return [RankedChunk(c, ScoreBreakdown(vector=None, lexical=None, fused=float(n - i), final=float(n - i)), i + 1)
            for i, c in enumerate(candidates)]


@dataclass(frozen=True)
class Doc:
    """A synthetic source text and its sliding-window chunks (offsets really slice `text`)."""

    vault: str
    source_path: str
    text: str
    chunks: tuple[Candidate, ...]
    window: int
    stride: int

    def span(self, start_byte: int, end_byte: int) -> str:
        return self.text.encode("utf-8")[start_byte:end_byte].decode("utf-8")


def windows(text: str, window: int, stride: int) -> list[tuple[int, int]]:
    """Character windows [start, end) covering `text`; stride ≤ window so neighbours overlap or touch.
    The last window ends at the end of the text and is full length (no short tail chunk)."""
    out, start = [], 0
    while True:
        start = max(0, min(start, len(text) - window))
        end = min(len(text), start + window)
        out.append((start, end))
        if end == len(text):
            return out
        start += stride


def make_doc(source_path: str, text: str, window: int, stride: int, *, vault: str = "v",
             title: str | None = None, heading: str = "Sec") -> Doc:
    chunks = []
    for ordinal, (s, e) in enumerate(windows(text, window, stride)):
        start_byte, end_byte = len(text[:s].encode()), len(text[:e].encode())
        start_line = text[:s].count("\n") + 1
        content = text[s:e]
        chunks.append(cand(source_path, ordinal, content, vault=vault, heading_path=heading,
                           metadata={"title": title} if title else {},
                           start_byte=start_byte, end_byte=end_byte, start_line=start_line,
                           end_line=start_line + content.count("\n")))
    return Doc(vault, source_path, text, tuple(chunks), window, stride)
