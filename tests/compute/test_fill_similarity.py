"""Ranking on complete evidence: a chunk only the lexical leg found is weighed on its true cosine to
the question (one lookup by primary key after the retrieve stage), not on a similarity of 0."""

from __future__ import annotations

import numpy as np
import pytest

from rag.compute import compute_context
from rag.ingest.passage_text import embedding_text
from tests.compute import corpus


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_lexical_only_candidates_get_their_true_cosine(kb):
    rt = kb.runtime()
    result = compute_context(corpus.WEAK_QUERY, vaults=["kb"], profile="narrow_legs", mode="base", runtime=rt)
    lexical_only = [r for r in result.ranked if r.candidate.vector_rank is None]
    assert lexical_only and {r.candidate.source_path for r in lexical_only} <= set(corpus.ZORBLAX)
    question = rt.embedder.embed_query(corpus.WEAK_QUERY)
    for r in lexical_only:
        c = r.candidate
        assert c.lexical_rank is not None  # still reported as found by the lexical leg
        stored_text = embedding_text(c.heading_path, c.content, c.metadata)  # what the index embedded
        expected = cosine(question, rt.embedder.embed_documents([stored_text])[0])
        assert c.similarity == pytest.approx(expected, abs=1e-4)
        assert r.scores.vector == pytest.approx(max(0.0, expected), abs=1e-4)  # and ranking counts it


def test_the_fill_moves_lexical_only_candidates_up(kb):
    rt = kb.runtime()
    filled = compute_context(corpus.WEAK_QUERY, vaults=["kb"], profile="narrow_legs", mode="base", runtime=rt)
    plain = compute_context(corpus.WEAK_QUERY, vaults=["kb"], profile="narrow_legs_unfilled", mode="base",
                            runtime=rt)
    unfilled = {r.candidate.ref: r for r in plain.ranked}
    lexical_only = [r for r in filled.ranked if r.candidate.vector_rank is None]
    assert lexical_only
    assert all(unfilled[r.candidate.ref].candidate.similarity is None for r in lexical_only)
    # same candidates, each lexical-only one scoring at least as high with its cosine counted
    assert {r.candidate.ref for r in filled.ranked} == set(unfilled)
    for r in lexical_only:
        assert r.scores.final > unfilled[r.candidate.ref].scores.final
