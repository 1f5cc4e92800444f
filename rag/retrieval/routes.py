"""Auto-RAG routes after the base pass: corrections judged by `score_decision`, forced modes, multi-query.

Each route takes the pass context, the run record and the base candidates and returns the
candidates that go on to ranking; it records its winner and reason on the run (docs/architecture.md,
"The Auto-RAG loop"). Without an LLM the rewrite falls back to pseudo-relevance feedback and
HyDE is skipped, and the decision says so.
"""

from __future__ import annotations

from collections.abc import Callable

from rag.retrieval import autorag
from rag.retrieval.passes import PassSpec
from rag.retrieval.run import PassContext, RetrievalRun
from rag.types import Candidate

PRF_TOP_DOCS = 3
PRF_MAX_TERMS = 6
MULTI_QUERY_COUNT = 3


def _judge(ctx: PassContext, run: RetrievalRun, base: list[Candidate], options: dict[str, list[Candidate]]) -> list[Candidate]:
    """Pick base or the best correction by `score_decision` (rule in rag.retrieval.autorag)."""
    base_score = ctx.set_score(base)
    best: tuple[autorag.Decision, list[Candidate], autorag.SetScore] | None = None
    reasons = []
    for name, items in options.items():
        corrected = ctx.set_score(items)
        d = autorag.score_decision(base_score, corrected, corrected_name=name, margin=ctx.prof.decision_margin)
        reasons.append(d.reason)
        if corrected.count:
            delta = corrected.score - base_score.score
            run.margin = delta if run.margin is None else max(run.margin, delta)
        if d.winner != "base" and (best is None or corrected.score > best[2].score):
            best = (d, items, corrected)
    if best is None:
        run.winner, run.reason = "base", "; ".join(reasons) or "no correction produced results"
        return base
    run.winner, run.reason = best[0].winner, best[0].reason
    return best[1]


def _route_correct(ctx: PassContext, run: RetrievalRun, base: list[Candidate]) -> list[Candidate]:
    options = {}
    # Independent of each other: both are asked at once, within the request's one LLM deadline.
    hyde_doc, rewritten = ctx.llm_texts(["hyde", "rewrite"], run, query=ctx.query)
    if hyde_doc:
        options["hyde"] = ctx.run("hyde", ctx.query, ctx.embed(hyde_doc), run)
    if rewritten:
        options["rewrite"] = ctx.run("rewrite", rewritten, ctx.embed(rewritten), run)
    if not options:
        # A configured LLM that is down degrades to the base pass: the request stays as fast and as
        # good as without Auto-RAG, and the failure is on record (decision `llm_failures`).
        why = " (llm deadline passed)" if run.llm_deadline_passed else ""
        run.winner, run.reason = "base", f"LLM correction failed{why}: base pass used"
        return base
    return _judge(ctx, run, base, options)


def _prf_query(ctx: PassContext, base: list[Candidate]) -> str:
    terms = autorag.prf_expansion_terms(ctx.query, [c.content for c in base[:PRF_TOP_DOCS]], max_terms=PRF_MAX_TERMS)
    return f"{ctx.query} {' '.join(terms)}".strip()


def _route_prf(ctx: PassContext, run: RetrievalRun, base: list[Candidate]) -> list[Candidate]:
    if ctx.rt.llm is None:
        run.notes.append("no LLM configured: rewrite by pseudo-relevance feedback, HyDE skipped")
    expanded = _prf_query(ctx, base)
    if expanded == ctx.query:
        run.winner, run.reason = "base", "no expansion terms found in the base results"
        return base
    return _judge(ctx, run, base, {"rewrite": ctx.run("rewrite", expanded, ctx.embed(expanded), run)})


def _why_no_llm(run: RetrievalRun) -> str:
    if run.llm_deadline_passed:
        return "llm deadline passed"
    return "LLM failed" if run.llm_failures else "no LLM configured"


def _llm_pass(ctx: PassContext, run: RetrievalRun, base: list[Candidate], *, name: str, label: str, prompt: str,
              reason: str, text_of: Callable[[str], str]) -> list[Candidate]:
    """A forced pass that searches with what the LLM wrote for `prompt`: its embedding, and `text_of`
    it on the lexical side. Without an LLM answer, the base pass and why."""
    written = ctx.llm_text(prompt, run, query=ctx.query)
    if not written:
        run.winner, run.reason = "base", f"{label} skipped: {_why_no_llm(run)}"
        return base
    run.winner, run.reason = name, reason
    return ctx.run(name, text_of(written), ctx.embed(written), run)


def _route_hyde(ctx: PassContext, run: RetrievalRun, base: list[Candidate]) -> list[Candidate]:
    return _llm_pass(ctx, run, base, name="hyde", label="HyDE", prompt="hyde", reason="hyde mode forced",
                     text_of=lambda _doc: ctx.query)


def _route_rewrite(ctx: PassContext, run: RetrievalRun, base: list[Candidate]) -> list[Candidate]:
    text = ctx.llm_text("rewrite", run, query=ctx.query)
    if not text:
        run.notes.append("rewrite by pseudo-relevance feedback (" +
                         _why_no_llm(run) + ")")
        text = _prf_query(ctx, base)
    run.winner, run.reason = "rewrite", "rewrite mode forced"
    return ctx.run("rewrite", text, ctx.embed(text), run)


def _route_multi(ctx: PassContext, run: RetrievalRun, base: list[Candidate]) -> list[Candidate]:
    raw = ctx.llm_text("multi_query", run, query=ctx.query, count=MULTI_QUERY_COUNT)
    variants = [ln.strip(" -*\t0123456789.") for ln in (raw or "").splitlines() if ln.strip()][:MULTI_QUERY_COUNT]
    if not variants:
        run.notes.append("multi-query variants from pseudo-relevance feedback")
        variants = [_prf_query(ctx, base)]
    texts = [ctx.query, *[v for v in variants if v and v != ctx.query]]
    found = ctx.search("multi", [PassSpec("multi", t, ctx.embed(t)) for t in texts], run)
    run.multi_query_ran = True
    run.winner, run.reason = "multi", f"{len(texts)} queries fused by reciprocal rank fusion"
    return found


def _route_reverse(ctx: PassContext, run: RetrievalRun, base: list[Candidate]) -> list[Candidate]:
    return _llm_pass(ctx, run, base, name="reverse", label="reverse", prompt="reverse_draft",
                     reason="evidence retrieved for a drafted answer", text_of=lambda draft: f"{ctx.query}\n{draft}")


ROUTES = {"correct": _route_correct, "prf": _route_prf, "hyde": _route_hyde, "rewrite": _route_rewrite,
           "multi": _route_multi, "reverse": _route_reverse}
