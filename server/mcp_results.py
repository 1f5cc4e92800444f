"""The MCP tools' structured results, and the ONE place the library's result types are mapped to them.

Each model is a tool's `outputSchema` and its `structuredContent`. The functions below read the
public results of `rag.search`, `rag.ask`, `rag.compute_context`, the vault listing, the folder
outline and a note's stored passages; when those types change, only this module follows. No
pydantic here depends on fastapi, so `ragpg mcp` runs without the server extra.

Every passage names its note as `vault` + `path` and as a `uri` (`ragpg://vault/path`) that
`read_note` and resources/read accept; headings read `Tomatoes › Watering` and `location` says where in
the file (`lines 5-7`, a PDF's `p. 3`, a canvas's card), worded by rag.places as on every surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from rag.errors import InputError
from rag.places import location, shown_heading

if TYPE_CHECKING:
    from rag import AskResponse, ContextResult, SearchItem, SearchResponse
    from rag.notes.browse import VaultOutline
    from rag.retrieval.documents import NoteEntry, NotePassages, Passage
    from rag.retrieval.related import RelatedNotes
    from rag.store.vaults import VaultSummary

URI_SCHEME = "ragpg"
URI_TEMPLATE = "ragpg://{vault}/{+path}"


def note_uri(vault: str, path: str) -> str:
    """`ragpg://vault/path`, the path percent-encoded (spaces, '#', '?', non-ASCII) but its slashes kept."""
    return f"{URI_SCHEME}://{vault}/{quote(path, safe='/')}"


def parse_note_uri(uri: str) -> tuple[str, str]:
    """(vault, path) of a `ragpg://vault/path` URI; InputError for anything else."""
    parts = urlsplit(uri)
    if parts.scheme != URI_SCHEME or not parts.netloc or not parts.path.strip("/") or parts.query or parts.fragment:
        raise InputError(f"not a note URI: {uri[:200]!r} (expected {URI_SCHEME}://<vault>/<path>)")
    return parts.netloc, unquote(parts.path[1:])


_LOCATION = "Where in the file, to cite it by: 'lines 5-7', a PDF's page 'p. 3', a canvas's card 'card \"...\"'."


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Located(_Out):
    vault: str
    path: str = Field(description="The note's path relative to its vault's root.")
    uri: str = Field(description="ragpg://vault/path: for read_note and resources/read.")
    heading: str = Field(description="The section, e.g. 'Tomatoes › Watering'; '' above the first heading.")
    start_line: int | None = Field(description="First line of the passage in the file (1-based).")
    end_line: int | None = Field(description="Last line of the passage in the file (inclusive).")
    location: str | None = Field(description=_LOCATION)


class SearchHit(Located):
    snippet: str
    score: float = Field(description="Ranking score, higher is better; comparable within one search only.")


class NoteFound(_Out):
    vault: str
    path: str
    uri: str
    score: float = Field(description="Its best passage's score, higher is better; comparable within one search only.")
    passages: list[SearchHit] = Field(description="Its best passages, best first.")


class SearchNotesResult(_Out):
    query: str
    notes: list[NoteFound] = Field(description="Best note first, each with its best passages (by note, the "
                                               "default; by passage, the passages grouped); empty when nothing matches.")
    passages: list[SearchHit] = Field(description="Best first, note by note; empty when nothing matches.")


class Source(Located):
    snippet: str


class AskNotesResult(_Out):
    answer: str
    abstained: bool = Field(description="True when the notes do not answer the question (see rule and why).")
    rule: str = Field(description="The rule that decided: 'model' (the calibrated evidence model), 'names_missing', "
                      "'nothing_found', 'llm_declined' or 'only_flagged_text'.")
    why: str = Field(description="The decision in plain words.")
    answered_by: str = Field(description="'llm', 'extractive' (quoted from the notes, no LLM) or 'none'.")
    confidence: str | None = Field(description="'normal' or 'low'; null when abstained.")
    notice: str | None = Field(description="A sentence for the reader, e.g. that the answer quotes the notes.")
    sources: list[Source] = Field(description="The passages the answer cites first, then others drawn on.")


class Citation(Located):
    marker: str = Field(description="The source's marker, e.g. 'S1': the context shows it as [S1].")
    title: str | None
    url: str | None
    chunk_refs: list[str] = Field(description="vault/path#ordinal of each passage cited.")


class ContextPassage(Located):
    ref: str = Field(description="vault/path#ordinal")
    score: float


class GetContextResult(_Out):
    context: str = Field(description="Cited passages under the token budget, ready to put in a prompt.")
    citations: list[Citation]
    used: list[ContextPassage] = Field(description="The passages in the context, in their order there.")
    insufficient: bool = Field(description="True when the notes hold too little for the query.")
    used_tokens: int
    decision: dict[str, Any] = Field(description="How retrieval ran: mode, route, passes, why it stopped.")


class NoteSection(_Out):
    ordinal: int = Field(description="The passage's number in the note (as in a chunk ref vault/path#ordinal).")
    heading: str
    start_line: int | None
    end_line: int | None
    location: str | None = Field(description=_LOCATION)


class NoteText(_Out):
    vault: str
    path: str
    uri: str
    title: str | None
    start_line: int | None = Field(description="The file's line that `text` starts with.")
    end_line: int | None = Field(description="The file's line that `text` ends with.")
    text: str = Field(description="The passages read, laid out as in the file (its blank lines between them).")
    sections: list[NoteSection] = Field(description="The passages in `text`, with their headings and lines.")
    truncated: bool = Field(description="True when more of the note follows (see next_start_line).")
    next_start_line: int | None = Field(description="Where to go on with read_note's start_line; null at the end.")


class ListedNote(_Out):
    uri: str
    vault: str
    path: str
    title: str | None


class VaultInfo(_Out):
    name: str
    documents: int = Field(description="Notes the caller may read.")
    chunks: int
    last_indexed_at: str | None


class VaultList(_Out):
    vaults: list[VaultInfo]


class FolderInfo(_Out):
    folder: str = Field(description="Folder path inside the vault; '' is the vault's root.")
    chunks: int


class FolderList(_Out):
    vault: str
    folders: list[FolderInfo]


# -- from the library's results -------------------------------------------------------------------

class RelatedNote(_Out):
    vault: str
    path: str
    uri: str = Field(description="ragpg://vault/path: for read_note and resources/read.")
    title: str | None
    reasons: list[str] = Field(description="Why it is related: 'links here with …', 'linked from here', "
                                           "'close in meaning'.")


class RelatedNoteList(_Out):
    vault: str
    path: str = Field(description="The note asked about: the path its name resolved to.")
    related: list[RelatedNote] = Field(description="Linked notes first (both ways, then most links), then the "
                                                   "closest in meaning.")


def related_list(found: RelatedNotes) -> RelatedNoteList:
    return RelatedNoteList(vault=found.vault, path=found.source_path, related=[
        RelatedNote(vault=r.vault, path=r.source_path, uri=note_uri(r.vault, r.source_path), title=r.title,
                    reasons=r.reasons) for r in found.related])


def search_result(response: SearchResponse) -> SearchNotesResult:
    def hit(i: SearchItem) -> SearchHit:
        return SearchHit(vault=i.vault, path=i.source_path, uri=note_uri(i.vault, i.source_path),
                         heading=i.heading, start_line=i.start_line, end_line=i.end_line, location=i.location,
                         snippet=i.snippet, score=i.score)

    return SearchNotesResult(
        query=response.query, passages=[hit(i) for i in response.items],
        notes=[NoteFound(vault=n.vault, path=n.source_path, uri=note_uri(n.vault, n.source_path), score=n.score,
                         passages=[hit(i) for i in n.passages]) for n in response.notes])


def ask_result(response: AskResponse) -> AskNotesResult:
    from rag.notes.decision import explanation

    return AskNotesResult(
        answer=response.answer, abstained=response.abstained, rule=response.decision.rule,
        why=explanation(response.decision),
        answered_by=response.answered_by, confidence=response.confidence, notice=response.notice,
        sources=[Source(vault=r.vault, path=r.source_path, uri=note_uri(r.vault, r.source_path),
                        heading=r.heading, start_line=r.start_line, end_line=r.end_line, location=r.location,
                        snippet=r.snippet)
                 for r in response.references])


def context_result(result: ContextResult) -> GetContextResult:
    citations = [Citation(marker=c.marker, vault=c.vault, path=c.source_path,
                          uri=note_uri(c.vault, c.source_path), heading=c.heading,
                          start_line=c.start_line, end_line=c.end_line, location=c.location, title=c.title, url=c.url,
                          chunk_refs=list(c.chunk_refs))
                 for c in result.citations]
    used = [ContextPassage(ref=r.candidate.ref, vault=r.candidate.vault, path=r.candidate.source_path,
                           uri=note_uri(r.candidate.vault, r.candidate.source_path),
                           heading=shown_heading(r.candidate.source_path, r.candidate.heading_path),
                           start_line=r.candidate.start_line, end_line=r.candidate.end_line,
                           location=location(r.candidate.source_path, r.candidate.heading_path,
                                             r.candidate.start_line, r.candidate.end_line),
                           score=round(r.scores.final, 6))
            for r in result.used]
    return GetContextResult(context=result.context, citations=citations, used=used, insufficient=result.insufficient,
                            used_tokens=result.used_tokens, decision=result.decision.model_dump(mode="json"))


def vault_list(summaries: Sequence[VaultSummary]) -> VaultList:
    return VaultList(vaults=[VaultInfo(name=s.name, documents=s.documents, chunks=s.chunks,
                                       last_indexed_at=s.last_indexed_at.isoformat() if s.last_indexed_at else None)
                             for s in summaries])


def folder_list(outline: VaultOutline) -> FolderList:
    return FolderList(vault=outline.vault, folders=[FolderInfo(folder=f.folder, chunks=f.chunks)
                                                    for f in outline.folders])


def note_text(note: NotePassages, max_chars: int) -> NoteText:
    """The note's passages, whole ones only and at least one, while they fit in `max_chars`."""
    kept: list[Passage] = []
    size = 0
    for passage in note.passages:
        if kept and size + len(passage.content) > max_chars:
            break
        kept.append(passage)
        size += len(passage.content)
    rest = note.passages[len(kept):]
    return NoteText(vault=note.vault, path=note.source_path, uri=note_uri(note.vault, note.source_path),
                    title=note.title, start_line=kept[0].start_line, end_line=kept[-1].end_line,
                    text=joined_text(kept),
                    sections=[NoteSection(ordinal=p.ordinal, heading=shown_heading(note.source_path, p.heading_path),
                                          start_line=p.start_line, end_line=p.end_line,
                                          location=location(note.source_path, p.heading_path, p.start_line,
                                                            p.end_line)) for p in kept],
                    truncated=bool(rest), next_start_line=rest[0].start_line if rest else None)


def joined_text(passages: Sequence[Passage]) -> str:
    """The passages as the file lays them out: the blank lines between them restored, an overlap
    (chunking.overlap_bytes) read once."""
    out: list[str] = []
    last_line: int | None = None
    for p in passages:
        text = p.content if p.content.endswith("\n") else p.content + "\n"
        if last_line is not None and p.start_line is not None:
            if p.start_line > last_line:
                out.append("\n" * (p.start_line - last_line - 1))
            else:  # overlapping lines were in the previous passage already
                text = "".join(text.splitlines(keepends=True)[last_line - p.start_line + 1:])
        out.append(text)
        last_line = p.end_line if p.end_line is not None else last_line
    return "".join(out)


def listed_note(entry: NoteEntry) -> ListedNote:
    return ListedNote(uri=note_uri(entry.vault, entry.source_path), vault=entry.vault, path=entry.source_path,
                      title=entry.title)
