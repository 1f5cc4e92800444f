"""`ask` under one LLM deadline, and `search` with no LLM at all (issue 47): against an endpoint that
trickles its reply one byte at a time, `ask` returns within `llm.deadline_s` (folder ranking,
corrections and the answer share it) with a quoted answer that says why; a search never waits on the
model. The real litellm client, the loopback stub."""

from __future__ import annotations

import json
import threading
import time

import pytest

from rag.config import Settings
from rag.llm import import_litellm
from rag.notes.answer import NOTICE_LLM_LATE
from rag.notes.ask import ask, search
from rag.runtime import Runtime
from tests.notes.conftest import answer_prompts, llm_settings, script
from tests.notes.kit import toward
from tests.notes.test_ask import OFF_TOPIC, Q, two_notes
from tests.support.ask_trace import trace_json

WEAK = "When does the alpha thing happen, if at all?"
DEADLINE_S = 2.0
SLACK_S = 8.0  # generous on a loaded 2-core machine; the trickled replies would take minutes


def notes_in_three_folders(notes) -> None:
    """The answer in projects/, and two other folders: the LLM is asked to rank them."""
    two_notes(notes)
    q = notes.query_vector(Q)
    notes.note("work", "meetings/m1.md", [("# Minutes", OFF_TOPIC)], embeddings=[toward(q, 0.3, 4)])
    notes.note("work", "recipes/soup.md", [("# Soup", OFF_TOPIC)], embeddings=[toward(q, 0.3, 5)])


@pytest.fixture
def trickling_runtime(settings: Settings, llm_stub):
    import_litellm()  # once per process, seconds, before any budget's clock (rag.llm.llm_request): not timed here
    llm_stub.trickle_s = 1.0
    llm = llm_settings(llm_stub, deadline_s=DEADLINE_S).model_copy(update={"timeout_s": 30.0})
    rt = Runtime.from_settings(settings.model_copy(update={"llm": llm}), pool_max_size=2)
    yield rt
    rt.close()


@pytest.mark.security
def test_ask_returns_within_the_deadline_and_quotes_with_the_reason(notes, trickling_runtime, llm_stub,
                                                                      notes_config):
    notes_in_three_folders(notes)
    started = time.monotonic()
    resp = ask(Q, debug=True, runtime=trickling_runtime)
    took = time.monotonic() - started
    assert took < DEADLINE_S + SLACK_S, f"ask took {took:.1f}s"
    assert not resp.abstained and resp.answered_by == "extractive" and resp.notice == NOTICE_LLM_LATE
    trace = resp.debug
    assert trace is not None and trace.llm is not None and "llm deadline" in (trace.llm.error or "")
    # the folder ranking (and any correction beside it) waited out the budget; the answer, after
    # them, was not asked at all
    assert trace.scope is not None
    assert any("llm deadline" in n for n in trace.scope.folders.notes), trace.scope.folders
    assert trace.scope.folders.method != "llm"
    assert answer_prompts(llm_stub) == []


def test_search_never_calls_the_llm(notes, trickling_runtime, llm_stub, notes_config):
    notes_in_three_folders(notes)
    started = time.monotonic()
    found = search(Q, runtime=trickling_runtime)
    assert found.items
    assert llm_stub.requests == []
    assert time.monotonic() - started < SLACK_S
    # and ask still uses it (the same runtime): search's "no LLM" does not leak out of the call
    resp = ask(Q, debug=True, runtime=trickling_runtime)
    assert llm_stub.requests and "llm deadline" in json.dumps(trace_json(resp))


def test_folder_ranking_is_asked_while_retrieval_and_its_corrections_run(notes, settings, llm_stub, notes_config):
    """Independent LLM steps share the deadline side by side (issue 47: one after another, an endpoint
    answering after 25 s cost three 20 s timeouts before the quoted answer)."""
    notes_in_three_folders(notes)
    script(llm_stub, folders='["projects"]', answer="Project alpha ships in March [1].")
    llm_stub.delay_s = 1.0
    peak = {"in_flight": 0}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak["in_flight"] = max(peak["in_flight"], llm_stub.in_flight)
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    rt = Runtime.from_settings(settings.model_copy(update={"llm": llm_settings(llm_stub)}), pool_max_size=2)
    try:
        resp = ask(WEAK, debug=True, runtime=rt)
    finally:
        done.set()
        watcher.join(timeout=5)
        rt.close()
    assert trace_json(resp)["retrieval"]["route"] == "correct"  # weak retrieval: HyDE and rewrite were asked
    assert trace_json(resp)["scope"]["folders"]["method"] == "llm"
    # the folder ranking, HyDE and the rewrite were all waiting on the model at once: one wait, not three
    assert peak["in_flight"] == 3, peak
