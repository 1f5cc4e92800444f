"""What notes `ask` and `search` return: the answer with its references, or ranked passages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag.notes.format import file_name


@dataclass(frozen=True)
class Reference:
    vault: str
    source_path: str
    heading_path: str
    ordinal: int
    start_line: int | None
    end_line: int | None
    snippet: str

    @property
    def lines(self) -> str | None:
        if self.start_line is None:
            return None
        end = self.end_line if self.end_line is not None else self.start_line
        return f"{self.start_line}-{end}" if end != self.start_line else f"{self.start_line}"

    def to_dict(self) -> dict[str, Any]:
        return {"vault": self.vault, "source_path": self.source_path, "file": file_name(self.source_path),
                "heading_path": self.heading_path, "ordinal": self.ordinal, "lines": self.lines,
                "start_line": self.start_line, "end_line": self.end_line, "snippet": self.snippet,
                # deprecated names of source_path and ordinal, kept for existing callers (docs/glossary.md)
                "rel_path": self.source_path, "chunk_index": self.ordinal}


@dataclass(frozen=True)
class AskResponse:
    answer: str
    references: list[Reference]
    abstained: bool
    abstain_reason: str | None
    debug: dict[str, Any] | None = None
    answered_by: str = "llm"  # "llm", "extractive" or "none" (abstained)
    notice: str | None = None  # a plain sentence for the reader, e.g. that the answer quotes the notes
    confidence: str | None = None  # "normal" or "low"; None when abstained

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "answer": self.answer, "references": [r.to_dict() for r in self.references],
            "abstained": self.abstained, "abstain_reason": self.abstain_reason,
            "answered_by": self.answered_by, "notice": self.notice, "confidence": self.confidence,
        }
        if self.debug is not None:
            out["debug"] = self.debug
        return out


@dataclass(frozen=True)
class SearchItem:
    vault: str
    source_path: str
    heading_path: str
    ordinal: int
    start_line: int | None
    end_line: int | None
    snippet: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"vault": self.vault, "source_path": self.source_path, "heading_path": self.heading_path,
                "ordinal": self.ordinal, "start_line": self.start_line, "end_line": self.end_line,
                "snippet": self.snippet, "score": self.score,
                "chunk_index": self.ordinal}  # deprecated name of ordinal (docs/glossary.md)


@dataclass(frozen=True)
class SearchResponse:
    query: str
    items: list[SearchItem] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "items": [i.to_dict() for i in self.items]}
