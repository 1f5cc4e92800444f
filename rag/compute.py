"""compute_context: the function a chat backend calls.

Pipeline (DESIGN.md § Orchestrator): embed the query → base pass with the profile's match
function → `is_weak_retrieval` → route (`resolve_auto_mode`) → optional correction passes
(HyDE and rewrite through the LLM, or pseudo-relevance feedback without one; multi-query;
reverse) judged by `score_decision` → rank → assemble the context under the token budget →
citations and evidence packs. Each pass is a `rag_retrieval_stage` span under `rag:root`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag.access import Scope
from rag.arguments import check_context_arguments, query_text
from rag.context.assemble import assemble_context
from rag.context.evidence import evidence_full, evidence_llm, score_dict
from rag.retrieval import autorag
from rag.retrieval.profiles import get_profile
from rag.retrieval.rank import rank_candidates
from rag.retrieval.stage import indexed_model, retrieve_stage
from rag.runtime import Runtime, default_runtime
from rag.store.vaults import resolve_vault_names
from rag.trace_signals import decision_signals, record_signals
from rag.types import RankedChunk

__all__ = ["ContextResult", "acompute_context", "compute_context", "indexed_model"]

@dataclass(frozen=True)
class ContextResult:
    """What `compute_context` returns.

    `used` are the chunks whose text is in `context`, in the order they appear there; `ranked` is
    every ranked candidate, best first (most are left out by the budget or as duplicates).
    """

    context: str
    citations: list[dict[str, Any]]
    ranked: list[RankedChunk]
    decision: dict[str, Any]
    evidence_full: dict[str, Any]
    evidence_llm: dict[str, Any]
    insufficient: bool
    used_tokens: int
    # Wall time of the steps, for benchmarks and logs: embed_ms (the query's embedding), base_pass_ms
    # (embedding + base retrieval pass), retrieval_ms (every pass), assembly_ms (ranking, context,
    # evidence), total_ms. Not part of to_dict: the HTTP contract stays as it is.
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    used: list[RankedChunk] = field(default_factory=list)

    @property
    def chunks(self) -> list[RankedChunk]:
        """Deprecated name of `ranked` (every ranked candidate, not only the chunks used)."""
        return self.ranked

    def to_dict(self) -> dict[str, Any]:
        ranked = [_chunk_dict(r) for r in self.ranked]
        return {
            "context": self.context, "citations": self.citations, "decision": self.decision,
            "used": [_chunk_dict(r) for r in self.used], "ranked": ranked,
            "chunks": ranked,  # deprecated alias of "ranked", kept for existing callers
            "insufficient": self.insufficient,
            "used_tokens": self.used_tokens, "evidence_full": self.evidence_full,
            "evidence_llm": self.evidence_llm,
        }


def _chunk_dict(r: RankedChunk) -> dict[str, Any]:
    c = r.candidate
    return {"rank": r.rank, "ref": c.ref, "vault": c.vault, "source_path": c.source_path, "ordinal": c.ordinal,
            "heading_path": c.heading_path, "start_line": c.start_line, "end_line": c.end_line,
            "scores": score_dict(r.scores)}


def compute_context(query: str, *, vaults: Sequence[str] | None = None, filters: Mapping[str, Any] | None = None,
                    profile: str = "chat", mode: str = "auto", budget_tokens: int = 4000,
                    runtime: Runtime | None = None, scope: Scope | None = None,
                    request_id: str | None = None) -> ContextResult:
    check_context_arguments({"query": query, "vaults": vaults, "filters": filters, "profile": profile, "mode": mode,
                             "budget_tokens": budget_tokens, "runtime": runtime, "scope": scope,
                             "request_id": request_id})  # a wrong type is an InputError naming it
    rt = runtime or default_runtime()
    query = query_text(query, rt.settings.retrieval.max_query_chars)
    prof = get_profile(profile, rt.profiles)
    autorag.resolve_auto_mode(mode, weak=None, llm_available=False, multi_query=False)  # validates mode
    scope = scope or Scope.unrestricted()
    request_id = request_id or uuid.uuid4().hex
    started = time.perf_counter()
    with rt.tracer.root(request_id=request_id, query=query, profile=profile, mode=mode) as root:
        with rt.connection(autocommit=True, scope=scope, read=True) as conn:  # reads only, as the caller
            names = resolve_vault_names(conn, scope.check_vaults(vaults))
            filter_ = scope.restrict_filter(filters, names)
            found = retrieve_stage(conn, rt, prof, query, filter_, mode=mode)
        run, candidates = found.run, found.candidates
        retrieved = time.perf_counter()
        ranked = rank_candidates(candidates, prof)
        with rt.tracer.selection(budget_tokens=budget_tokens) as span:
            assembled = assemble_context(ranked, budget_tokens=budget_tokens)
            span.set(insufficient=assembled.insufficient, used_tokens=assembled.used_tokens,
                     blocks=len(assembled.blocks))
        decision = run.decision(assembled.insufficient)
        root.set(autoTriggered=run.auto_triggered, winner=run.winner, multiQueryRan=run.multi_query_ran,
                 insufficient=assembled.insufficient, decisionSignature=decision["decision_signature"],
                 topScore=ranked[0].scores.final if ranked else None, chunkCount=len(ranked))
        now = time.perf_counter()
        record_signals(root, decision_signals(decision, used_tokens=assembled.used_tokens, timings_ms={
            **run.timings_ms, "retrieval_ms": _ms(started, retrieved), "assembly_ms": _ms(retrieved, now),
            "total_ms": _ms(started, now)}))
    packs = evidence_full(ranked, assembled, decision), evidence_llm(assembled, ranked)
    done = time.perf_counter()
    timings = {**run.timings_ms, "retrieval_ms": _ms(started, retrieved), "assembly_ms": _ms(retrieved, done),
               "total_ms": _ms(started, done)}
    return ContextResult(
        context=assembled.text, citations=[c.to_dict() for c in assembled.citations], ranked=list(ranked),
        used=[r for block in assembled.blocks for r in block.chunks],
        decision=decision, evidence_full=packs[0], evidence_llm=packs[1], insufficient=assembled.insufficient,
        used_tokens=assembled.used_tokens, timings_ms=timings)


def _ms(start: float, end: float) -> float:
    return (end - start) * 1000


async def acompute_context(query: str, **kwargs: Any) -> ContextResult:
    """compute_context for async backends: runs in a worker thread, never blocking the event loop."""
    import functools

    import anyio

    return await anyio.to_thread.run_sync(functools.partial(compute_context, query, **kwargs))
