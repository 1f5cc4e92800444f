"""Notes-vault answering on the shared pipeline: `ask` (a cited answer) and `search` (ranked passages).

Both run the stages every entry point runs (docs/architecture.md, "ask and search, step by step"):

1. check the arguments; read the question once (`rag.notes.question.read_question`: its terms,
   names, parts, the shape of its answer and K, the passages the answer draws on);
2. scope: vaults (none = every vault the caller may read), the folders the user named (they
   restrict the search), the caller's clearance → one metadata filter (`rag.notes.scope`);
3. retrieve: `rag.retrieval.stage.retrieve_stage` with the notes profile (hybrid SQL, facets,
   Auto-RAG) over that filter — every folder in scope is searched;
4. rank: `rag.retrieval.rank.rank_candidates` with the folder prior as a multiplier (`rag.notes.scope`);
   steps 2-4 and the evidence vault's term statistics are `rag.notes.evidence.gather_evidence`;
5. `ask` then makes one decision (`rag.notes.decision`: rules, then the calibrated model over the
   signals of `rag.notes.signals`) and gives the answer it calls for — from the LLM with the notes
   prompt, or quoted without one (sentences are scored only for a quoted answer or a signal whose
   weight is not 0) — with references. Each stage hands a typed value on (`Question`, `Evidence`,
   an `AnswerDecision`, `Outcome`); `AskTrace` records them all (rag.notes.ask_trace).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag.access import Scope
from rag.arguments import ASK_CHECKS, SEARCH_CHECKS, check_arguments, query_text
from rag.config import NotesSettings
from rag.errors import InputError
from rag.llm import llm_request
from rag.llm_budget import without_llm
from rag.notes import answer as answering
from rag.notes.ask_trace import AskTrace, CitationTrace, KTrace, LLMTrace
from rag.notes.decision import decide_answer
from rag.notes.evidence import Evidence, evidence_vault, gather_evidence, retrieve_notes
from rag.notes.extractive import Sentence
from rag.notes.format import snippet
from rag.notes.question import Question, query_terms, read_question
from rag.notes.results import (
    AskResponse,
    Detail,
    Reference,
    SearchBy,
    SearchItem,
    SearchResponse,
    group_by_note,
)
from rag.notes.scope import prepare_scope, resolve_vaults
from rag.notes.search_floor import below_search_floor
from rag.notes.settings import notes_settings
from rag.runtime import Runtime, default_runtime
from rag.trace_signals import decision_signals, record_signals
from rag.types import RankedChunk

__all__ = ["ABSTAIN_ANSWER", "AskResponse", "Reference", "SearchItem", "SearchResponse", "ask", "resolve_vaults",
           "retrieve_notes", "search"]

log = logging.getLogger(__name__)

ABSTAIN_ANSWER = answering.ABSTAIN_ANSWER


def _names(values: Sequence[str] | None, what: str) -> list[str]:
    out = []
    for v in values or []:
        if not v.strip():
            raise InputError(f"a {what} name is empty")
        out.append(v.strip())
    return list(dict.fromkeys(out))


# -- ask: scope -> ranked passages -> one decision -> answer -> response -----------------------------

@dataclass(frozen=True)
class Outcome:
    """The decision and the answer it led to, with what answering took."""

    response: AskResponse
    sentences_scored: int = 0
    llm: LLMTrace | None = None
    citations: CitationTrace | None = None
    answer_ms: float | None = None


def ask(question: str, *, vaults: Sequence[str] | None = None, folders: Sequence[str] | None = None,
        k: int | None = None, detail: Detail = "normal", debug: bool = False, runtime: Runtime | None = None,
        scope: Scope | None = None, request_id: str | None = None) -> AskResponse:
    """Answer `question` from the user's notes, citing them; never raises for an LLM failure.

    `vaults` (none: every vault the caller may read) and `folders` narrow the search; `k` is how many
    passages the answer draws on (default: chosen from the question and `detail`); `debug` returns the
    typed record of every step (`AskResponse.debug`, an `AskTrace`). Abstaining is an answer too:
    `abstained` is true and `decision.rule` says why.
    """
    check_arguments("ask", {"question": question, "vaults": vaults, "folders": folders, "detail": detail,
                            "debug": debug, "runtime": runtime, "scope": scope, "request_id": request_id}, ASK_CHECKS)
    rt = runtime or default_runtime()
    ns = notes_settings(rt.settings)
    question = query_text(question, rt.settings.retrieval.max_query_chars, "question")
    vault_list, folder_list = _names(vaults, "vault"), _names(folders, "folder")
    q = read_question(question, ns, detail=detail, k=k, user_folders=bool(folder_list))
    with llm_request(rt.settings.llm), rt.tracer.root(
            request_id=request_id or uuid.uuid4().hex, query=q.text, profile=ns.profile, mode="ask") as root:
        started = time.perf_counter()
        evidence = gather_evidence(rt, ns, q.text, vault_list, folder_list, scope or Scope.unrestricted())
        outcome = decide_and_answer(rt, ns, q, evidence, detail)
        trace = _trace(q, detail, k, evidence, outcome, time.perf_counter() - started)
        response = outcome.response
        root.set(abstained=response.abstained, answeredBy=response.answered_by,
                 folderMethod=trace.scope.folders.method if trace.scope else None, topScore=trace.best_score,
                 chunkCount=len(response.references), insufficient=response.abstained,
                 decisionRule=response.decision.rule)
        record_signals(root, decision_signals(evidence.retrieval, timings_ms=trace.timings_ms,
                                              abstained=response.abstained))
    return response.model_copy(update={"debug": trace}) if debug else response


def decide_and_answer(rt: Runtime, ns: NotesSettings, q: Question, evidence: Evidence, detail: Detail) -> Outcome:
    """One decision over the first K passages (`q.k`), then the answer (or the abstention) it calls for."""
    kept = evidence.ranked[:q.k.k]
    started = time.perf_counter()
    scored: list[list[Sentence]] = []

    def sentences() -> list[Sentence]:  # scored once, on first need
        if not scored:
            scored.append(answering.rank_answer_sentences(rt, ns, q, kept, evidence.query_embedding))
        return scored[0]

    vault = evidence_vault(kept)
    best_sentence = None
    if ns.abstain_weights.get("sentence_similarity", 0.0):
        best_sentence = max((x.similarity for x in sentences() if kept[x.passage].candidate.vault == vault),
                            default=0.0)
    decision = decide_answer(q, evidence.ranked if kept else [], evidence.stats, best_sentence, ns)
    if decision.abstain:
        log.info("ask abstained (%s, p=%s) for %d candidates", decision.rule, decision.p_answerable,
                 len(evidence.ranked))
    answered = answering.answer(rt, ns, q, kept, sentences, detail, decision)
    return Outcome(answered.response, len(scored[0]) if scored else 0, answered.llm, answered.citations,
                   (time.perf_counter() - started) * 1000)


def _trace(q: Question, detail: Detail, requested: int | None, evidence: Evidence, outcome: Outcome,
           elapsed_s: float) -> AskTrace:
    timings = dict(evidence.timings_ms)
    if outcome.answer_ms is not None:
        timings["answer_ms"] = outcome.answer_ms
    timings["total_ms"] = elapsed_s * 1000
    kept = evidence.ranked[:q.k.k]
    response = outcome.response
    return AskTrace(
        question=q.text, detail=detail,
        k=KTrace(value=q.k.k, requested=requested, reasons=list(q.k.reasons)),
        scope=evidence.scope, retrieval=evidence.retrieval,
        candidates=[answering.candidate_trace(r) for r in evidence.ranked],
        best_score=kept[0].scores.final if kept else None, sentences_scored=outcome.sentences_scored,
        decision=response.decision, confidence=response.confidence, llm=outcome.llm, citations=outcome.citations,
        timings_ms=timings)


# -- search ---------------------------------------------------------------------------------------

def search(query: str, *, vaults: Sequence[str] | None = None, folders: Sequence[str] | None = None,
           k: int = 10, filters: Mapping[str, Any] | None = None, by: SearchBy = "note",
           runtime: Runtime | None = None, scope: Scope | None = None,
           request_id: str | None = None) -> SearchResponse:
    """The user's notes ranked for `query` by the shared retrieve and rank stages.

    By note (the default) the best `k` distinct notes, each with its best passages
    (`notes.search_passages_per_note`); by passage the best `k` passages. Only passages scoring above
    `notes.search_min_score` count. Folders named here restrict the search to them (and their
    subfolders); `filters` are metadata filters (docs/sql-console.md lists the operators).
    """
    check_arguments("search", {"query": query, "vaults": vaults, "folders": folders, "filters": filters,
                               "runtime": runtime, "scope": scope, "request_id": request_id}, SEARCH_CHECKS)
    rt = runtime or default_runtime()
    ns = notes_settings(rt.settings)
    query = query_text(query, rt.settings.retrieval.max_query_chars, "search query")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= ns.search_k_max:
        raise InputError(f"k must be a whole number between 1 and {ns.search_k_max}, got {k!r}")
    if by not in ("note", "passage"):
        raise InputError(f"by must be 'note' or 'passage', got {by!r}")
    vault_list, folder_list = _names(vaults, "vault"), _names(folders, "folder")
    # A search is the fast path: no LLM (folders weighed by centroid, corrections without one).
    with without_llm(), rt.tracer.root(request_id=request_id or uuid.uuid4().hex, query=query,
                                       profile=ns.profile, mode="search") as root:
        caller = scope or Scope.unrestricted()
        with rt.connection(autocommit=True, scope=caller, read=True) as conn:  # the request's one connection
            sc = prepare_scope(conn, rt, ns, query, vault_list, folder_list, dict(filters) if filters else None,
                               caller, rank_folders=True, match_count=k)
            ranked = retrieve_notes(conn, rt, query, sc)[1] if sc.vaults else []
            if ranked and below_search_floor(conn, query, sc.vaults, caller, ranked, ns.search_floor_similarity):
                ranked = []
        terms = query_terms(query)
        kept = [_search_item(r, terms, ns) for r in ranked if r.scores.final > ns.search_min_score]
        notes = group_by_note(kept, k=k, by=by, passages_per_note=ns.search_passages_per_note)
        items = kept[:k] if by == "passage" else [p for note in notes for p in note.passages]
        root.set(count=len(items), notes=len(notes), topScore=items[0].score if items else None)
    return SearchResponse(query=query, by=by, notes=notes, items=items)


def _search_item(r: RankedChunk, terms: Sequence[str], ns: NotesSettings) -> SearchItem:
    c = r.candidate
    return SearchItem(vault=c.vault, source_path=c.source_path, heading_path=c.heading_path,
                      ordinal=c.ordinal, start_line=c.start_line, end_line=c.end_line,
                      snippet=snippet(c.content, terms, ns.snippet_chars), score=round(r.scores.final, 6))
