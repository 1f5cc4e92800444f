"""`ragpg eval` scores a notes ranking by its first k distinct notes (rag.eval.search.first_notes)."""

from __future__ import annotations

from rag.eval.metrics import source_ranking
from rag.eval.results import EvalHit
from rag.eval.search import first_notes


def test_the_passages_of_the_first_k_notes_are_kept_in_order() -> None:
    pairs = [("a.md", 0), ("a.md", 1), ("b.md", 0), ("a.md", 2), ("c.md", 0), ("b.md", 1), ("d.md", 0)]
    assert first_notes(pairs, 2) == [("a.md", 0), ("a.md", 1), ("b.md", 0), ("a.md", 2)]
    assert first_notes(pairs, 3) == pairs[:6]
    assert first_notes(pairs, 10) == pairs
    assert first_notes([], 5) == []


def test_five_notes_are_in_reach_where_ten_passages_held_three() -> None:
    """The case issue 46 names: one note's many passages crowd the others out of the first ten."""
    pairs = [(f"n{i // 4}.md", i % 4) for i in range(12)] + [("n3.md", 0), ("n4.md", 0), ("n5.md", 0)]
    assert len(source_ranking(EvalHit.from_pairs(pairs[:10]))) == 3
    assert source_ranking(EvalHit.from_pairs(first_notes(pairs, 5))) == ("n0.md", "n1.md", "n2.md", "n3.md", "n4.md")
