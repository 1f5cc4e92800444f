"""The answer without a language model: the best-matching sentences of the top passages, each cited.

A sentence scores the share of the question's content terms it contains; the best sentences of
the top passages (at most `extractive_max_sentences`, only sentences sharing a term with the
question, or else the top passage's first sentence) are quoted in reading order (passage rank,
then position), each followed by `[File: name.md, Section: heading]`. Secrets are masked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.notes.format import citation_for
from rag.notes.rerank import query_terms
from rag.notes.settings import NotesSettings
from rag.text import split_sentences, tokenize
from rag.types import Candidate

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:\s.*)?$", re.MULTILINE)
_MIN_WORDS = 3


@dataclass(frozen=True)
class Sentence:
    chunk_index: int
    position: int
    text: str
    score: float


def _sentences(content: str) -> list[str]:
    out = []
    for raw in split_sentences(_HEADING_LINE.sub("", content)):
        text = " ".join(_BULLET.sub("", raw).split())
        if not text or text.startswith(("#", "```", "|")) or len(text.split()) < _MIN_WORDS:
            continue
        out.append(text)
    return out


def score_sentences(question: str, chunks: Sequence[Candidate]) -> list[Sentence]:
    terms = query_terms(question)
    scored = []
    for ci, c in enumerate(chunks):
        for pos, text in enumerate(_sentences(c.content)):
            words = set(tokenize(text))
            share = sum(1 for t in terms if t in words) / len(terms) if terms else 0.0
            scored.append(Sentence(ci, pos, text, share))
    return scored


def extractive_answer(question: str, chunks: Sequence[Candidate], s: NotesSettings) -> tuple[str, list[int]]:
    """The quoted answer and the indexes (into `chunks`) of the passages it quotes."""
    from rag.ingest.guard import mask_secrets

    top = list(chunks[: s.extractive_top_chunks])
    scored = score_sentences(question, top)
    best = sorted((x for x in scored if x.score > 0), key=lambda x: (-x.score, x.chunk_index, x.position))
    chosen = best[: s.extractive_max_sentences]
    if not chosen and scored:
        chosen = [min(scored, key=lambda x: (x.chunk_index, x.position))]
    if not chosen and top:  # only headings or fragments: quote the top passage itself
        text = " ".join(top[0].content.split())[: s.snippet_chars]
        chosen = [Sentence(0, 0, text, 0.0)]
    chosen.sort(key=lambda x: (x.chunk_index, x.position))
    lines = [f"{mask_secrets(x.text)} {citation_for(top[x.chunk_index])}" for x in chosen]
    used = []
    for x in chosen:
        if x.chunk_index not in used:
            used.append(x.chunk_index)
    return "\n".join(lines), used
