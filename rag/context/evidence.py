"""Evidence packs built from the ranking and the assembled context.

- `evidence_full`: the audit pack — every ranked chunk (used or not) with its address, lines,
  score breakdown, risk flags and notes ("merged with S1#4", "dropped: over budget", ...).
- `evidence_llm`: the compact pack for a model — an alias table `{"S1": "notes/a.md"}` and one
  item per chunk in the context, `{"id": "S1#3", "snippet", "score", "notes"}`.

Snippets are the candidates' text, which the indexer stored secret-masked (rag/secrets.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag.context.assemble import DROP_DUPLICATE, DROP_EMPTY, DROP_OVER_BUDGET, AssembledContext, Block
from rag.obsidian import render_text
from rag.places import shown_heading
from rag.types import Decision, RankedChunk, Record, ScoreBreakdown

SNIPPET_MAX_CHARS = 300  # LLM pack: enough to judge relevance, small enough to keep the pack compact
AUDIT_SNIPPET_MAX_CHARS = 500
SCORE_DIGITS = 4
ELLIPSIS = "…"
DROP_NOTES = {
    DROP_OVER_BUDGET: "dropped: over budget",
    DROP_DUPLICATE: "dropped: duplicate of {of}",
    DROP_EMPTY: "dropped: no text",
}


def snippet(text: str, max_chars: int) -> str:
    """The passage as its reader sees it, whitespace-collapsed, cut at a word boundary when longer
    than `max_chars` (the text was stored secret-masked)."""
    flat = " ".join(render_text(text).split())
    if len(flat) <= max_chars:
        return flat
    cut = flat[: max_chars - len(ELLIPSIS)]
    space = cut.rfind(" ")
    return (cut[:space] if space > max_chars // 2 else cut).rstrip() + ELLIPSIS


class EvidenceItem(Record):
    """One ranked chunk in the audit pack; `id` (`S<n>#<ordinal>`) is set when its text is in the context."""

    ref: str
    id: str | None
    rank: int
    used: bool
    vault: str
    source: str
    ordinal: int
    heading: str  # as the reader sees it (rag.places)
    lines: tuple[int | None, int | None] | None
    scores: ScoreBreakdown
    risk_flags: tuple[str, ...]
    snippet: str
    notes: list[str]


class Source(Record):
    """A document the context quotes, under its marker."""

    vault: str
    source_path: str
    title: str | None
    url: str | None


class EvidenceFull(Record):
    """The audit pack: the decision, the budget, the documents quoted and every ranked chunk."""

    decision: Decision | None
    budget_tokens: int
    used_tokens: int
    insufficient: bool
    sources: dict[str, Source]
    items: list[EvidenceItem]


class LlmItem(Record):
    id: str
    snippet: str
    score: float
    notes: list[str]


class EvidenceLlm(Record):
    """The compact pack for a model: marker → source path, and the chunks in the context."""

    sources: dict[str, str]
    items: list[LlmItem]


class _Ids:
    """Chunk ids `S<n>#<ordinal>` for chunks whose document has a marker in the context."""

    def __init__(self, assembled: AssembledContext) -> None:
        self.markers = {(c.vault, c.source_path): c.marker for c in assembled.citations}

    def of(self, r: RankedChunk) -> str | None:
        marker = self.markers.get((r.candidate.vault, r.candidate.source_path))
        return f"{marker}#{r.candidate.ordinal}" if marker else None

    def label(self, r: RankedChunk) -> str:
        return self.of(r) or r.candidate.ref


def _notes(r: RankedChunk, assembled: AssembledContext, ids: _Ids, by_ref: Mapping[str, RankedChunk]) -> list[str]:
    notes = []
    block: Block | None = assembled.block_of(r.candidate.ref)
    if block is not None and len(block.chunks) > 1:
        others = [ids.label(o) for o in block.chunks if o.candidate.ref != r.candidate.ref]
        notes.append("merged with " + ", ".join(others))
    for d in assembled.dropped:
        if d.chunk.candidate.ref == r.candidate.ref:
            twin = by_ref.get(d.duplicate_of or "")
            notes.append(DROP_NOTES[d.reason].format(of=ids.label(twin) if twin else d.duplicate_of))
    if r.candidate.risk_flags:
        notes.append(f"risk flags: {', '.join(r.candidate.risk_flags)} (risk {r.candidate.risk_score:.2f})")
    return notes


def _full_item(r: RankedChunk, assembled: AssembledContext, ids: _Ids,
               by_ref: Mapping[str, RankedChunk]) -> EvidenceItem:
    c = r.candidate
    used = assembled.block_of(c.ref) is not None
    return EvidenceItem(
        ref=c.ref, id=ids.of(r) if used else None, rank=r.rank, used=used, vault=c.vault, source=c.source_path,
        ordinal=c.ordinal, heading=shown_heading(c.source_path, c.heading_path),
        lines=(c.start_line, c.end_line) if c.start_line is not None else None, scores=r.scores,
        risk_flags=c.risk_flags, snippet=snippet(c.content, AUDIT_SNIPPET_MAX_CHARS),
        notes=_notes(r, assembled, ids, by_ref))


def evidence_full(ranked: Sequence[RankedChunk], assembled: AssembledContext,
                  decision: Decision | None = None) -> EvidenceFull:
    ids, by_ref = _Ids(assembled), {r.candidate.ref: r for r in ranked}
    return EvidenceFull(
        decision=decision, budget_tokens=assembled.budget_tokens, used_tokens=assembled.used_tokens,
        insufficient=assembled.insufficient,
        sources={c.marker: Source(vault=c.vault, source_path=c.source_path, title=c.title, url=c.url)
                 for c in assembled.citations},
        items=[_full_item(r, assembled, ids, by_ref) for r in sorted(ranked, key=lambda x: x.rank)])


def _aliases(assembled: AssembledContext) -> dict[str, str]:
    """Marker → source path; the vault is prefixed only when one path occurs in two vaults."""
    paths = [(c.marker, c.vault, c.source_path) for c in assembled.citations]
    ambiguous = {p for _, v, p in paths if len({v2 for _, v2, p2 in paths if p2 == p}) > 1}
    return {m: (f"{v}/{p}" if p in ambiguous else p) for m, v, p in paths}


def evidence_llm(assembled: AssembledContext, ranked: Sequence[RankedChunk] | None = None) -> EvidenceLlm:
    ids = _Ids(assembled)
    by_ref = {r.candidate.ref: r for r in (ranked or [])}
    used = sorted((r for b in assembled.blocks for r in b.chunks), key=lambda r: r.rank)
    items = [LlmItem(id=ids.label(r), snippet=snippet(r.candidate.content, SNIPPET_MAX_CHARS),
                     score=round(r.scores.final, SCORE_DIGITS), notes=_notes(r, assembled, ids, by_ref))
             for r in used]
    return EvidenceLlm(sources=_aliases(assembled), items=items)
