"""Notes-vault answering: `ask` (a cited answer from the user's notes) and `search` (ranked passages).

`ask` pipeline (DESIGN.md § Notes vault answering):

1. check the question, the detail hint and k; choose K (`rag.notes.rerank.choose_k`);
2. resolve vaults (names; none = every vault the caller may read) and list their folders;
3. select folders (`rag.notes.folders`): the user's folders first, then the rest ranked by the
   LLM or, without one, by folder centroids in SQL; position weights 1.0, 0.9, ... min 0.1;
4. search every folder scope with the first-stage SQL function (`vector`, or `hybrid` by
   setting), 15 candidates a scope, deduplicated, at most 200 in the pool; folders whose position
   weight leaves no passage a chance to reach the final floor are not searched;
5. lexical rerank and blend `(0.7*vector + 0.3*lexical) * folder weight`, vector floor 0.3,
   final floor 0.4, keep K (`rag.notes.rerank`);
6. abstain when nothing survives (no results / nothing over the vector floor / nothing over the
   final floor / best score in the filtered confidence band);
7. answer with the LLM from the notes context (`rag.notes.format`), or extractively without one
   (or when the LLM fails); references are the passages the answer cites, or all when it cites none.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rag import retrieve
from rag.access import Scope
from rag.compute import indexed_model
from rag.errors import InputError, LLMError, NotFoundError
from rag.filters import vault_names as filter_vault_names
from rag.llm import Message
from rag.notes.extractive import extractive_answer
from rag.notes.folders import (
    Folder,
    FolderScope,
    FolderSelection,
    list_folders,
    resolve_user_folders,
    select_folders,
)
from rag.notes.format import (
    file_name,
    format_context,
    match_citations,
    parse_citations,
    section_label,
    snippet,
    strip_chunk_markers,
)
from rag.notes.rerank import (
    Scored,
    choose_k,
    confidence,
    folder_weights,
    query_terms,
    rerank,
    validate_detail,
)
from rag.notes.settings import NotesSettings, notes_settings
from rag.passes import PassSpec, run_pass, similarity_to
from rag.prompts import load_prompt
from rag.runtime import Runtime, default_runtime
from rag.types import Candidate

log = logging.getLogger(__name__)

ABSTAIN_ANSWER = "I could not find this information in the available documents."
ABSTAIN_REASON = "no_relevant_context"
NOTICE_NO_LLM = "No language model is configured, so this answer quotes your notes directly."
NOTICE_LLM_FAILED = "The language model could not be reached, so this answer quotes your notes directly."
CAUTION = ("The passages above match the question only weakly. Answer cautiously: say what the notes do "
           "support, say plainly what they do not, and do not guess.\n\n")


# -- results --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reference:
    vault: str
    rel_path: str
    heading_path: str
    chunk_index: int
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
        return {"vault": self.vault, "rel_path": self.rel_path, "file": file_name(self.rel_path),
                "heading_path": self.heading_path, "chunk_index": self.chunk_index, "lines": self.lines,
                "start_line": self.start_line, "end_line": self.end_line, "snippet": self.snippet}


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
    chunk_index: int
    start_line: int | None
    end_line: int | None
    snippet: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"vault": self.vault, "source_path": self.source_path, "heading_path": self.heading_path,
                "chunk_index": self.chunk_index, "start_line": self.start_line, "end_line": self.end_line,
                "snippet": self.snippet, "score": self.score}


@dataclass(frozen=True)
class SearchResponse:
    query: str
    items: list[SearchItem] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "items": [i.to_dict() for i in self.items]}


# -- shared steps ---------------------------------------------------------------------------------

def _check_text(text: Any, what: str, max_chars: int) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"the {what} is empty: type what you want to find in your notes")
    if len(text) > max_chars:
        raise InputError(f"the {what} is {len(text)} characters long; the limit is {max_chars}")
    return text.strip()


def _names(values: Sequence[str] | str | None, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out = []
    for v in values:
        if not isinstance(v, str) or not v.strip():
            raise InputError(f"a {what} name is empty")
        out.append(v.strip())
    return list(dict.fromkeys(out))


def resolve_vaults(conn: Any, requested: Sequence[str], scope: Scope) -> list[str]:
    """Vault names to search: the requested ones (each must exist), else every vault the scope allows."""
    allowed = scope.check_vaults(list(requested) or None)  # AuthError for a vault outside the scope
    known = retrieve.known_vaults(conn)
    if not known:
        raise NotFoundError("there are no vaults yet: add one with `ragpg vault add`, then run `ragpg index`")
    if requested:
        unknown = [v for v in requested if v not in known]
        if unknown:
            raise NotFoundError(f"unknown vault '{unknown[0]}' (known vaults: {', '.join(known)})")
        return list(requested)
    return [v for v in known if allowed is None or v in allowed]


def _indexed_folders(conn: Any, names: Sequence[str], scope: Scope) -> list[Folder]:
    available = list_folders(conn, names, scope)
    if not available:
        which = f"vault '{names[0]}'" if len(names) == 1 else f"vaults {', '.join(names)}" if names else "any vault"
        raise NotFoundError(f"nothing is indexed in {which} yet: run `ragpg index` first")
    return available


def _scope_filter(vault: str | list[str], base: Mapping[str, Any] | None, scope: Scope) -> dict[str, Any]:
    """A filter for one search: the vault(s) at the top level, the rest with the caller's clearance."""
    restricted = scope.restrict_filter(base or None, None)
    return {"vault": vault if isinstance(vault, str) else {"$in": list(vault)}, **restricted}


def _and(*filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    parts = [dict(f) for f in filters if f]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _first_stage(conn: Any, rt: Runtime, ns: NotesSettings, model: retrieve.EmbeddingModelRef, text: str,
                 embedding: np.ndarray, filter_: dict[str, Any], match_count: int) -> list[Candidate]:
    s = rt.settings.retrieval
    found = run_pass(conn, model, PassSpec("notes", text, embedding), retrieval=ns.first_stage,
                     match_count=match_count, filter_=filter_, similarity_threshold=-1.0, rrf_k=s.rrf_k,
                     weights={"vector": 1.0, "lexical": 1.0}, candidate_count=max(60, match_count))
    missing = [c.chunk_id for c in found if c.similarity is None]
    if missing:  # hybrid: chunks found only by BM25 still need their cosine similarity for the blend
        sims = similarity_to(conn, model, embedding, missing)
        found = [c if c.similarity is not None else replace(c, similarity=sims.get(c.chunk_id, 0.0)) for c in found]
    return found


# -- ask ------------------------------------------------------------------------------------------

def ask(question: str, vaults: Sequence[str] | None = None, folders: Sequence[str] | None = None,
        k: int | None = None, detail: str = "normal", debug: bool = False, *,
        runtime: Runtime | None = None, scope: Scope | None = None, request_id: str | None = None) -> AskResponse:
    """Answer a question from the user's notes, citing them. Never raises for an LLM failure."""
    rt = runtime or default_runtime()
    ns = notes_settings(rt.settings)
    question = _check_text(question, "question", rt.settings.retrieval.max_query_chars)
    validate_detail(detail)
    vault_list, folder_list = _names(vaults, "vault"), _names(folders, "folder")
    k_choice = choose_k(question, detail=detail, k=k, user_folders=bool(folder_list), s=ns)
    scope = scope or Scope.unrestricted()
    trace: dict[str, Any] = {"question": question, "detail": detail,
                             "k": {"value": k_choice.k, "requested": k, "reasons": list(k_choice.reasons)},
                             "first_stage": ns.first_stage, "notes": []}
    with rt.tracer.root(request_id=request_id or uuid.uuid4().hex, query=question, profile="notes",
                        mode="ask") as root:
        response = _ask(rt, ns, question, vault_list, folder_list, k_choice.k, scope, trace)
        root.set(abstained=response.abstained, answeredBy=response.answered_by,
                 folderMethod=trace.get("folders", {}).get("method"), topScore=trace.get("best_score"),
                 chunkCount=len(response.references), insufficient=response.abstained)
    if not debug:
        return response
    return replace(response, debug=trace)


def _ask(rt: Runtime, ns: NotesSettings, question: str, vault_list: list[str], folder_list: list[str], k: int,
         scope: Scope, trace: dict[str, Any]) -> AskResponse:
    # No pooled connection is held across a model call (embedding, folder ranking, answer).
    with rt.connection() as conn:
        names = resolve_vaults(conn, vault_list, scope)
        available = _indexed_folders(conn, names, scope)
        if folder_list:
            resolve_user_folders(folder_list, available)  # an unknown folder fails before any model work
        model = indexed_model(conn, rt)
    embedding = rt.embedder.embed_query(question)

    def centroids() -> list[tuple[str, str, float]]:
        with rt.connection() as conn:
            rows = retrieve.match_folders(conn, model, embedding, vaults=names,
                                          match_count=min(max(len(available), 1), retrieve.SQL_MAX_MATCH_COUNT),
                                          settings=rt.settings.retrieval)
        return [(r.vault, r.folder, r.similarity) for r in rows]

    selection = select_folders(question, folder_list, available, llm=rt.llm, centroids=centroids,
                               weights=lambda n: folder_weights(n, ns), max_tokens=ns.folder_rank_max_tokens)
    trace["vaults"] = names
    trace["folders"] = selection.debug()
    with rt.connection() as conn:
        pool = _gather(conn, rt, ns, model, question, embedding, selection, scope, trace)

    kept = rerank(question, pool, k, ns)
    trace["floors"] = {"vector": ns.vector_floor, "final": ns.final_floor}
    trace["weights"] = {"vector": ns.vector_weight, "lexical": ns.lexical_weight,
                        "final": "(vector_weight * vector + lexical_weight * lexical) * folder_weight"}
    trace["candidates"] = [_candidate_debug(item) for item in sorted(
        pool, key=lambda i: (i.rank is None, i.rank or 0, -i.final, i.candidate.source_path, i.candidate.ordinal))]
    best = kept[0].final if kept else None
    band = confidence(best, ns)
    trace["best_score"] = best
    trace["confidence"] = band

    point = _abstain_point(pool, kept, band)
    if point is not None:
        trace["abstain_point"] = point
        log.info("ask abstained (%s) for %d candidates", point, len(pool))
        return AskResponse(ABSTAIN_ANSWER, [], True, ABSTAIN_REASON, None, "none", None, None)

    chunks = [item.candidate for item in kept]
    answer, used, answered_by, notice = _answer(rt, ns, question, chunks, [i.final for i in kept], band, trace)
    if answered_by == "llm" and _declined(answer):
        trace["abstain_point"] = "llm_found_no_answer"
        return AskResponse(ABSTAIN_ANSWER, [], True, ABSTAIN_REASON, None, "llm", None, None)
    terms = query_terms(question)
    references = [_reference(chunks[i], terms, ns) for i in used]
    return AskResponse(answer, references, False, None, None, answered_by, notice, band)


def _gather(conn: Any, rt: Runtime, ns: NotesSettings, model: retrieve.EmbeddingModelRef, question: str,
            embedding: np.ndarray, selection: FolderSelection, scope: Scope, trace: dict[str, Any]) -> list[Scored]:
    """Search each folder scope in order; dedupe; stop at the pool cap, or at the first folder whose
    position weight leaves no passage a chance to reach the final floor (later ones weigh less)."""
    pool: list[Scored] = []
    seen: set[int] = set()
    searched: list[dict[str, Any]] = []
    best_blend = ns.vector_weight + ns.lexical_weight * (ns.max_lexical + ns.heading_bonus)
    for fs in selection.scopes:
        if len(pool) >= ns.pool_cap:
            trace["notes"].append(f"pool cap {ns.pool_cap} reached; folders not searched from {fs.label} on")
            break
        if best_blend * fs.weight < ns.final_floor:  # weights only decrease from here
            trace["notes"].append(f"from {fs.label} on (weight {fs.weight}) no passage can reach the final floor "
                                  f"{ns.final_floor}; those folders were not searched")
            break
        with rt.tracer.stage("notes", folder=fs.label) as span:
            found = _first_stage(conn, rt, ns, model, question, embedding,
                                 _scope_filter(fs.vault, fs.filter(), scope), ns.candidates_per_scope)
            span.set(count=len(found), folder=fs.label, weight=fs.weight)
        added = 0
        for c in found:
            if c.chunk_id in seen or len(pool) >= ns.pool_cap:
                continue
            seen.add(c.chunk_id)
            pool.append(Scored(c, fs.label, fs.weight, float(c.similarity or 0.0)))
            added += 1
        searched.append({"folder": fs.label, "found": len(found), "added": added})
    trace["folders"]["searched"] = searched
    return pool


def _abstain_point(pool: Sequence[Scored], kept: Sequence[Scored], band: str) -> str | None:
    if not pool:
        return "no_results"
    if all(i.dropped == "below_vector_floor" for i in pool):
        return "below_vector_floor"
    if not kept:
        return "below_final_floor"
    if band == "filtered":
        return "low_confidence"
    return None


def _candidate_debug(item: Scored) -> dict[str, Any]:
    c = item.candidate
    return {"rank": item.rank, "chunk_id": c.chunk_id, "vault": c.vault, "path": c.source_path,
            "chunk_index": c.ordinal, "heading": section_label(c.heading_path), "folder": item.folder,
            "folder_weight": item.folder_weight, "vector": round(item.vector, 6), "lexical": round(item.lexical, 6),
            "final": round(item.final, 6), "dropped": item.dropped, "lines": [c.start_line, c.end_line],
            "text": c.content}


def _answer(rt: Runtime, ns: NotesSettings, question: str, chunks: list[Candidate], scores: list[float], band: str,
            trace: dict[str, Any]) -> tuple[str, list[int], str, str | None]:
    """(answer, indexes of the passages it uses, answered_by, notice)."""
    llm = rt.llm
    if llm is not None:
        messages = [Message("system", load_prompt("notes_system").render()),
                    Message("user", load_prompt("notes_user").render(
                        context=format_context(chunks), question=question,
                        caution=CAUTION if band == "low" else ""))]
        try:
            raw = llm.complete(messages, max_tokens=ns.answer_max_tokens)
        except LLMError as exc:
            trace["llm"] = {"model": llm.model, "error": str(exc)}
            log.warning("answering with the LLM failed, quoting the notes instead: %s", exc)
        else:
            answer = strip_chunk_markers(raw)
            match = match_citations(parse_citations(answer), chunks)
            trace["llm"] = {"model": llm.model}
            trace["citations"] = match.debug()
            used = match.used or list(range(len(chunks)))
            if not match.used:
                trace["citations"]["note"] = "the answer cites no passage; every passage used is referenced"
            return answer, used, "llm", None
    answer, used = extractive_answer(question, chunks, ns, similarity=_similarity_to(rt, question),
                                     passage_scores=scores)
    trace["citations"] = {"matched_chunks": [i + 1 for i in used], "unmatched_citations": [],
                          "matched_by_file_only": []}
    return answer, used, "extractive", NOTICE_NO_LLM if llm is None else NOTICE_LLM_FAILED


def _similarity_to(rt: Runtime, question: str) -> Any:
    """texts -> cosine similarity of each to the question, with the embedder the notes were indexed with;
    None (term matching only) when the embedder fails."""
    query = np.asarray(rt.embedder.embed_query(question), dtype=np.float64)
    norm = float(np.linalg.norm(query)) or 1.0

    def similarity(texts: list[str]) -> list[float]:
        try:
            vectors = np.asarray(rt.embedder.embed_documents(texts), dtype=np.float64)
        except Exception as exc:  # noqa: BLE001 - a quoted answer never fails for want of sentence vectors
            log.warning("embedding answer sentences failed, ranking them by their words: %s", exc)
            return [0.0] * len(texts)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        return (vectors @ query / (norms * norm)).tolist()

    return similarity


def _declined(answer: str) -> bool:
    norm = " ".join(answer.split()).rstrip(".").lower()
    return norm == ABSTAIN_ANSWER.rstrip(".").lower()


def _reference(c: Candidate, terms: Sequence[str], ns: NotesSettings) -> Reference:
    return Reference(c.vault, c.source_path, section_label(c.heading_path), c.ordinal, c.start_line, c.end_line,
                     snippet(c.content, terms, ns.snippet_chars))


# -- search ---------------------------------------------------------------------------------------

def search(query: str, *, vaults: Sequence[str] | None = None, folders: Sequence[str] | None = None,
           k: int = 10, filters: Mapping[str, Any] | None = None, runtime: Runtime | None = None,
           scope: Scope | None = None, request_id: str | None = None) -> SearchResponse:
    """Passages of the user's notes ranked for `query`: the first stage, then the notes lexical blend.

    Folders named here restrict the search to them (and their subfolders); `filters` are metadata
    filters (DESIGN.md § SQL surface). No floors apply: the best `k` passages scoring above
    `search_min_score` are listed.
    """
    rt = runtime or default_runtime()
    ns = notes_settings(rt.settings)
    query = _check_text(query, "search query", rt.settings.retrieval.max_query_chars)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= ns.search_k_max:
        raise InputError(f"k must be a whole number between 1 and {ns.search_k_max}, got {k!r}")
    vault_list, folder_list = _names(vaults, "vault"), _names(folders, "folder")
    scope = scope or Scope.unrestricted()
    with rt.tracer.root(request_id=request_id or uuid.uuid4().hex, query=query, profile="notes",
                        mode="search") as root:
        items = _search(rt, ns, query, vault_list, folder_list, k, dict(filters) if filters else None, scope)
        root.set(count=len(items), topScore=items[0].score if items else None)
    return SearchResponse(query, items)


def _search(rt: Runtime, ns: NotesSettings, query: str, vault_list: list[str], folder_list: list[str], k: int,
            base: dict[str, Any] | None, scope: Scope) -> list[SearchItem]:
    with rt.connection() as conn:
        names = resolve_vaults(conn, vault_list, scope)
        if base and "vault" in base:  # a vault named in the filter narrows the vaults searched
            wanted = filter_vault_names(base)
            base.pop("vault")
            names = [n for n in names if n in wanted]
            if not names:
                return []
        available = _indexed_folders(conn, names, scope)
        scopes: list[FolderScope] = resolve_user_folders(folder_list, available) if folder_list else []
        model = indexed_model(conn, rt)
    embedding = rt.embedder.embed_query(query)
    match_count = min(max(3 * k, ns.candidates_per_scope), retrieve.SQL_MAX_MATCH_COUNT)
    searches = [(s.vault, _and(base, s.filter())) for s in scopes] if scopes else [(names, base)]
    found: dict[int, Candidate] = {}
    with rt.connection() as conn:
        for vault, f in searches:
            with rt.tracer.stage("search") as span:
                rows = _first_stage(conn, rt, ns, model, query, embedding, _scope_filter(vault, f, scope), match_count)
                span.set(count=len(rows))
            for c in rows:
                found.setdefault(c.chunk_id, c)
    pool = [Scored(c, "", 1.0, float(c.similarity or 0.0)) for c in found.values()]
    no_floors = ns.model_copy(update={"vector_floor": -1.0, "final_floor": 0.0})
    ranked = [i for i in rerank(query, pool, k, no_floors) if i.final > ns.search_min_score]
    terms = query_terms(query)
    return [SearchItem(i.candidate.vault, i.candidate.source_path, section_label(i.candidate.heading_path),
                       i.candidate.ordinal, i.candidate.start_line, i.candidate.end_line,
                       snippet(i.candidate.content, terms, ns.snippet_chars), round(i.final, 6)) for i in ranked]
