"""Over every golden question (help vault, hash embedder): the explanation rendered from the decision
record never contradicts it, and the JSON, the debug trace and `--explain` all carry that one record."""

from __future__ import annotations

import re
from pathlib import Path

from rag.config import load_settings
from rag.eval import load_golden
from rag.notes.ask import ask
from rag.notes.explain import explain_lines
from rag.runtime import Runtime
from tests.eval.conftest import Run
from tests.support.ask_trace import trace_json

GOLDEN = Path(__file__).resolve().parents[2] / "eval" / "golden" / "obsidian-help.yaml"
# What argues for abstaining; beside "answered" only with what outweighed it.
AGAINST = re.compile(r"never appear in the notes|contain only \d+%|no sentence in the best passages|never mention")


def contradictions(decision_line: str, abstained: bool) -> list[str]:
    verdict, _, reasons = decision_line.removeprefix("Decision: ").partition(" — ")
    if abstained != verdict.startswith("not answered"):
        return [f"verdict {verdict!r} for abstained={abstained}"]
    parts = [p for p in reasons.rstrip(".").split("; ") if p]
    if abstained:
        return [p for p in parts if "outweighed by" in p or p.startswith("a sentence of the best passages is close")]
    return [p for p in parts if AGAINST.search(p) and "(outweighed by: " not in p]


def test_no_rendered_explanation_contradicts_its_decision(cli: Run, shared_data: Path) -> None:
    assert cli("vault", "add", "help", shared_data / "obsidian-help")[0] == 0
    assert cli("index", "--quiet")[0] == 0
    rt = Runtime.from_settings(load_settings(), pool_max_size=2)
    rules = set()
    try:
        for case in load_golden(GOLDEN).cases:
            resp = ask(case.query, folders=list(case.folders), debug=True, runtime=rt)
            assert resp.decision is not None and resp.debug is not None
            assert resp.decision.abstain == resp.abstained
            assert trace_json(resp)["decision"]["rule"] == resp.decision.rule  # the trace renders the record
            decided = [line for line in explain_lines(resp.debug) if line.startswith("Decision: ")]
            assert len(decided) == 1
            assert contradictions(decided[0], resp.abstained) == [], (case.id, decided[0])
            rules.add(resp.decision.rule)
    finally:
        rt.close()
    assert {"model", "names_missing"} <= rules  # both rules were exercised
