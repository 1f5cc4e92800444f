"""Every retrieval setting reaches the SQL call (issue 18): BM25 k1 and b, hnsw.ef_search and the
exact-scan row limit, through compute_context (each profile's retrieval), notes search and ask."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rag.compute import compute_context
from rag.config import RetrievalSettings
from rag.notes.ask import ask, search
from rag.retrieval import retrieve

CHANGED = {"bm25_k1": 1.7, "bm25_b": 0.9, "hnsw_ef_search": 77, "exact_scan_max_rows": 123}
SQL_PARAM = {"bm25_k1": "k1", "bm25_b": "b", "hnsw_ef_search": "ef", "exact_scan_max_rows": "x"}


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The parameters of every match_* query sent (the real query still runs)."""
    calls: list[dict[str, Any]] = []
    real = retrieve.fetch_rows

    def spy(conn: Any, row_type: Any, query: Any, params: dict[str, Any]) -> Any:
        calls.append(dict(params))
        return real(conn, row_type, query, params)

    monkeypatch.setattr(retrieve, "fetch_rows", spy)
    return calls


def changed_runtime(kb):
    settings = kb.settings.model_copy(update={"retrieval": RetrievalSettings(**CHANGED)})
    kb.settings = settings
    return kb.runtime()


@pytest.mark.parametrize("name", sorted(CHANGED))
@pytest.mark.parametrize("profile", ["chat", "notes"])
def test_compute_context_sends_each_setting(kb, sent, name: str, profile: str) -> None:
    rt = changed_runtime(kb)
    assert compute_context("zorblax maintenance schedule", profile=profile, mode="base", runtime=rt).ranked
    carrying = [c for c in sent if SQL_PARAM[name] in c]
    assert carrying, f"no match_* call carried {name}"
    assert all(c[SQL_PARAM[name]] == CHANGED[name] for c in carrying)
    assert RetrievalSettings().model_dump()[name] != CHANGED[name]  # a default would fail the line above


def test_notes_search_and_ask_send_the_settings(kb, sent) -> None:
    rt = changed_runtime(kb)
    search("zorblax maintenance schedule", runtime=rt)
    ask("how often is the zorblax serviced", runtime=rt)
    assert sent
    for name, param in SQL_PARAM.items():
        carrying = [c for c in sent if param in c]
        assert carrying and all(c[param] == CHANGED[name] for c in carrying), name


def test_bm25_parameters_change_the_scores(kb) -> None:
    """Not only sent: k1 and b change what the lexical leg scores."""
    base = kb.runtime()
    before = compute_context("zorblax maintenance schedule", profile="chat", mode="base", runtime=base).ranked
    rt = changed_runtime(kb)
    after = compute_context("zorblax maintenance schedule", profile="chat", mode="base", runtime=rt).ranked
    scores = lambda ranked: {r.candidate.chunk_id: r.candidate.bm25_score for r in ranked}  # noqa: E731
    common = set(scores(before)) & set(scores(after))
    assert common and any(scores(before)[i] != scores(after)[i] for i in common if scores(before)[i])


@pytest.mark.parametrize(("profile", "expected"), [
    ("chat", {"vector": 1.0, "lexical": 1.0}),  # rrf_cut_weights "equal": the ranking does the weighing
    ("notes", {"vector": 0.85, "lexical": 0.10}),  # "fusion": the cut is weighted like the ranking
])
def test_the_rrf_cut_weights_reach_the_hybrid_call(kb, sent, profile: str, expected: dict[str, float]) -> None:
    assert compute_context("zorblax maintenance schedule", profile=profile, mode="base", runtime=kb.runtime()).ranked
    hybrid = [c for c in sent if "w" in c]
    assert hybrid, "no hybrid call was sent"
    for call in hybrid:
        assert json.loads(call["w"]) == pytest.approx(expected)  # the jsonb argument, as sent
