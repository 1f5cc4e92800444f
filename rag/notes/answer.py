"""The notes workflow's last step: the answer, from the LLM or quoted from the notes, with references.

Without an LLM (or when it fails, or when no passage fits the budget) the answer is the best 1-3
sentences of the passages drawn on (`--detail` brief 1, normal 2, detailed 3 by default), scored by
the embedder the notes were indexed with plus term overlap (`rag.notes.extractive`), each cited;
an LLM that answers never has them scored. With an LLM the
passages are assembled like any context (`rag.context.assemble`, at most
`notes.answer_context_budget_tokens`), each block under the `[File: name.md, Section: ...]` label
the answer is asked to cite (`rag.notes.citations`); an answer that says the notes do not cover the
question is an abstention by the rule `llm_declined`; an extractive answer with nothing to quote
(every sentence flagged as an injection) is one by the rule `only_flagged_text`. References: the
passages the answer cites, then, up to the detail's number of sources, the other passages shown.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag.config import NotesSettings
from rag.context.assemble import assemble_context
from rag.errors import LLMError
from rag.llm import LLM, Message
from rag.llm_budget import LLMDeadlineError
from rag.notes.ask_trace import CandidateTrace, CitationTrace, Detail, FoundBy, LLMTrace
from rag.notes.citations import file_section_header, match_citations
from rag.notes.decision import overruled
from rag.notes.extractive import (
    Sentence,
    extractive_answer,
    favour_parts,
    favour_shape,
    score_terms,
    weigh_by_passage,
)
from rag.notes.format import snippet
from rag.notes.question import Question
from rag.notes.results import AnswerDecision, AnsweredBy, AskResponse, Confidence, Reference
from rag.notes.steps import StepLimits
from rag.prompts import load_prompt
from rag.runtime import Runtime
from rag.types import Candidate, RankedChunk

log = logging.getLogger(__name__)

ABSTAIN_ANSWER = "I could not find this information in the available documents."
NOTICE_NO_LLM = "No language model is configured, so this answer quotes your notes directly."
NOTICE_LLM_FAILED = "The language model could not be reached, so this answer quotes your notes directly."
NOTICE_LLM_LATE = ("The language model did not answer in time (llm.deadline_s), so this answer quotes your notes "
                   "directly.")
NOTICE_NO_ROOM = "The passages were too long to send to the language model, so this answer quotes your notes directly."


def caution() -> str:
    """The request for a cautious answer, put before the question when the evidence is weak."""
    return load_prompt("notes_caution").render() + "\n"


def abstained(decision: AnswerDecision, answered_by: AnsweredBy = "none") -> AskResponse:
    """The abstention answer; when the notes cover the topic but not the thing asked, it says so."""
    text = f"{ABSTAIN_ANSWER} {decision.message}" if decision.message else ABSTAIN_ANSWER
    return AskResponse(answer=text, references=[], abstained=True, answered_by=answered_by, decision=decision)


def found_by(c: Candidate) -> FoundBy:
    legs = [name for name, rank in (("lexical", c.lexical_rank), ("vector", c.vector_rank)) if rank is not None]
    return "both" if len(legs) == 2 else ("lexical" if legs == ["lexical"] else "vector" if legs else "neither")


def candidate_trace(r: RankedChunk) -> CandidateTrace:
    c = r.candidate
    return CandidateTrace(
        rank=r.rank, chunk_id=c.chunk_id, vault=c.vault, path=c.source_path, ordinal=c.ordinal,
        heading=c.heading_path, folder=str((c.metadata or {}).get("folder") or ""),
        folder_prior=r.scores.weights_applied.get("prior", 1.0), found_by=found_by(c),
        vector_rank=c.vector_rank, lexical_rank=c.lexical_rank,
        vector=None if c.similarity is None else round(c.similarity, 6),
        lexical=None if r.scores.lexical is None else round(r.scores.lexical, 6),
        final=round(r.scores.final, 6), lines=(c.start_line, c.end_line), text=c.content)


def _similarity_to(rt: Runtime, query_embedding: Any,
                   cache: dict[str, Any] | None = None) -> Callable[[list[str]], list[float]]:
    """texts -> cosine similarity of each to the question's embedding, with the embedder the notes were
    indexed with; zeros (term matching only) when the embedder fails. `cache` (text -> vector) lets the
    parts of a question reuse the sentence vectors the whole question embedded."""
    query = np.asarray(query_embedding, dtype=np.float64)
    norm = float(np.linalg.norm(query)) or 1.0
    known = cache if cache is not None else {}

    def similarity(texts: list[str]) -> list[float]:
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        try:
            if missing:
                known.update(zip(missing, rt.embedder.embed_sentences(missing), strict=True))
        except Exception as exc:  # noqa: BLE001 - a quoted answer never fails for want of sentence vectors
            log.warning("embedding answer sentences failed, ranking them by their words: %s", exc)
            return [0.0] * len(texts)
        if not texts:
            return []
        vectors = np.asarray([known[t] for t in texts], dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        similarities: list[float] = (vectors @ query / (norms * norm)).tolist()
        return similarities

    return similarity


def rank_answer_sentences(rt: Runtime, ns: NotesSettings, q: Question, kept: Sequence[RankedChunk],
                          query_embedding: Any | None) -> list[Sentence]:
    """Every sentence of the passages drawn on, scored against the question and weighed by its passage.
    `query_embedding` is the one retrieval used (None for a lexical profile: embedded here)."""
    chunks = [r.candidate for r in kept]
    if query_embedding is None:
        query_embedding = rt.embedder.embed_query(q.text)
    vectors: dict[str, Any] = {}
    passage_scores = [r.scores.final for r in kept]

    def scored_against(terms: Sequence[str], embedding: Any) -> list[Sentence]:
        scored = score_terms(terms, chunks, similarity=_similarity_to(rt, embedding, vectors),
                             semantic_weight=ns.extractive_semantic_weight,
                             with_context=ns.extractive_sentence_context)
        return weigh_by_passage(scored, passage_scores)

    weighed = scored_against(q.match_terms, query_embedding)
    shaped = favour_shape(weighed, q.shape, q.wants_steps, ns.extractive_shape_min_share)
    if len(q.parts) < 2 or not weighed:
        return shaped
    by_part = [scored_against(part.match_terms, rt.embedder.embed_query(part.text)) for part in q.parts]
    floor = ns.extractive_min_share_of_best * max(x.score for x in weighed)
    return favour_parts(shaped, by_part, floor)


def _references(chunks: Sequence[Candidate], used: Sequence[int], terms: Sequence[str],
                ns: NotesSettings) -> list[Reference]:
    """The passages something was taken from (every one an LLM cited; a quoted answer quotes at most
    the detail's number of sentences); `terms` choose each snippet's sentence."""
    order = list(dict.fromkeys(used))
    # the stored trail ("# A > ## B"), as SQL and compute_context show it: one heading format everywhere
    return [Reference(vault=c.vault, source_path=c.source_path, heading_path=c.heading_path,
                      ordinal=c.ordinal, start_line=c.start_line, end_line=c.end_line,
                      snippet=snippet(c.content, terms, ns.snippet_chars))
            for c in (chunks[i] for i in order)]


@dataclass(frozen=True)
class Answered:
    """The answer step's result: the response, and the LLM's and the citations' part of the trace."""

    response: AskResponse
    llm: LLMTrace | None = None
    citations: CitationTrace | None = None


def answer(rt: Runtime, ns: NotesSettings, q: Question, kept: Sequence[RankedChunk],
           sentences: Callable[[], list[Sentence]], detail: Detail, decision: AnswerDecision) -> Answered:
    """What the decision calls for: the abstention; or the LLM's answer when one is configured and
    answers; else the passages' best sentences, quoted (`sentences` scores them on first call: an LLM
    that answers never needs them)."""
    if decision.abstain:
        return Answered(abstained(decision))
    band: Confidence = "low" if (decision.p_answerable or 0.0) < ns.abstain_low_confidence else "normal"
    chunks = [r.candidate for r in kept]
    llm_trace: LLMTrace | None = None
    notice = NOTICE_NO_LLM
    if rt.llm is not None:
        reply, llm_trace, notice = _llm_answer(rt.llm, ns, q, kept, band, ns.answer_sources[detail])
        if reply is not None and reply.text is None:
            return Answered(abstained(overruled(decision, "llm_declined"), "llm"), llm_trace)
        if reply is not None and reply.text is not None:
            response = AskResponse(answer=reply.text, references=reply.references, abstained=False,
                                   answered_by="llm", confidence=band, decision=decision)
            return Answered(response, llm_trace, reply.citations)
    text, used = extractive_answer(sentences(), chunks, count=ns.answer_sentences[detail],
                                   min_share_of_best=ns.extractive_min_share_of_best, fallback_chars=ns.snippet_chars,
                                   short_words=ns.extractive_short_sentence_words,
                                   steps=StepLimits(ns.steps_max_items, ns.steps_max_chars) if q.wants_steps else None)
    if not text:  # every sentence the passages hold is flagged as an injection: nothing to quote
        return Answered(abstained(overruled(decision, "only_flagged_text"), "extractive"), llm_trace)
    response = AskResponse(answer=text, references=_references(chunks, used, q.terms, ns), abstained=False,
                           answered_by="extractive", notice=notice, confidence=band, decision=decision)
    return Answered(response, llm_trace, CitationTrace(matched_chunks=[i + 1 for i in used]))


@dataclass(frozen=True)
class _Reply:
    text: str | None  # None: the model said the passages do not answer
    references: list[Reference]
    citations: CitationTrace | None = None


def _llm_answer(llm: LLM, ns: NotesSettings, q: Question, kept: Sequence[RankedChunk], band: Confidence,
                limit: int) -> tuple[_Reply | None, LLMTrace, str]:
    """The LLM's answer over the passages that fit `answer_context_budget_tokens` (assembled like any
    context, each block under its `[File: ..., Section: ...]` label), or None and the notice of the
    quoted answer given instead."""
    assembled = assemble_context(kept, budget_tokens=ns.answer_context_budget_tokens, header=file_section_header)
    shown = [r.candidate for r in sorted((r for b in assembled.blocks for r in b.chunks), key=lambda r: r.rank)]
    trace = LLMTrace(model=llm.model, context_tokens=assembled.used_tokens, passages=len(shown),
                     left_out=len(kept) - len(shown))
    if not shown:
        skipped = f"no passage fits answer_context_budget_tokens ({ns.answer_context_budget_tokens})"
        return None, trace.model_copy(update={"skipped": skipped}), NOTICE_NO_ROOM
    messages = [Message("system", load_prompt("notes_system").render()),
                Message("user", load_prompt("notes_user").render(
                    context=assembled.text, question=q.text, caution=caution() if band == "low" else ""))]
    try:
        text = llm.complete(messages, max_tokens=ns.answer_max_tokens)
    except LLMError as exc:
        log.warning("answering with the LLM failed, quoting the notes instead: %s", exc)
        notice = NOTICE_LLM_LATE if isinstance(exc, LLMDeadlineError) else NOTICE_LLM_FAILED
        return None, trace.model_copy(update={"error": str(exc)}), notice
    if _declined(text):
        return _Reply(None, []), trace, ""
    match = match_citations(text, shown)
    used = match.used or list(range(min(len(shown), limit)))  # cites nothing: the best passages, up to the detail
    return _Reply(text, _references(shown, used, q.terms, ns), match.trace()), trace, ""


# What a model puts before the sentence it was asked to say: markdown emphasis, quotes, a label.
_DRESSING = re.compile(r"^[\s*_>#`\"'“”‘’-]*(?:answer\s*:\s*)?[\s*_`\"'“”‘’]*", re.IGNORECASE)


def _declined(text: str) -> bool:
    """The answer is the sentence the prompt asks for when the passages do not answer: as written, or
    dressed (bold, quoted, "Answer: ...") or contracted ("couldn't")."""
    said = _DRESSING.sub("", " ".join(text.split())).lower().replace("couldn't", "could not")
    return said.startswith(ABSTAIN_ANSWER.rstrip(".").lower())
