"""Langfuse spans of a compute_context request (captured in-process), and the async variant."""

from __future__ import annotations

import asyncio
import json

from rag.compute import acompute_context, compute_context
from rag.trace import ROOT_SPAN, SELECTION_SPAN, STAGE_SPAN
from tests.compute import corpus

META = "langfuse.observation.metadata."


def meta(span) -> dict:
    return {k[len(META):]: json.loads(v) for k, v in span.attributes.items() if k.startswith(META)}


def test_spans_of_a_corrected_request(kb, scripted, capture):
    tracer, exporter = capture
    stub = scripted(hyde=corpus.HYDE_GOOD, rewrite=corpus.WEAK_QUERY)
    result = compute_context(corpus.WEAK_QUERY, profile="focused", request_id="req-42",
                             runtime=kb.runtime(llm=stub, tracer=tracer))
    tracer.flush()
    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.name == ROOT_SPAN]
    assert len(roots) == 1
    root, root_meta = roots[0], meta(roots[0])
    assert root_meta["requestId"] == "req-42"
    assert (root_meta["profile"], root_meta["mode"]) == ("focused", "auto")
    d = result.decision
    assert root_meta["winner"] == d.winner == "hyde"
    assert root_meta["autoTriggered"] is True and root_meta["multiQueryRan"] is False
    assert root_meta["decisionSignature"] == d.decision_signature
    assert root_meta["insufficient"] is False and root_meta["chunkCount"] == len(result.ranked)
    assert root_meta["topScore"] == result.ranked[0].scores.final

    stages = sorted((s for s in spans if s.name == STAGE_SPAN), key=lambda s: s.start_time)
    assert [meta(s)["stage"] for s in stages] == [p.name for p in d.passes] == ["base", "hyde", "rewrite"]
    for span, record in zip(stages, d.passes, strict=True):
        assert meta(span)["count"] == record.count
        assert meta(span)["topSimilarity"] == record.top_similarity
    (selection,) = [s for s in spans if s.name == SELECTION_SPAN]
    assert meta(selection) == {"budget_tokens": 4000, "insufficient": False, "used_tokens": result.used_tokens,
                               "blocks": len(result.citations)}
    for child in (*stages, selection):
        assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id


def test_each_request_gets_its_own_root_and_generated_id(kb, capture):
    tracer, exporter = capture
    rt = kb.runtime(tracer=tracer)
    compute_context(corpus.STRONG_QUERY, runtime=rt)
    compute_context(corpus.STRONG_QUERY, runtime=rt)
    tracer.flush()
    roots = [s for s in exporter.get_finished_spans() if s.name == ROOT_SPAN]
    ids = {meta(s)["requestId"] for s in roots}
    assert len(roots) == 2 and len(ids) == 2 and all(len(i) == 32 for i in ids)
    assert len({s.context.trace_id for s in roots}) == 2


def test_async_variant_does_not_block_the_event_loop(kb, scripted):
    stub = scripted(hyde=corpus.HYDE_GOOD)
    stub.delay_s = 0.6
    rt = kb.runtime(llm=stub)
    compute_context(corpus.STRONG_QUERY, mode="base", runtime=rt)  # warm up the pool outside the timing

    async def main():
        # Behaviour, not wall time: while both requests wait on the slow LLM, the loop keeps
        # running other tasks, and both LLM calls are open at once (they overlap).
        ticks_during_llm = 0
        overlapped = False
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks_during_llm, overlapped
            while not done.is_set():
                await asyncio.sleep(0.01)
                open_calls = stub.in_flight
                ticks_during_llm += open_calls > 0
                overlapped = overlapped or open_calls == 2

        tick = asyncio.create_task(ticker())
        results = await asyncio.gather(*(acompute_context(corpus.STRONG_QUERY, profile="focused", mode="hyde",
                                                          runtime=rt) for _ in range(2)))
        done.set()
        await tick
        return results, ticks_during_llm, overlapped

    results, ticks_during_llm, overlapped = asyncio.run(main())
    assert all(r.decision.winner == "hyde" for r in results)
    assert len(stub.requests_to("/chat/completions")) == 2
    assert overlapped, "the two requests' LLM calls never overlapped"
    assert ticks_during_llm >= 2, "the event loop did not run while the requests waited on the LLM"
