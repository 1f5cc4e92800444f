"""compute_context: the function a chat backend calls.

Pipeline (docs/architecture.md, "compute_context, step by step"): embed the query → base pass with the profile's match
function → `is_weak_retrieval` → route (`resolve_auto_mode`) → optional correction passes
(HyDE and rewrite through the LLM, or pseudo-relevance feedback without one; multi-query;
reverse) judged by `score_decision` → rank → assemble the context under the token budget →
citations and evidence packs. Each pass is a `rag_retrieval_stage` span under `rag:root`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from rag.access import Scope
from rag.arguments import check_context_arguments, query_text
from rag.config_profiles import get_profile, load_profiles
from rag.context.assemble import assemble_context
from rag.context.evidence import evidence_full, evidence_llm
from rag.context.result import ContextResult
from rag.llm import llm_request
from rag.retrieval import autorag
from rag.retrieval.rank import rank_candidates
from rag.retrieval.stage import indexed_model, retrieve_stage
from rag.runtime import Runtime, default_runtime
from rag.store.vaults import resolve_vault_names
from rag.trace_signals import decision_signals, record_signals
from rag.types import Mode

__all__ = ["ContextResult", "acompute_context", "compute_context", "indexed_model"]


def compute_context(query: str, *, vaults: Sequence[str] | None = None, filters: Mapping[str, Any] | None = None,
                    profile: str = "chat", mode: Mode = "auto", budget_tokens: int = 4000,
                    runtime: Runtime | None = None, scope: Scope | None = None,
                    request_id: str | None = None) -> ContextResult:
    check_context_arguments({"query": query, "vaults": vaults, "filters": filters, "profile": profile, "mode": mode,
                             "budget_tokens": budget_tokens, "runtime": runtime, "scope": scope,
                             "request_id": request_id})  # a wrong type is an InputError naming it
    rt = runtime or default_runtime()
    query = query_text(query, rt.settings.retrieval.max_query_chars)
    prof = get_profile(profile, load_profiles(rt.settings))
    autorag.resolve_auto_mode(mode, weak=None, llm_available=False, multi_query=False)  # validates mode
    scope = scope or Scope.unrestricted()
    request_id = request_id or uuid.uuid4().hex
    started = time.perf_counter()
    with llm_request(rt.settings.llm, may_call=mode != "base"), \
            rt.tracer.root(request_id=request_id, query=query, profile=profile, mode=mode) as root:
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
                 insufficient=assembled.insufficient, decisionSignature=decision.decision_signature,
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
        context=assembled.text, citations=list(assembled.citations), ranked=list(ranked),
        used=[r for block in assembled.blocks for r in block.chunks],
        decision=decision, evidence_full=packs[0], evidence_llm=packs[1], insufficient=assembled.insufficient,
        used_tokens=assembled.used_tokens, timings_ms=timings)


def _ms(start: float, end: float) -> float:
    return (end - start) * 1000


async def acompute_context(query: str, *, vaults: Sequence[str] | None = None,
                           filters: Mapping[str, Any] | None = None, profile: str = "chat", mode: Mode = "auto",
                           budget_tokens: int = 4000, runtime: Runtime | None = None, scope: Scope | None = None,
                           request_id: str | None = None) -> ContextResult:
    """compute_context for async backends: runs in a worker thread, never blocking the event loop."""
    import functools

    import anyio

    return await anyio.to_thread.run_sync(functools.partial(
        compute_context, query, vaults=vaults, filters=filters, profile=profile, mode=mode,
        budget_tokens=budget_tokens, runtime=runtime, scope=scope, request_id=request_id))
