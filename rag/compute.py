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

import numpy as np

from rag import autorag, retrieve
from rag.access import Scope
from rag.context import assemble_context
from rag.errors import InputError, LLMError, NotFoundError
from rag.evidence import evidence_full, evidence_llm, score_dict
from rag.llm import Message
from rag.passes import PassSpec, run_multi_pass, run_pass, similarity_to
from rag.profiles import Profile, get_profile
from rag.prompts import load_prompt
from rag.rank import rank_candidates
from rag.runtime import Runtime, default_runtime
from rag.trace import decision_signature
from rag.types import Candidate, RankedChunk
from rag.vaults import resolve_vault_names

PRF_TOP_DOCS = 3
PRF_MAX_TERMS = 6
MULTI_QUERY_COUNT = 3
LLM_MAX_TOKENS = 300


@dataclass(frozen=True)
class ContextResult:
    context: str
    citations: list[dict[str, Any]]
    chunks: list[RankedChunk]
    decision: dict[str, Any]
    evidence_full: dict[str, Any]
    evidence_llm: dict[str, Any]
    insufficient: bool
    used_tokens: int
    # Wall time of the steps, for benchmarks and logs: embed_ms (the query's embedding), base_pass_ms
    # (embedding + base retrieval pass), retrieval_ms (every pass), assembly_ms (ranking, context,
    # evidence), total_ms. Not part of to_dict: the HTTP contract stays as it is.
    timings_ms: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": self.context, "citations": self.citations, "decision": self.decision,
            "chunks": [_chunk_dict(r) for r in self.chunks], "insufficient": self.insufficient,
            "used_tokens": self.used_tokens, "evidence_full": self.evidence_full,
            "evidence_llm": self.evidence_llm,
        }


def _chunk_dict(r: RankedChunk) -> dict[str, Any]:
    c = r.candidate
    return {"rank": r.rank, "ref": c.ref, "vault": c.vault, "source_path": c.source_path, "ordinal": c.ordinal,
            "heading_path": c.heading_path, "start_line": c.start_line, "end_line": c.end_line,
            "scores": score_dict(r.scores)}


@dataclass
class _Run:
    """Mutable record of one request's decision path (becomes `decision`)."""

    mode: str
    route: str = "base"
    weak: autorag.WeakCheck | None = None
    winner: str = "base"
    reason: str = "base pass used"
    passes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    llm_failures: list[str] = field(default_factory=list)
    multi_query_ran: bool = False
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def auto_triggered(self) -> bool:
        return self.mode == "auto" and self.route not in ("base", "multi")

    def path(self) -> list[str]:
        return [self.mode, self.route, *[p["name"] for p in self.passes], self.winner]


def validate_request(query: str, budget_tokens: int, max_query_chars: int) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InputError("query is empty")
    if len(query) > max_query_chars:
        raise InputError(f"query is {len(query)} characters; the limit is {max_query_chars}")
    if budget_tokens < 0:
        raise InputError(f"budget_tokens must be ≥ 0, got {budget_tokens}")
    return query.strip()


def compute_context(query: str, *, vaults: Sequence[str] | None = None, filters: Mapping[str, Any] | None = None,
                    profile: str = "chat", mode: str = "auto", budget_tokens: int = 4000,
                    runtime: Runtime | None = None, scope: Scope | None = None,
                    request_id: str | None = None) -> ContextResult:
    rt = runtime or default_runtime()
    query = validate_request(query, budget_tokens, rt.settings.retrieval.max_query_chars)
    prof = get_profile(profile, rt.profiles)
    autorag.resolve_auto_mode(mode, weak=None, llm_available=False, multi_query=False)  # validates mode
    scope = scope or Scope.unrestricted()
    request_id = request_id or uuid.uuid4().hex
    started = time.perf_counter()
    with rt.tracer.root(request_id=request_id, query=query, profile=profile, mode=mode) as root:
        with rt.connection(autocommit=True) as conn:  # reads only
            names = resolve_vault_names(conn, scope.check_vaults(vaults))
            filter_ = scope.restrict_filter(filters, names)
            run = _Run(mode=mode)
            candidates = _retrieve(conn, rt, prof, query, filter_, run)
        retrieved = time.perf_counter()
        ranked = rank_candidates(candidates, prof)
        with rt.tracer.selection(budget_tokens=budget_tokens) as span:
            assembled = assemble_context(ranked, budget_tokens=budget_tokens)
            span.set(insufficient=assembled.insufficient, used_tokens=assembled.used_tokens,
                     blocks=len(assembled.blocks))
        decision = _decision_dict(run, assembled.insufficient)
        root.set(autoTriggered=run.auto_triggered, winner=run.winner, multiQueryRan=run.multi_query_ran,
                 insufficient=assembled.insufficient, decisionSignature=decision["decision_signature"],
                 topScore=ranked[0].scores.final if ranked else None, chunkCount=len(ranked))
    packs = evidence_full(ranked, assembled, decision), evidence_llm(assembled, ranked)
    done = time.perf_counter()
    timings = {**run.timings_ms, "retrieval_ms": _ms(started, retrieved), "assembly_ms": _ms(retrieved, done),
               "total_ms": _ms(started, done)}
    return ContextResult(
        context=assembled.text, citations=[c.to_dict() for c in assembled.citations], chunks=list(ranked),
        decision=decision, evidence_full=packs[0], evidence_llm=packs[1], insufficient=assembled.insufficient,
        used_tokens=assembled.used_tokens, timings_ms=timings)


def _ms(start: float, end: float) -> float:
    return (end - start) * 1000


async def acompute_context(query: str, **kwargs: Any) -> ContextResult:
    """compute_context for async backends: runs in a worker thread, never blocking the event loop."""
    import functools

    import anyio

    return await anyio.to_thread.run_sync(functools.partial(compute_context, query, **kwargs))


# -- retrieval and the decision tree ------------------------------------------------------------

def indexed_model(conn, rt: Runtime) -> retrieve.EmbeddingModelRef:
    """The configured embedding model's registration; it exists once something was indexed with it."""
    model = retrieve.get_model(conn, rt.embedder.provider, rt.embedder.model)
    if model is None:
        raise NotFoundError(f"nothing is indexed with the embedding model {rt.embedder.provider}/"
                            f"{rt.embedder.model} yet: run `ragpg index`")
    return model


def _retrieve(conn, rt: Runtime, prof: Profile, query: str, filter_: dict[str, Any], run: _Run) -> list[Candidate]:
    model = indexed_model(conn, rt)
    started = time.perf_counter()
    query_embedding = rt.embedder.embed_query(query) if prof.retrieval != "lexical" else None
    run.timings_ms["embed_ms"] = _ms(started, time.perf_counter())
    ctx = _PassContext(conn, rt, prof, model, filter_, query, query_embedding)
    llm_available = rt.llm is not None
    forced = run.mode != "auto"
    base: list[Candidate] = []
    if not forced or run.mode == "base":
        base = ctx.run("base", query, query_embedding, run)
        run.timings_ms["base_pass_ms"] = _ms(started, time.perf_counter())
        run.weak = autorag.is_weak_retrieval(
            [c.similarity for c in base] if prof.retrieval != "lexical" else [1.0] * len(base),
            similarity_threshold=prof.similarity_threshold, min_matches=prof.min_matches,
            density_min_share=prof.density_min_share, flat_spread_max=prof.flat_spread_max, top_k=prof.match_count)
    run.route = autorag.resolve_auto_mode(run.mode, weak=run.weak.weak if run.weak else None,
                                          llm_available=llm_available, multi_query=prof.multi_query)
    if run.route == "base":
        run.reason = "retrieval was strong" if run.mode == "auto" else "base mode forced"
        return base
    if forced:
        base = base or ctx.run("base", query, query_embedding, run)
    return _ROUTES[run.route](ctx, run, base)


@dataclass
class _PassContext:
    conn: Any
    rt: Runtime
    prof: Profile
    model: retrieve.EmbeddingModelRef
    filter_: dict[str, Any]
    query: str
    query_embedding: np.ndarray | None

    def run(self, name: str, text: str, embedding: np.ndarray | None, run: _Run) -> list[Candidate]:
        p, s = self.prof, self.rt.settings.retrieval
        with self.rt.tracer.stage(name) as span:
            found = run_pass(self.conn, self.model, PassSpec(name, text, embedding), retrieval=p.retrieval,
                             match_count=p.match_count, filter_=self.filter_, similarity_threshold=-1.0,
                             rrf_k=s.rrf_k, weights={"vector": p.w_cosine, "lexical": p.w_bm25},
                             candidate_count=max(p.candidates_vector, p.candidates_lexical))
            top = max((c.similarity for c in found if c.similarity is not None), default=None)
            span.set(count=len(found), topSimilarity=top)
        run.passes.append({"name": name, "count": len(found), "top_similarity": top})
        return found

    def embed(self, text: str) -> np.ndarray | None:
        return self.rt.embedder.embed_query(text) if self.prof.retrieval != "lexical" else None

    def llm_text(self, prompt: str, run: _Run, **values: Any) -> str | None:
        llm = self.rt.llm
        if llm is None:
            return None
        if run.llm_failures:  # it already failed in this request: a down LLM must not cost a timeout per call
            run.notes.append(f"{prompt}: skipped after an earlier LLM failure")
            return None
        try:
            return llm.complete([Message("user", load_prompt(prompt).render(**values))], max_tokens=LLM_MAX_TOKENS)
        except LLMError as exc:
            run.llm_failures.append(f"{prompt}: {exc}")
            return None

    def set_score(self, items: Sequence[Candidate]) -> autorag.SetScore:
        sims: dict[int, float] = {}
        if self.query_embedding is not None:
            sims = similarity_to(self.conn, self.model, self.query_embedding, [c.chunk_id for c in items])
        return autorag.score_result_set([(sims.get(c.chunk_id), c.content) for c in items], self.query,
                                        top_k=self.prof.match_count)


def _judge(ctx: _PassContext, run: _Run, base: list[Candidate], options: dict[str, list[Candidate]]) -> list[Candidate]:
    """Pick base or the best correction by `score_decision` (rule in rag.autorag)."""
    base_score = ctx.set_score(base)
    best: tuple[autorag.Decision, list[Candidate]] | None = None
    reasons = []
    for name, items in options.items():
        d = autorag.score_decision(base_score, ctx.set_score(items), corrected_name=name,
                                  margin=ctx.prof.decision_margin)
        reasons.append(d.reason)
        if d.winner != "base" and (best is None or d.corrected.score > best[0].corrected.score):
            best = (d, items)
    if best is None:
        run.winner, run.reason = "base", "; ".join(reasons) or "no correction produced results"
        return base
    run.winner, run.reason = best[0].winner, best[0].reason
    return best[1]


def _route_correct(ctx: _PassContext, run: _Run, base: list[Candidate]) -> list[Candidate]:
    options = {}
    hyde_doc = ctx.llm_text("hyde", run, query=ctx.query)
    if hyde_doc:
        options["hyde"] = ctx.run("hyde", ctx.query, ctx.embed(hyde_doc), run)
    rewritten = ctx.llm_text("rewrite", run, query=ctx.query)
    if rewritten:
        options["rewrite"] = ctx.run("rewrite", rewritten, ctx.embed(rewritten), run)
    if not options:
        # A configured LLM that is down degrades to the base pass: the request stays as fast and as
        # good as without Auto-RAG, and the failure is on record (decision `llm_failures`).
        run.winner, run.reason = "base", "LLM correction failed: base pass used"
        return base
    return _judge(ctx, run, base, options)


def _prf_query(ctx: _PassContext, base: list[Candidate]) -> str:
    terms = autorag.prf_expansion_terms(ctx.query, [c.content for c in base[:PRF_TOP_DOCS]], max_terms=PRF_MAX_TERMS)
    return f"{ctx.query} {' '.join(terms)}".strip()


def _route_prf(ctx: _PassContext, run: _Run, base: list[Candidate]) -> list[Candidate]:
    if ctx.rt.llm is None:
        run.notes.append("no LLM configured: rewrite by pseudo-relevance feedback, HyDE skipped")
    expanded = _prf_query(ctx, base)
    if expanded == ctx.query:
        run.winner, run.reason = "base", "no expansion terms found in the base results"
        return base
    return _judge(ctx, run, base, {"rewrite": ctx.run("rewrite", expanded, ctx.embed(expanded), run)})


def _route_hyde(ctx: _PassContext, run: _Run, base: list[Candidate]) -> list[Candidate]:
    doc = ctx.llm_text("hyde", run, query=ctx.query)
    if not doc:
        run.winner = "base"
        run.reason = "HyDE skipped: " + ("LLM failed" if run.llm_failures else "no LLM configured")
        return base
    run.winner, run.reason = "hyde", "hyde mode forced"
    return ctx.run("hyde", ctx.query, ctx.embed(doc), run)


def _route_rewrite(ctx: _PassContext, run: _Run, base: list[Candidate]) -> list[Candidate]:
    text = ctx.llm_text("rewrite", run, query=ctx.query)
    if not text:
        run.notes.append("rewrite by pseudo-relevance feedback (" +
                         ("LLM failed" if run.llm_failures else "no LLM configured") + ")")
        text = _prf_query(ctx, base)
    run.winner, run.reason = "rewrite", "rewrite mode forced"
    return ctx.run("rewrite", text, ctx.embed(text), run)


def _route_multi(ctx: _PassContext, run: _Run, base: list[Candidate]) -> list[Candidate]:
    raw = ctx.llm_text("multi_query", run, query=ctx.query, count=MULTI_QUERY_COUNT)
    variants = [ln.strip(" -*\t0123456789.") for ln in (raw or "").splitlines() if ln.strip()][:MULTI_QUERY_COUNT]
    if not variants:
        run.notes.append("multi-query variants from pseudo-relevance feedback")
        variants = [_prf_query(ctx, base)]
    texts = [ctx.query, *[v for v in variants if v and v != ctx.query]]
    specs = [PassSpec("multi", t, ctx.embed(t)) for t in texts]
    p, s = ctx.prof, ctx.rt.settings.retrieval
    with ctx.rt.tracer.stage("multi") as span:
        if ctx.prof.retrieval == "lexical" or any(sp.embedding is None for sp in specs):
            found = run_pass(ctx.conn, ctx.model, PassSpec("multi", " ".join(texts), None), retrieval="lexical",
                             match_count=p.match_count, filter_=ctx.filter_, similarity_threshold=-1.0,
                             rrf_k=s.rrf_k, weights={}, candidate_count=p.candidates_lexical)
        else:
            found = run_multi_pass(ctx.conn, ctx.model, specs, match_count=p.match_count, filter_=ctx.filter_,
                                   similarity_threshold=-1.0, rrf_k=s.rrf_k,
                                   weights={"vector": p.w_cosine, "lexical": p.w_bm25},
                                   candidate_count=max(p.candidates_vector, p.candidates_lexical))
        span.set(count=len(found), queries=len(texts))
    run.passes.append({"name": "multi", "count": len(found), "queries": len(texts)})
    run.multi_query_ran = True
    run.winner, run.reason = "multi", f"{len(texts)} queries fused by reciprocal rank fusion"
    return found


def _route_reverse(ctx: _PassContext, run: _Run, base: list[Candidate]) -> list[Candidate]:
    draft = ctx.llm_text("reverse_draft", run, query=ctx.query)
    if not draft:
        run.winner = "base"
        run.reason = "reverse skipped: " + ("LLM failed" if run.llm_failures else "no LLM configured")
        return base
    run.winner, run.reason = "reverse", "evidence retrieved for a drafted answer"
    return ctx.run("reverse", f"{ctx.query}\n{draft}", ctx.embed(draft), run)


_ROUTES = {"correct": _route_correct, "prf": _route_prf, "hyde": _route_hyde, "rewrite": _route_rewrite,
           "multi": _route_multi, "reverse": _route_reverse}


def _decision_dict(run: _Run, insufficient: bool) -> dict[str, Any]:
    weak = run.weak
    return {
        "mode": run.mode, "route": run.route, "auto_triggered": run.auto_triggered,
        "weak": weak.weak if weak else None, "weak_signals": list(weak.signals) if weak else [],
        "top_similarity": weak.top_similarity if weak else None,
        "share_above_threshold": weak.share_above_threshold if weak else None,
        "winner": run.winner, "reason": run.reason, "passes": run.passes, "notes": run.notes,
        "llm_failures": run.llm_failures, "multi_query_ran": run.multi_query_ran, "insufficient": insufficient,
        "decision_signature": decision_signature(run.path()),
    }
