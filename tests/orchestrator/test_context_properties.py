"""Property test: over random rankings of sliding-window chunks and random budgets, the context
never exceeds the budget, merged blocks are exact source spans, and "cited" is exactly "its text
is in the context"."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.context.assemble import DROP_DUPLICATE, assemble_context
from rag.tokens import count_tokens
from tests.orchestrator.factory import Doc, make_doc, ranked

MIN_WINDOW = 14  # two words of 7 characters: every chunk holds one whole unique word


@st.composite
def documents(draw, index: int) -> Doc:
    n_words = draw(st.integers(4, 50))
    seps = draw(st.lists(st.sampled_from([" ", " ", "\n"]), min_size=n_words, max_size=n_words))
    # Unique, fixed-width words (with a multi-byte letter) so a text occurs at one place only.
    text = "".join(f"d{index}é{i:03d}{sep}" for i, sep in enumerate(seps))
    window = draw(st.integers(MIN_WINDOW, 90))
    stride = draw(st.integers(max(1, window // 5), window))
    return make_doc(f"doc{index}.md", text, window, stride, title=f"Doc {index}")


@st.composite
def scenarios(draw):
    docs = [draw(documents(i)) for i in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):  # an exact copy under another path: duplicate texts
        first = docs[0]
        docs.append(make_doc("copy.md", first.text, first.window, first.stride, title="Copy"))
    pool = [c for d in docs for c in d.chunks]
    chosen = draw(st.lists(st.sampled_from(pool), unique_by=lambda c: c.ref, min_size=0, max_size=len(pool)))
    if draw(st.booleans()):  # counts made at index time, as chunks read from the database carry
        chosen = [replace(c, token_count=count_tokens(c.content)) for c in chosen]
    budget = draw(st.integers(0, 600))
    return docs, chosen, budget


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_context_invariants(scenario):
    docs, chosen, budget = scenario
    by_path = {d.source_path: d for d in docs}
    items = ranked(chosen)
    out = assemble_context(items, budget_tokens=budget)

    # 1. the budget holds, counted on the exact text returned
    assert out.used_tokens == count_tokens(out.text) <= budget

    # 2. every block is the exact source span of its chunks: no repeated, no missing text
    for block in out.blocks:
        doc = by_path[block.citation.source_path]
        start = min(r.candidate.start_byte for r in block.chunks)
        end = max(r.candidate.end_byte for r in block.chunks)
        assert block.text == doc.span(start, end)
        assert block.rendered in out.text

    # 3. blocks of one document never overlap or touch (they would have been merged)
    spans: dict[str, list[tuple[int, int]]] = {}
    for block in out.blocks:
        spans.setdefault(block.citation.source_path, []).append(
            (min(r.candidate.start_byte for r in block.chunks), max(r.candidate.end_byte for r in block.chunks)))
    for ranges in spans.values():
        ranges.sort()
        assert all(a_end < b_start for (_, a_end), (b_start, _) in zip(ranges, ranges[1:], strict=False))

    # 4. citations mirror the blocks; every ranked chunk is either cited or dropped, never both
    cited = [ref for c in out.citations for ref in c.chunk_refs]
    assert [tuple(r.candidate.ref for r in b.chunks) for b in out.blocks] == [c.chunk_refs for c in out.citations]
    dropped = [d.chunk.candidate.ref for d in out.dropped]
    assert sorted(cited + dropped) == sorted(r.candidate.ref for r in items)
    assert len(set(cited)) == len(cited)

    # 5. cited ⟺ the chunk's text is in a block of its own document
    for r in items:
        c = r.candidate
        inside = any(c.content in b.text for b in out.blocks if b.citation.source_path == c.source_path)
        assert inside == (c.ref in cited), c.ref

    # 6. a duplicate is dropped only for an identical, cited text
    cited_texts = {" ".join(r.candidate.content.split()).casefold()
                   for b in out.blocks for r in b.chunks}
    for d in out.dropped:
        if d.reason == DROP_DUPLICATE:
            assert d.duplicate_of in cited
            assert " ".join(d.chunk.candidate.content.split()).casefold() in cited_texts

    # 7. an empty context means nothing could fit on its own
    assert out.insufficient == (out.text == "")
    if out.insufficient:
        assert all(assemble_context([r], budget_tokens=budget).insufficient for r in items)
