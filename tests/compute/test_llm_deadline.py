"""One wall-clock deadline for all the LLM work of a request (`llm.deadline_s`), against an endpoint that
trickles its reply one byte at a time (issue 47: `llm.timeout_s` is per read, so such an endpoint held
a call for minutes). The real litellm client talks to the loopback stub."""

from __future__ import annotations

import contextvars
import threading
import time
from functools import partial

import pytest

from rag import compute_context
from rag.errors import LLMError
from rag.llm import LiteLLM, Message, import_litellm
from rag.llm_budget import (
    DEADLINE_REASON,
    LLMCancelledError,
    LLMDeadlineError,
    llm_cancellation,
    llm_deadline,
    run_together,
)
from tests.compute import corpus
from tests.compute.conftest import llm_settings

DEADLINE_S = 2.0
# Generous on a loaded 2-core machine; the trickled reply would take minutes.
SLACK_S = 8.0
TRICKLE_S = 1.0


def wait_until(condition, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.mark.security
def test_a_trickling_endpoint_cannot_hold_compute_context_past_the_deadline(kb, llm_stub):
    import_litellm()  # once per process, before any budget's clock (rag.llm.llm_request): not timed here
    llm_stub.trickle_s = TRICKLE_S
    rt = kb.runtime(llm=llm_stub, timeout_s=20.0, deadline_s=DEADLINE_S)
    started = time.monotonic()
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=rt)
    took = time.monotonic() - started
    assert took < DEADLINE_S + SLACK_S, f"compute_context took {took:.1f}s"
    d = result.decision
    assert (d.route, d.winner) == ("correct", "base")
    assert d.reason == "LLM correction failed (llm deadline passed): base pass used"
    assert sorted(f.split(":")[0] for f in d.llm_failures) == ["hyde", "rewrite"]
    assert all(DEADLINE_REASON in f for f in d.llm_failures)
    assert result.ranked and not result.insufficient
    # the calls were abandoned for real: the stub saw both connections close mid-reply
    assert wait_until(lambda: llm_stub.trickle_dropped == 2 and llm_stub.trickling == 0), \
        (llm_stub.trickle_dropped, llm_stub.trickling)


def test_hyde_and_rewrite_are_asked_at_once(kb, scripted):
    stub = scripted(hyde=corpus.HYDE_GOOD)
    stub.delay_s = 1.0
    seen_together = threading.Event()

    def watch() -> None:
        if wait_until(lambda: stub.in_flight == 2, timeout_s=30):
            seen_together.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    result = compute_context(corpus.WEAK_QUERY, profile="focused", runtime=kb.runtime(llm=stub))
    watcher.join(timeout=30)
    assert seen_together.is_set(), "HyDE and rewrite were never in flight together"
    assert {p["name"] for p in result.decision.model_dump()["passes"]} >= {"hyde", "rewrite"}
    assert result.decision.llm_failures == []


def test_one_budget_is_shared_by_every_call_of_the_request(llm_stub):
    llm = LiteLLM(llm_settings(llm_stub, deadline_s=60.0))
    llm_stub.delay_s = 1.5
    started = time.monotonic()
    with llm_deadline(1.0):
        first = run_together([lambda: llm.complete([Message("user", "hi")])])[0]
        later = run_together([lambda: llm.complete([Message("user", "again")])])[0]
    assert isinstance(first, LLMDeadlineError) and isinstance(later, LLMDeadlineError)
    assert "had passed" in str(later)  # refused at once, not waited on again
    assert time.monotonic() - started < 1.0 + SLACK_S
    assert len(llm_stub.requests_to("/chat/completions")) == 1


def test_an_inner_deadline_cannot_extend_the_outer_one(llm_stub):
    with llm_deadline(1.0) as outer, llm_deadline(30.0) as inner:
        assert inner.deadline == outer.deadline


def test_a_call_outside_any_request_is_bounded_by_the_setting(llm_stub):
    llm_stub.trickle_s = TRICKLE_S
    llm = LiteLLM(llm_settings(llm_stub, timeout_s=30.0, deadline_s=DEADLINE_S))
    started = time.monotonic()
    with pytest.raises(LLMDeadlineError, match=DEADLINE_REASON):
        llm.complete([Message("user", "hi")])
    assert time.monotonic() - started < DEADLINE_S + SLACK_S


def test_cancelling_the_request_stops_its_call_in_flight(llm_stub):
    llm_stub.trickle_s = TRICKLE_S
    llm = LiteLLM(llm_settings(llm_stub, timeout_s=30.0, deadline_s=60.0))
    outcome: list[object] = []
    with llm_cancellation() as cancellation:
        call = partial(run_together, [lambda: llm.complete([Message("user", "hi")])])
        worker = threading.Thread(target=contextvars.copy_context().run, args=(lambda: outcome.extend(call()),))
        worker.start()
        assert wait_until(lambda: llm_stub.trickling == 1)
        cancellation.cancel()
        worker.join(timeout=SLACK_S)
    assert not worker.is_alive()
    assert isinstance(outcome[0], LLMCancelledError) and isinstance(outcome[0], LLMError)
    assert wait_until(lambda: llm_stub.trickle_dropped == 1)
