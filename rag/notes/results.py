"""What notes `ask` and `search` return: the answer with its references, or ranked passages.

The records are declared here once: the library returns them, `to_dict` is their JSON, and the
HTTP API serves them as its response models (POST /v1/ask, /v1/search).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, computed_field

from rag.notes.ask_trace import AnswerDecision, AskTrace, Detail, RuleName
from rag.notes.format import file_name
from rag.places import location, obsidian_target, shown_heading
from rag.types import Record

__all__ = ["AnswerDecision", "AnsweredBy", "AskResponse", "AskTrace", "Confidence", "Detail", "NoteHit", "Passage",
           "Reference", "RuleName", "SearchBy", "SearchItem", "SearchResponse", "group_by_note"]

AnsweredBy = Literal["llm", "extractive", "none"]
Confidence = Literal["normal", "low"]


class Passage(Record):
    """A passage of a note: where it is (`heading_path` as stored, `heading` and `location` as the reader
    sees them, rag.places), and an excerpt."""

    vault: str
    source_path: str
    heading_path: str
    ordinal: int
    start_line: int | None
    end_line: int | None
    snippet: str

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form
    @property
    def heading(self) -> str:
        """The heading path as the reader sees it: `Project Heron › Timeline`."""
        return shown_heading(self.source_path, self.heading_path)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def location(self) -> str | None:
        """Where in the file: `p. 3` in a PDF, `card "..."` in a canvas, else `lines 3-9`."""
        return location(self.source_path, self.heading_path, self.start_line, self.end_line)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def open_at(self) -> str:
        """The `file` of an `obsidian://open` link to the passage: `path#Heading`, `file.pdf#page=3`."""
        return obsidian_target(self.source_path, self.heading_path)


class Reference(Passage):
    """A passage an answer draws on."""

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented form
    @property
    def file(self) -> str:
        """The file's name (the last part of `source_path`), as answers cite it."""
        return file_name(self.source_path)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def lines(self) -> str | None:
        """`start-end`, or one line number, or None when the lines are unknown."""
        if self.start_line is None:
            return None
        end = self.end_line if self.end_line is not None else self.start_line
        return f"{self.start_line}-{end}" if end != self.start_line else f"{self.start_line}"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class AskResponse(Record):
    """The answer with the passages it cites; `decision` says why it answered or abstained (its `rule`)."""

    answer: str
    references: list[Reference]
    abstained: bool
    decision: AnswerDecision
    answered_by: AnsweredBy = "llm"  # "none" when abstained before answering
    notice: str | None = None  # a plain sentence for the reader, e.g. that the answer quotes the notes
    confidence: Confidence | None = None  # None when abstained
    debug: AskTrace | None = Field(default=None, description="How the answer was reached; when debug=true.")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; `debug` only when it was asked for."""
        return self.model_dump(mode="json", exclude=None if self.debug is not None else {"debug"})


class SearchItem(Passage):
    """A passage found by `search`, with its final ranking score."""

    score: float


SearchBy = Literal["note", "passage"]


class NoteHit(Record):
    """A note found by `search`: its best passages under it, best first. `score` is its best passage's."""

    vault: str
    source_path: str
    score: float
    passages: list[SearchItem]


class SearchResponse(Record):
    """By note (the default): `notes` are the k best distinct notes, each with its best passages, and
    `items` those passages in the same order, note by note. By passage: `items` are the k best passages
    (several may come from one note) and `notes` groups them."""

    query: str
    by: SearchBy = "note"
    notes: list[NoteHit] = Field(default_factory=list)
    items: list[SearchItem] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def group_by_note(ranked: Sequence[SearchItem], *, k: int, by: SearchBy, passages_per_note: int) -> list[NoteHit]:
    """Notes in the order of their best passage. By note: the first k notes, each with at most
    `passages_per_note` passages; by passage: the first k passages, grouped."""
    notes: dict[tuple[str, str], list[SearchItem]] = {}
    taken = 0
    for item in ranked:
        key = (item.vault, item.source_path)
        if by == "passage":
            if taken == k:
                break
            notes.setdefault(key, []).append(item)
            taken += 1
        elif key in notes:
            if len(notes[key]) < passages_per_note:
                notes[key].append(item)
        elif len(notes) < k:
            notes[key] = [item]
    return [NoteHit(vault=v, source_path=p, score=items[0].score, passages=items) for (v, p), items in notes.items()]
