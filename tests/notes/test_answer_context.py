"""The LLM answer's context is assembled like any context (`rag.context.assemble`): under a token
budget (`notes.answer_context_budget_tokens`), each block under the `[File: X.md, Section: Y]` label
the answer cites it by. Real litellm client, local stub server, real Postgres."""

from __future__ import annotations

import re

from rag.notes.answer import NOTICE_NO_ROOM
from rag.notes.ask import ask
from rag.tokens import count_tokens
from tests.notes.conftest import answer_prompts, script, use_settings
from tests.notes.kit import toward
from tests.support.ask_trace import trace_json

Q = "When does project alpha ship?"
LABEL = re.compile(r"^\[File: (n\d)\.md, Section: Launch plan (\d)\]$", re.MULTILINE)


def long_notes(notes, count: int = 8) -> None:
    """`count` notes of about 120 tokens each, n0 ranked first (closest to the question)."""
    q = notes.query_vector(Q)
    for i in range(count):
        body = f"Project alpha note {i} says it ships soon. " + " ".join(f"detail{i}x{j}" for j in range(25))
        notes.note("work", f"plans/n{i}.md", [(f"# Plans > ## Launch plan {i}", body)],
                   embeddings=[toward(q, 0.9 - 0.01 * i, i)])


def prompt_context(stub) -> str:
    """The notes section of the last answering prompt (between "Notes:" and the citation rule)."""
    prompt = answer_prompts(stub)[-1]
    return prompt.split("Notes:\n\n", 1)[1].split("\n\nCite every statement", 1)[0]


def test_the_prompt_cites_each_passage_by_label_within_the_budget(notes, llm_runtime, llm_stub, monkeypatch):
    long_notes(notes)
    budget = 450  # room for three of the eight passages
    use_settings(monkeypatch, answer_context_budget_tokens=budget)
    script(llm_stub, answer="It ships soon [File: n1.md, Section: Launch plan 1]; see also "
                            "[File: n7.md, Section: Launch plan 7].")
    resp = ask(Q, detail="detailed", debug=True, runtime=llm_runtime)  # k = 8: eight passages drawn on
    assert resp.answered_by == "llm" and trace_json(resp)["k"]["value"] == 8
    context = prompt_context(llm_stub)
    shown = LABEL.findall(context)
    assert 0 < len(shown) < 8 and all(name == f"n{n}" for name, n in shown)
    assert [name for name, _ in shown] == [f"n{i}" for i in range(len(shown))]  # the best ranked fit first
    assert count_tokens(context) == trace_json(resp)["llm"]["context_tokens"] <= budget
    assert trace_json(resp)["llm"]["passages"] == len(shown) and trace_json(resp)["llm"]["left_out"] == 8 - len(shown)
    # every block's text is its passage's, under its own label
    for name, n in shown:
        assert f"[File: {name}.md, Section: Launch plan {n}]\nProject alpha note {n} says it ships soon." in context
    # n7 was left out: the model cannot have seen it, so it is no reference
    assert trace_json(resp)["citations"]["unmatched_citations"] == ["[File: n7.md, Section: Launch plan 7]"]
    assert resp.references[0].source_path == "plans/n1.md"
    assert {r.source_path for r in resp.references} <= {f"plans/{name}.md" for name, _ in shown}


def test_a_larger_budget_shows_every_passage(notes, llm_runtime, llm_stub, monkeypatch):
    long_notes(notes)
    use_settings(monkeypatch, answer_context_budget_tokens=100_000)
    script(llm_stub, answer="Soon [File: n0.md, Section: Launch plan 0].")
    resp = ask(Q, detail="detailed", debug=True, runtime=llm_runtime)
    assert len(LABEL.findall(prompt_context(llm_stub))) == 8 and trace_json(resp)["llm"]["left_out"] == 0


def test_when_no_passage_fits_the_answer_quotes_the_notes(notes, llm_runtime, llm_stub, monkeypatch):
    long_notes(notes, count=3)
    use_settings(monkeypatch, answer_context_budget_tokens=10)
    script(llm_stub, answer="never asked")
    resp = ask(Q, debug=True, runtime=llm_runtime)
    assert answer_prompts(llm_stub) == []  # no answering request was sent
    assert resp.answered_by == "extractive" and resp.notice == NOTICE_NO_ROOM and not resp.abstained
    assert "answer_context_budget_tokens (10)" in trace_json(resp)["llm"]["skipped"]
    assert re.search(r"\[File: n\d\.md, Section: Launch plan \d\]$", resp.answer.splitlines()[0])
